import { describe, expect, it } from 'vitest';
import { KeySlots } from '../src/key-slots.ts';

/** A small deterministic PRNG (mulberry32): the same operations on every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('KeySlots', () => {
  it(
    'agrees with a Map over random sets, replaces and deletes of integer keys (growth and backward shifts ' +
      'included)',
    () => {
      const slots = new KeySlots<number>(4);
      const model = new Map<number, number>();
      const next = rng(7);
      // Few distinct keys in a narrow range: long probe runs, many deletes inside them; plus wide and negative keys.
      const pick = (): number => {
        const r = next();
        if (r < 0.7) return Math.floor(next() * 3000);
        if (r < 0.85) return -Math.floor(next() * 2 ** 40);
        return Math.floor(next() * 2 ** 53);
      };
      const wide: number[] = [];
      // Compared with plain operators and the first mismatch reported through one expect: an expect per
      // operation (200,000 ops, a full scan every 997) took ~45 s of the suite on the 2-core machine.
      let mismatch: string | undefined;
      const agree = (got: unknown, want: unknown, what: string) => {
        if (mismatch === undefined && got !== want) mismatch = `${what}: got ${String(got)}, want ${String(want)}`;
      };
      for (let op = 0; op < 200_000 && mismatch === undefined; op++) {
        const r = next();
        const key = r < 0.1 && wide.length ? wide[Math.floor(next() * wide.length)]! : pick();
        if (key > 3000 || key < 0) wide.push(key);
        if (next() < 0.55) {
          const slot = Math.floor(next() * 1e6);
          slots.set(key, slot);
          model.set(key, slot);
        } else {
          agree(slots.delete(key), model.delete(key), `op ${op}: delete(${key})`);
        }
        if (op % 997 === 0) {
          for (const [k, v] of model) agree(slots.get(k), v, `op ${op}: get(${k})`);
        }
        agree(slots.size, model.size, `op ${op}: size`);
      }
      for (const [k, v] of model) agree(slots.get(k), v, `end: get(${k})`);
      for (let k = 0; k < 3000; k++) agree(slots.get(k), model.get(k) ?? -1, `end: get(${k})`);
      expect(mismatch).toBeUndefined();
      expect(model.size).toBeGreaterThan(0);
    },
  );

  it('keeps string keys apart from integer keys', () => {
    const slots = new KeySlots<number | string>();
    slots.set(1, 10);
    slots.set('1', 11);
    expect([slots.get(1), slots.get('1'), slots.size]).toEqual([10, 11, 2]);
    expect(slots.delete('1')).toBe(true);
    expect([slots.get(1), slots.get('1'), slots.size]).toEqual([10, -1, 1]);
    expect(slots.delete('1')).toBe(false);
  });

  it('holds 0 and -0 as one key, as a Map does', () => {
    const slots = new KeySlots<number>();
    slots.set(0, 3);
    expect(slots.get(-0)).toBe(3);
    slots.set(-0, 4);
    expect([slots.get(0), slots.size]).toEqual([4, 1]);
  });
});
