import { describe, expect, it } from 'vitest';
import { Grain, t } from '../src/index.ts';
import { SchemaValidationError } from '../src/errors.ts';
import { decodeValue, encodeRequest, encodeValue } from '../src/cluster/codec.ts';
import type { GrainDef } from '../src/grain.ts';
import fc from 'fast-check';
import { KIND_FIELDS, kindValues } from './kind-fields.ts';

class Kinds extends Grain({
  name: 'Kinds',
  module: import.meta.url,
  state: t.struct({ n: t.u32 }),
  methods: { put: { request: KIND_FIELDS }, vec: { request: t.struct({ xs: t.vec(t.f64, 4) }) } },
}) {
  put(): void {}
  vec(): void {}
}
const kinds = Kinds.grain as GrainDef;

/**
 * The cluster's payload codec hands out views of a shared slab (cluster/codec.ts): every view must keep its
 * own value while many more are encoded after it, across slab boundaries, around values larger than a slab,
 * and around values that fail their schema.
 */
describe('cluster payload codec', () => {
  const small = t.struct({ n: t.f64, k: t.u32 });
  const big = t.struct({ xs: t.vec(t.f64, 20_000) });

  it('every encoded value decodes to itself after many more were encoded (views of slabs are never rewritten)', () => {
    const views: Uint8Array[] = [];
    const bigs = new Map<number, Uint8Array>();
    for (let i = 0; i < 40_000; i++) {
      views.push(encodeValue(small, { n: i + 0.5, k: i }, 'G', 'm'));
      // Values larger than a slab (160 KB), now and then, between small ones.
      const xs = i % 9_999 === 0 ? Array.from({ length: 20_000 }, (_, j) => i + j) : undefined;
      if (xs) bigs.set(i, encodeValue(big, { xs }, 'G', 'big'));
      // A value that fails its schema in the middle of the run writes nothing anyone holds.
      if (i % 7_001 === 0) expect(() => encodeValue(small, { n: 'x', k: 1 }, 'G', 'm')).toThrow(SchemaValidationError);
    }
    expect(new Set(views.map((v) => v.buffer)).size).toBeGreaterThan(1);
    for (let i = 0; i < views.length; i++) expect(decodeValue(small, views[i], 'G', 'm')).toEqual({ n: i + 0.5, k: i });
    for (const [i, v] of bigs) {
      const xs = (decodeValue(big, v, 'G', 'big') as { xs: number[] }).xs;
      expect(xs.length).toBe(20_000);
      expect(xs[0]).toBe(i);
      expect(xs[19_999]).toBe(i + 19_999);
    }
  });

  it('a request of scalars as its fixed image: decodes exactly, bad values fail typed, views outlive slabs', () => {
    const put = kinds.methodByName.get('put')!;
    const vec = kinds.methodByName.get('vec')!;
    const views: Array<[Uint8Array, unknown]> = [];
    const values = fc.sample(fc.record(kindValues(false)), { numRuns: 6_000, seed: 31 });
    const general = (v: unknown) =>
      decodeValue(put.request, encodeValue(put.request, v, 'Kinds', 'put'), 'Kinds', 'put');
    for (let i = 0; i < values.length; i++) {
      const v = values[i]!;
      const bytes = encodeRequest(put, v, 'Kinds');
      views.push([bytes, v]);
      // The same value by the general encoder decodes to the same object.
      if (i % 997 === 0) expect(decodeValue(put.request, bytes, 'Kinds', 'put')).toEqual(general(v));
      if (i % 1_999 === 0) {
        expect(() => encodeRequest(put, { ...v, g: 256 }, 'Kinds')).toThrow(SchemaValidationError);
        expect(() => encodeRequest(put, { ...v, extra: 1 }, 'Kinds')).toThrow(SchemaValidationError);
        // Not all scalars: the general encoder.
        const xs = decodeValue(vec.request, encodeRequest(vec, { xs: [1, 2] }, 'Kinds'), 'Kinds', 'vec');
        expect(xs).toEqual({ xs: new Float64Array([1, 2]) });
      }
    }
    expect(new Set(views.map(([b]) => b.buffer)).size).toBeGreaterThan(1);
    // Fixed widths: every value took the image's length (the general encoder's ints take their shortest form).
    expect(new Set(views.map(([b]) => b.length)).size).toBe(1);
    for (const [b, v] of views) expect(decodeValue(put.request, b, 'Kinds', 'put')).toEqual(general(v));
  });
});
