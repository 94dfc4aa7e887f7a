import { describe, expect, it } from 'vitest';
import {
  DecodeError,
  HandlerError,
  Ring,
  SLOT,
  SLOT_HEADER_SIZE,
  SlotFlag,
  StateLoadError,
  StateTableFullError,
  TURN_ERROR,
  decodeTurnError,
  encodeTurnError,
  ringBytes,
} from '../src/entries/internal.ts';
import { errorOfReply } from '../src/reply-error.ts';

function roundTrip(room: number, code: number, fields: Array<string | number>) {
  const u8 = new Uint8Array(room + 8);
  const dv = new DataView(u8.buffer);
  const n = encodeTurnError(u8, dv, 4, room, code, fields);
  expect(n).toBeLessThanOrEqual(room);
  return decodeTurnError(u8, dv, 4, 4 + n);
}

describe('turn errors on the wire (code and fields)', () => {
  it('a code with its fields reads back as written', () => {
    expect(roundTrip(200, TURN_ERROR.STATE_LOAD, [17, 'cannot load ✓'])).toEqual({
      code: TURN_ERROR.STATE_LOAD,
      fields: [17, 'cannot load ✓'],
    });
  });

  it('fits the smallest slot (16 payload bytes): numbers whole, text cut with a mark on a character boundary', () => {
    expect(roundTrip(16, TURN_ERROR.STATE_TABLE_FULL, [65536])).toEqual({
      code: TURN_ERROR.STATE_TABLE_FULL,
      fields: [65536],
    });
    const long = `${'é'.repeat(100)}`;
    const r = roundTrip(60, TURN_ERROR.HANDLER, [long]) as unknown as { fields: string[] };
    expect(r.fields[0]).toMatch(/^é+… \[cut to fit slot\]$/);
    const tiny = roundTrip(16, TURN_ERROR.STATE_LOAD, [3, long]) as unknown as { fields: Array<string | number> };
    expect(tiny.fields[0]).toBe(3);
    expect(typeof tiny.fields[1]).toBe('string');
  });

  it('a bare msgpack str is no error payload (no backend writes one); garbage is undefined, never a throw', () => {
    const hello = [0xa5, 0x68, 0x65, 0x6c, 0x6c, 0x6f];
    for (const bad of [hello, [0xc1], [0x92], [0x92, 0x01], [0x92, 0x01, 0x91, 0xcb, 0, 0], [0x92, 0xff, 0x90]]) {
      const b = new Uint8Array(bad);
      expect(decodeTurnError(b, new DataView(b.buffer), 0, b.length)).toBeUndefined();
    }
  });
});

describe('the host builds the typed error from a reply slot', () => {
  it(
    "the CUDA runtime's bytes for a full table (reply.cuh rg_reply_code1: [3, [maxActors]]) are " +
      'StateTableFullError',
    () => {
      const sab = new SharedArrayBuffer(ringBytes(2, 64));
      const ring = Ring.format(sab, 0, 2, 64);
      const slot = ring.slotAt(0);
      const bytes = [
        0x92,
        TURN_ERROR.STATE_TABLE_FULL,
        0x91,
        0xcb,
        ...new Uint8Array(new Float64Array([4096]).buffer).reverse(),
      ];
      ring.u8.set(bytes, slot + SLOT_HEADER_SIZE);
      ring.dv.setUint32(slot + SLOT.length, bytes.length, true);
      ring.dv.setUint32(slot + SLOT.corr, 7, true);
      const loads = { byId: () => undefined };
      const e = errorOfReply(ring, slot, SlotFlag.REPLY | SlotFlag.REJECTED, 'Account', 'deposit', loads);
      expect(e).toBeInstanceOf(StateTableFullError);
      expect(e).toMatchObject({ code: 'STATE_TABLE_FULL', maxActors: 4096 });
    },
  );

  /** A reply slot holding `bytes` as its payload (corr 7: an ask's). */
  function replySlot(bytes: readonly number[]) {
    const ring = Ring.format(new SharedArrayBuffer(ringBytes(2, 128)), 0, 2, 128);
    const slot = ring.slotAt(0);
    ring.u8.set(bytes, slot + SLOT_HEADER_SIZE);
    ring.dv.setUint32(slot + SLOT.length, bytes.length, true);
    ring.dv.setUint32(slot + SLOT.corr, 7, true);
    return { ring, slot };
  }
  const str = (s: string) => [0xa0 | s.length, ...new TextEncoder().encode(s)];
  const f64 = (v: number) => [0xcb, ...new Uint8Array(new Float64Array([v]).buffer).reverse()];

  it("the CUDA runtime's text errors (reply.cuh rg_reply_text: [code, [text]]) are typed by code", () => {
    const loads = { byId: () => undefined };
    const h = replySlot([0x92, TURN_ERROR.HANDLER, 0x91, ...str('index out of range')]);
    const he = errorOfReply(h.ring, h.slot, SlotFlag.REPLY | SlotFlag.ERROR, 'Account', 'deposit', loads);
    expect(he).toBeInstanceOf(HandlerError);
    expect(he.message).toBe('Account.deposit failed: index out of range');
    const d = replySlot([0x92, TURN_ERROR.DECODE, 0x91, ...str('bad method')]);
    const de = errorOfReply(d.ring, d.slot, SlotFlag.REPLY | SlotFlag.REJECTED, 'Account', 'deposit', loads);
    expect(de).toBeInstanceOf(DecodeError);
    expect(de.message).toContain('Account.deposit refused the message: bad method');
    // A bare str (the form before errors travelled as data) is not read as a message.
    const old = replySlot(str('bad method'));
    const oe = errorOfReply(old.ring, old.slot, SlotFlag.REPLY | SlotFlag.REJECTED, 'Account', 'deposit', loads);
    expect(oe.message).toContain('(unreadable reason)');
  });

  it("a failed load (rg_res_reply_text: [STATE_LOAD, [failureId, text]]) is the host's StateLoadError", () => {
    const failure = new StateLoadError('lmdb', 'Account', [5], new Error('disk on fire'));
    const loads = { byId: (id: number) => (id === failure.failureId ? failure : undefined) };
    const r = replySlot([0x92, TURN_ERROR.STATE_LOAD, 0x92, ...f64(failure.failureId), ...str('disk on fire')]);
    expect(errorOfReply(r.ring, r.slot, SlotFlag.REPLY | SlotFlag.ERROR, 'Account', 'deposit', loads)).toBe(failure);
    // An id the host no longer holds (or 0: the kernel stopped first): the text still says what failed.
    const gone = replySlot([0x92, TURN_ERROR.STATE_LOAD, 0x92, ...f64(0), ...str('kernel stopped')]);
    const ge = errorOfReply(gone.ring, gone.slot, SlotFlag.REPLY | SlotFlag.ERROR, 'Account', 'deposit', loads);
    expect(ge).toBeInstanceOf(HandlerError);
    expect(ge.message).toBe('Account.deposit failed: kernel stopped');
  });
});
