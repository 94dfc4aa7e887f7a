/**
 * ToInt32 / ToUint32 (runtime/prelude.cuh rg_toi32, rg_tou32: every bitwise operator and u32 store of a handler)
 * against JavaScript's `x | 0` and `x >>> 0`, built with g++ from the runtime file itself: the edges of each path
 * (the int range, 2^53, 2^63, 2^64, the largest doubles, -0, NaN, infinities, fractions) and 12,000 doubles of
 * random bits spread over every exponent.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { runtimeFile } from '../src/cuda/runtime.ts';
import { HAVE_GXX, gxxBuild } from './toolchain.ts';

const EDGES = [
  ...[0, -0, 0.5, -0.5, 1, -1, 1.5, -1.9, 2 ** 31 - 1, 2 ** 31, -(2 ** 31), -(2 ** 31) - 0.5, -(2 ** 31) - 1],
  ...[2 ** 31 + 0.5, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 3, -(2 ** 32), -(2 ** 40) - 7, 2 ** 52 + 1, 2 ** 53, 2 ** 53 + 2],
  ...[-(2 ** 53) - 2, 2 ** 62 + 2 ** 40, 2 ** 63 - 1024, 2 ** 63, -(2 ** 63), 2 ** 63 + 2 ** 11, -(2 ** 63) - 2 ** 11],
  ...[2 ** 64, 2 ** 64 + 2 ** 12, 2 ** 84 + 2 ** 32, 2 ** 84 + 2 ** 31, -(2 ** 84) - 2 ** 31, 2 ** 85, 1e300, -1e300],
  ...[Number.MAX_VALUE, -Number.MAX_VALUE, Number.MIN_VALUE, -Number.MIN_VALUE, 5e-324, Number.NaN],
  ...[Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY],
];

/**
 * Doubles from random bit patterns (a fixed xorshift): every exponent, both signs, NaN payloads included; every other
 * one with its exponent moved into 2^17 .. 2^86 (past the int range, around 2^53, 2^63 and 2^64, where the paths meet).
 */
function randomDoubles(n: number): number[] {
  let s = 0x9e3779b97f4a7c15n;
  const view = new DataView(new ArrayBuffer(8));
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    s ^= (s << 13n) & 0xffffffffffffffffn;
    s ^= s >> 7n;
    s ^= (s << 17n) & 0xffffffffffffffffn;
    const near = (s & ~(0x7ffn << 52n)) | ((1040n + ((s >> 3n) % 70n)) << 52n);
    view.setBigUint64(0, i % 2 === 0 ? s : near);
    out.push(view.getFloat64(0));
  }
  return out;
}

const bits = (x: number): string => {
  const v = new DataView(new ArrayBuffer(8));
  v.setFloat64(0, x);
  return `0x${v.getBigUint64(0).toString(16)}ULL`;
};

describe('rg_toi32 / rg_tou32 (g++)', () => {
  it.skipIf(!HAVE_GXX)(`equal JavaScript's | 0 and >>> 0${HAVE_GXX ? '' : ' (skipped: no g++)'}`, () => {
    const xs = [...EDGES, ...randomDoubles(12_000)];
    const harness = [
      '#include "unit.cu"',
      '#include <cstdio>',
      `static const unsigned long long xs[] = {${xs.map(bits).join(',')}};`,
      'int main() {',
      '  for (unsigned long long b : xs) { const double x = rg_u2d(b); printf("%d %u\\n", rg_toi32(x), rg_tou32(x)); }',
      '  return 0;',
      '}',
    ].join('\n');
    const built = gxxBuild(runtimeFile('prelude.cuh'), harness);
    expect(built.log).toBe('');
    expect(built.ok).toBe(true);
    const run = spawnSync(built.out, { encoding: 'utf8', maxBuffer: 64 << 20 });
    expect(run.status).toBe(0);
    const got = run.stdout.trim().split('\n');
    expect(got.length).toBe(xs.length);
    const js = (x: number) => `${x | 0} ${x >>> 0}`;
    const wrong = xs.flatMap((x, i) => (got[i] === js(x) ? [] : [`${x}: got ${got[i]}, JS ${js(x)}`]));
    expect(wrong.slice(0, 10)).toEqual([]);
  });
});
