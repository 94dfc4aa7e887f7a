/**
 * tellMany's fixed-width row images must mean exactly what the general encoder's messages mean: same
 * header fields, and a payload that decodes (by our decoder and by an independent msgpack library) to
 * the same values.
 */
import { decode as mpDecode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HOST_SENDER, Reader, SLOT, SLOT_HEADER_SIZE, SlotWriter, decodeExact } from '../src/entries/internal.ts';
import { compileRowWriter } from '../src/row-writer.ts';
import { MIXED, kindValues } from './kind-fields.ts';

const def = MIXED;
const put = def.methodByName.get('put')!;
const SLOT_SIZE = 128;

function target(bytes: number) {
  const buffer = new ArrayBuffer(bytes);
  return {
    buffer,
    u8: new Uint8Array(buffer),
    i32: new Int32Array(buffer),
    dv: new DataView(buffer),
    slotSize: SLOT_SIZE,
    payloadCapacity: SLOT_SIZE - SLOT_HEADER_SIZE,
  };
}

describe('tellMany row images (row-writer.ts)', () => {
  it('decode to the same values and header as the general encoder, for any row', () => {
    const row = fc.record({
      key: fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
      ...kindValues(true),
    });
    fc.assert(
      fc.property(row, (r) => {
        const cols = { a: [r.a], b: [r.b], c: [r.c], d: [r.d], e: [r.e], f: [r.f], g: [r.g], h: [r.h], k: [r.k] };
        const write = compileRowWriter(put, 3, [r.key], cols, SLOT_SIZE - SLOT_HEADER_SIZE)!;
        expect(write).toBeDefined();
        const fast = target(SLOT_SIZE);
        write(fast.i32, fast.dv, 0, 0, 1234.5);
        const slow = target(SLOT_SIZE);
        const keyLo = r.key >>> 0;
        const keyHi = Math.floor(r.key / 2 ** 32) >>> 0;
        new SlotWriter().write(
          slow,
          0,
          { method: put.id, flags: 0, corr: 0, keyLo, keyHi, sender: HOST_SENDER, grain: 3 },
          put.request,
          { a: r.a, b: r.b, c: r.c, d: r.d, e: r.e, f: r.f, g: r.g, h: r.h, k: r.k },
          'Mixed',
          'put',
        );
        for (const f of ['method', 'flags', 'corr', 'keyLo', 'keyHi', 'sender', 'grain'] as const) {
          expect(fast.dv.getUint32(SLOT[f], true), f).toBe(slow.dv.getUint32(SLOT[f], true));
        }
        expect(fast.dv.getFloat64(SLOT.time, true)).toBe(1234.5);
        const len = fast.dv.getUint32(SLOT.length, true);
        const payload = fast.u8.subarray(SLOT_HEADER_SIZE, SLOT_HEADER_SIZE + len);
        const want = { a: r.a, b: r.b, c: r.c, d: r.d, e: r.e, f: r.f, g: r.g, h: r.h, k: r.k };
        expect(decodeExact(put.request, new Reader(fast.u8).reset(SLOT_HEADER_SIZE, SLOT_HEADER_SIZE + len))).toEqual(
          want,
        );
        expect(mpDecode(payload)).toEqual(want);
      }),
      { numRuns: 300 },
    );
  });

  it('does not apply to a request with a non-scalar field, nor where the image exceeds the slot', () => {
    expect(compileRowWriter(def.methodByName.get('nested')!, 0, [1], { p: [{ x: 1 }] }, 1000)).toBeUndefined();
    expect(
      compileRowWriter(put, 0, [1], { a: [1], b: [1], c: [1], d: [1], e: [true], f: [1], g: [1], h: [1], k: [1] }, 10),
    ).toBeUndefined();
  });
});
