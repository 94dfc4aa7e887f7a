import { describe, expect, it } from 'vitest';
import { laneOfKey } from '../src/entries/internal.ts';

describe('laneOfKey (the host and every CPU worker route a key to the same lane)', () => {
  it('one lane is always lane 0', () => {
    expect(laneOfKey(123456789, 1)).toBe(0);
    expect(laneOfKey('alice', 1)).toBe(0);
  });

  it('is a pure function of key and lane count, in range, for integer and string keys', () => {
    for (const lanes of [2, 3, 15, 64]) {
      for (const key of [
        0,
        1,
        -1,
        2 ** 31,
        2 ** 32 + 5,
        Number.MAX_SAFE_INTEGER,
        -Number.MAX_SAFE_INTEGER,
        'a',
        'alice',
        '',
        'ünïcødé',
      ]) {
        const l = laneOfKey(key, lanes);
        expect(Number.isInteger(l) && l >= 0 && l < lanes).toBe(true);
        expect(laneOfKey(key, lanes)).toBe(l);
      }
    }
    // Keys that differ only above 32 bits need not share a lane (the high word is mixed in).
    const hi = new Set(Array.from({ length: 64 }, (_, i) => laneOfKey(i * 2 ** 32, 15)));
    expect(hi.size).toBeGreaterThan(8);
  });

  it('spreads consecutive keys and string keys evenly (each lane within 10% of the mean)', () => {
    for (const lanes of [3, 15]) {
      const ints = new Array<number>(lanes).fill(0);
      const strs = new Array<number>(lanes).fill(0);
      const n = 150_000;
      for (let k = 0; k < n; k++) {
        ints[laneOfKey(k, lanes)]!++;
        strs[laneOfKey(`user-${k}`, lanes)]!++;
      }
      for (const counts of [ints, strs]) {
        for (const c of counts) expect(Math.abs(c - n / lanes) / (n / lanes)).toBeLessThan(0.1);
      }
    }
  });
});
