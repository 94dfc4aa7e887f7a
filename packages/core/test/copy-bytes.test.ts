import { describe, expect, it } from 'vitest';
import { copyBytes } from '../src/schema/copy.ts';

/** Bytes 0..n-1 as a recognisable pattern. */
function pattern(u8: Uint8Array): void {
  for (let i = 0; i < u8.length; i++) u8[i] = (i * 131 + 7) & 0xff;
}

describe('copyBytes (slot payload copies, two steps when a SharedArrayBuffer end is misaligned)', () => {
  const kinds = [
    ['SharedArrayBuffer', (n: number) => new Uint8Array(new SharedArrayBuffer(n))],
    ['ArrayBuffer', (n: number) => new Uint8Array(n)],
  ] as const;
  for (const [dn, makeDst] of kinds) {
    for (const [sn, makeSrc] of kinds) {
      it(`${sn} → ${dn}: every alignment pair and lengths around the two-step threshold copy exactly`, () => {
        const src = makeSrc(4200);
        pattern(src);
        for (const len of [0, 1, 255, 256, 257, 4096]) {
          for (let sa = 0; sa < 8; sa++) {
            for (let da = 0; da < 8; da++) {
              const dst = makeDst(4200);
              dst.fill(0xee);
              copyBytes(dst, 16 + da, src, 8 + sa, len);
              expect(
                Buffer.from(dst.subarray(16 + da, 16 + da + len)).equals(
                  Buffer.from(src.subarray(8 + sa, 8 + sa + len)),
                ),
              ).toBe(true);
              // Nothing outside the range is touched.
              expect(dst[16 + da - 1]).toBe(0xee);
              expect(dst[16 + da + len]).toBe(0xee);
            }
          }
        }
      });
    }
  }

  it('copies views with their own byteOffset (subarrays of a larger buffer)', () => {
    const big = new Uint8Array(new SharedArrayBuffer(2048));
    pattern(big);
    const src = big.subarray(3);
    const dst = new Uint8Array(new ArrayBuffer(2048)).subarray(5);
    copyBytes(dst, 1, src, 2, 1000);
    expect(Buffer.from(dst.subarray(1, 1001)).equals(Buffer.from(big.subarray(5, 1005)))).toBe(true);
  });
});
