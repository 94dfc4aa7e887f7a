import { describe, expect, it } from 'vitest';
import { t } from '../src/index.ts';
import { SchemaValidationError } from '../src/errors.ts';
import { decodeValue, encodeValue } from '../src/cluster/codec.ts';

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
});
