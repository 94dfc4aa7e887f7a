/**
 * The single-send fixed image (tell-image.ts) must accept exactly what the general encoder accepts
 * (anything else falls back to it, for its typed error) and, when it accepts, write the bytes of the
 * tellMany row image (row-writer.ts), which test/row-writer.test.ts checks against the general encoder.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  Grain,
  HOST_SENDER,
  Reader,
  SLOT,
  SLOT_HEADER_SIZE,
  SlotFlag,
  SlotWriter,
  decodeExact,
  t,
  type GrainDef,
} from '../src/entries/internal.ts';
import { compileRowWriter } from '../src/row-writer.ts';
import { fixedWriter } from '../src/tell-image.ts';
import { KIND_FIELDS } from './kind-fields.ts';

class Kinds extends Grain({
  name: 'Kinds',
  module: import.meta.url,
  state: t.struct({ n: t.u32 }),
  methods: {
    put: { request: KIND_FIELDS },
    vec: { request: t.struct({ xs: t.vec(t.f64, 4) }) },
  },
}) {
  put(): void {}
  vec(): void {}
}
const def = Kinds.grain as GrainDef;
const put = def.methodByName.get('put')!;
const SLOT_SIZE = 128;
const fields = put.request.fieldNames;

function target() {
  const buffer = new SharedArrayBuffer(SLOT_SIZE);
  return {
    buffer,
    u8: new Uint8Array(buffer),
    i32: new Int32Array(buffer),
    dv: new DataView(buffer),
    slotSize: SLOT_SIZE,
    payloadCapacity: SLOT_SIZE - SLOT_HEADER_SIZE,
  };
}

/** Whether the general encoder takes `payload` (it throws a typed error when not). */
function generalAccepts(payload: unknown): boolean {
  try {
    new SlotWriter().write(
      target(),
      0,
      { method: put.id, flags: 0, corr: 0, keyLo: 0, keyHi: 0, sender: HOST_SENDER, grain: 3 },
      put.request,
      payload,
      'Kinds',
      'put',
    );
    return true;
  } catch {
    return false;
  }
}

/** The row image of `payload` as tellMany writes it (flags and corr as an ask's, when corr is set). */
function rowImage(payload: Record<string, unknown>, key: number, corr: number): Uint8Array {
  const tg = target();
  const cols = Object.fromEntries(fields.map((f) => [f, [payload[f]]]));
  compileRowWriter(put, 3, [key], cols, tg.payloadCapacity)!(tg.i32, tg.dv, 0, 0, 4321.5);
  if (corr) {
    tg.dv.setUint32(SLOT.flags, SlotFlag.ASK, true);
    tg.dv.setUint32(SLOT.corr, corr, true);
  }
  return tg.u8;
}

const GOOD = { a: 1.5, b: 0.5, c: -7, d: 0xffffffff, e: true, f: -128, g: 255, h: -32768, k: 65535 };

describe('single-send fixed image (tell-image.ts)', () => {
  it('writes the row image’s bytes for valid payloads (tells and asks, any key) and decodes to the payload', () => {
    const write = fixedWriter(put, 3, SLOT_SIZE - SLOT_HEADER_SIZE)!;
    for (const key of [0, -1, 2 ** 40 + 9, Number.MIN_SAFE_INTEGER])
      for (const corr of [0, 1, 0xffffffff]) {
        const tg = target();
        expect(write(tg.i32, tg.dv, tg.u8, 0, GOOD, key, corr, 4321.5)).toBe(true);
        expect(tg.u8).toEqual(rowImage(GOOD, key, corr));
        const len = tg.dv.getUint32(SLOT.length, true);
        expect(decodeExact(put.request, new Reader(tg.u8).reset(SLOT_HEADER_SIZE, SLOT_HEADER_SIZE + len))).toEqual(
          GOOD,
        );
      }
  });

  it(
    'refuses (writing nothing) exactly what the general encoder refuses: wrong types, out of range, ' +
      'fractions, missing and extra keys',
    () => {
      const write = fixedWriter(put, 3, SLOT_SIZE - SLOT_HEADER_SIZE)!;
      const bad: unknown[] = [
        null,
        7,
        'x',
        { ...GOOD, extra: 1 },
        { ...GOOD, a: undefined },
        { ...GOOD, a: '1' },
        { ...GOOD, c: 0x80000000 },
        { ...GOOD, c: 1.5 },
        { ...GOOD, c: Number.NaN },
        { ...GOOD, d: -1 },
        { ...GOOD, d: 2 ** 32 },
        { ...GOOD, e: 1 },
        { ...GOOD, f: 128 },
        { ...GOOD, g: 256 },
        { ...GOOD, h: 32768 },
        { ...GOOD, k: -1 },
        { ...GOOD, k: Number.POSITIVE_INFINITY },
      ];
      for (const p of bad) {
        const tg = target();
        expect(generalAccepts(p), JSON.stringify(p)).toBe(false);
        expect(write(tg.i32, tg.dv, tg.u8, 0, p, 1, 0, 0), JSON.stringify(p)).toBe(false);
        expect(tg.u8.every((b) => b === 0)).toBe(true);
      }
      // What the general encoder takes, so does the image: NaN and ±Infinity as floats, -0, a key set to undefined.
      for (const p of [
        { ...GOOD, a: Number.NaN },
        { ...GOOD, b: Number.NEGATIVE_INFINITY },
        { ...GOOD, c: -0 },
        { ...GOOD, more: undefined },
      ]) {
        expect(generalAccepts(p)).toBe(true);
        expect(write(target().i32, target().dv, target().u8, 0, p, 1, 0, 0)).toBe(true);
      }
    },
  );

  it('property: for any payload, accepts exactly when the general encoder does', () => {
    const num = fc.oneof(
      fc.double(),
      fc.integer({ min: -(2 ** 33), max: 2 ** 33 }),
      fc.constantFrom(0, -0, 255, 256, -129, 65536, 0xffffffff, 0x80000000),
      fc.boolean(),
      fc.constant('1'),
    );
    const payload = fc.record(
      Object.fromEntries(fields.map((f) => [f, f === 'e' ? fc.oneof(fc.boolean(), num) : num])),
      { requiredKeys: [] },
    );
    const write = fixedWriter(put, 3, SLOT_SIZE - SLOT_HEADER_SIZE)!;
    fc.assert(
      fc.property(payload, (p) => {
        const tg = target();
        const ok = write(tg.i32, tg.dv, tg.u8, 0, p, 5, 0, 1);
        expect(ok).toBe(generalAccepts(p));
        if (ok)
          expect(tg.u8).toEqual(rowImage(p, 5, 0).map((b, i) => (i >= SLOT.time && i < SLOT.time + 8 ? tg.u8[i]! : b)));
      }),
      { numRuns: 500 },
    );
  });

  it('does not apply to a request with a non-scalar field, nor where the image exceeds the slot', () => {
    expect(fixedWriter(def.methodByName.get('vec')!, 0, 1000)).toBeNull();
    expect(fixedWriter(put, 9, 10)).toBeNull();
    // Per call: the same method and grain id in a kernel with room, then in one without.
    expect(fixedWriter(put, 4, 1000)).not.toBeNull();
    expect(fixedWriter(put, 4, 10)).toBeNull();
  });
});
