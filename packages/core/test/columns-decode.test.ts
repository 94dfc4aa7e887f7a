import { encode as mpEncode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DecodeError, Reader, Writer, compileEncoder, decodeExact, t } from '../src/entries/internal.ts';
import { decodeIntoColumns, type Columns } from '../src/schema/msgpack-decode.ts';
import { structArb, valueArb } from './arbitraries.ts';

/** Decodes `bytes` both ways: as an object, and into row 2 of fresh columns. */
function both(
  schema: ReturnType<typeof t.struct>,
  bytes: Uint8Array,
): { obj: unknown; cols: Columns; err: [unknown, unknown] } {
  const names = schema.fieldNames;
  const cols: Columns = names.map(() => new Array<unknown>(4));
  let obj: unknown;
  const err: [unknown, unknown] = [undefined, undefined];
  try {
    obj = decodeExact(schema, new Reader(bytes).reset(0, bytes.length));
  } catch (e) {
    err[0] = e;
  }
  try {
    decodeIntoColumns(schema, new Reader(bytes).reset(0, bytes.length), 2, cols);
  } catch (e) {
    err[1] = e;
  }
  return { obj, cols, err };
}

describe('decodeIntoColumns (askMany replies straight into columns)', () => {
  it('gives row by row what decodeExact gives as an object, for random structs and values', () => {
    fc.assert(
      fc.property(
        structArb(2).chain((s) => valueArb(s).map((v) => [s, v] as const)),
        ([s, v]) => {
          const buf = new Uint8Array(1 << 16);
          const w = new Writer(buf).reset(0, buf.length);
          compileEncoder(s)(v, w);
          const { obj, cols, err } = both(s, buf.subarray(0, w.pos));
          expect(err).toEqual([undefined, undefined]);
          s.fieldNames.forEach((f, i) => expect(cols[i]![2]).toEqual((obj as Record<string, unknown>)[f]));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('accepts keys in any order and refuses what decodeExact refuses, with the same DecodeError text', () => {
    const s = t.struct({ a: t.u32, b: t.f64, c: t.i32 });
    const ok = both(s, mpEncode({ c: -3, a: 7, b: 0.5 }));
    expect(ok.err).toEqual([undefined, undefined]);
    expect([ok.cols[0]![2], ok.cols[1]![2], ok.cols[2]![2]]).toEqual([7, 0.5, -3]);
    for (const bad of [
      { a: 1, b: 2 },
      { a: 1, b: 2, c: 3, d: 4 },
      { a: -1, b: 2, c: 3 },
      { a: 1, b: 'x', c: 3 },
      [1, 2, 3],
    ]) {
      const r = both(s, mpEncode(bad));
      expect(r.err[0]).toBeInstanceOf(DecodeError);
      expect(r.err[1]).toBeInstanceOf(DecodeError);
      expect((r.err[1] as Error).message).toBe((r.err[0] as Error).message);
    }
    const dup = new Uint8Array([0x83, 0xa1, 0x61, 0x01, 0xa1, 0x61, 0x02, 0xa1, 0x63, 0x03]);
    expect((both(s, dup).err[1] as Error).message).toMatch(/appears twice/);
    const trailing = new Uint8Array([...mpEncode({ a: 1, b: 2, c: 3 }), 0xc0]);
    expect((both(s, trailing).err[1] as Error).message).toMatch(/trailing/);
  });
});
