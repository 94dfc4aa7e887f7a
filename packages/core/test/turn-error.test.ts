import { describe, expect, it } from 'vitest';
import { DecodeError, Ring, SLOT, SLOT_HEADER_SIZE, SlotFlag, StateTableFullError, TURN_ERROR, decodeTurnError, encodeTurnError, ringBytes } from '../src/entries/internal.ts';
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
    expect(roundTrip(200, TURN_ERROR.STATE_LOAD, [17, 'cannot load ✓'])).toEqual({ code: TURN_ERROR.STATE_LOAD, fields: [17, 'cannot load ✓'] });
  });

  it('fits the smallest slot (16 payload bytes): numbers whole, text cut with a mark on a character boundary', () => {
    expect(roundTrip(16, TURN_ERROR.STATE_TABLE_FULL, [65536])).toEqual({ code: TURN_ERROR.STATE_TABLE_FULL, fields: [65536] });
    const long = `${'é'.repeat(100)}`;
    const r = roundTrip(60, TURN_ERROR.HANDLER, [long]) as unknown as { fields: string[] };
    expect(r.fields[0]).toMatch(/^é+… \[cut to fit slot\]$/);
    const tiny = roundTrip(16, TURN_ERROR.STATE_LOAD, [3, long]) as unknown as { fields: Array<string | number> };
    expect(tiny.fields[0]).toBe(3);
    expect(typeof tiny.fields[1]).toBe('string');
  });

  it('the older bare-text form (CUDA kernels) reads as text; garbage is undefined, never a throw', () => {
    const u8 = new Uint8Array([0xa5, 0x68, 0x65, 0x6c, 0x6c, 0x6f]);
    expect(decodeTurnError(u8, new DataView(u8.buffer), 0, 6)).toEqual({ text: 'hello' });
    for (const bad of [[0xc1], [0x92], [0x92, 0x01], [0x92, 0x01, 0x91, 0xcb, 0, 0], [0x92, 0xff, 0x90]]) {
      const b = new Uint8Array(bad);
      expect(decodeTurnError(b, new DataView(b.buffer), 0, b.length)).toBeUndefined();
    }
  });
});

describe('the host builds the typed error from a reply slot', () => {
  it('the CUDA runtime\'s bytes for a full table (reply.cuh rg_reply_code1: [3, [maxActors]]) are StateTableFullError', () => {
    const sab = new SharedArrayBuffer(ringBytes(2, 64));
    const ring = Ring.format(sab, 0, 2, 64);
    const slot = ring.slotAt(0);
    const bytes = [0x92, TURN_ERROR.STATE_TABLE_FULL, 0x91, 0xcb, ...new Uint8Array(new Float64Array([4096]).buffer).reverse()];
    ring.u8.set(bytes, slot + SLOT_HEADER_SIZE);
    ring.dv.setUint32(slot + SLOT.length, bytes.length, true);
    ring.dv.setUint32(slot + SLOT.corr, 7, true);
    const loads = { byId: () => undefined, byText: () => undefined };
    const e = errorOfReply(ring, slot, SlotFlag.REPLY | SlotFlag.REJECTED, 'Account', 'deposit', loads);
    expect(e).toBeInstanceOf(StateTableFullError);
    expect(e).toMatchObject({ code: 'STATE_TABLE_FULL', maxActors: 4096 });
    // The older text form still reads: a refusal is a DecodeError with the kernel's text.
    const text = new TextEncoder().encode('bad method');
    ring.u8.set([0xa0 | text.length, ...text], slot + SLOT_HEADER_SIZE);
    ring.dv.setUint32(slot + SLOT.length, text.length + 1, true);
    const d = errorOfReply(ring, slot, SlotFlag.REPLY | SlotFlag.REJECTED, 'Account', 'deposit', loads);
    expect(d).toBeInstanceOf(DecodeError);
    expect(d.message).toContain('Account.deposit refused the message: bad method');
  });
});
