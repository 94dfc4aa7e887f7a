import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StateBatchError, StateReadBuilder, keyOrder, type StateTableSpec } from '../src/entries/internal.ts';

const ints: StateTableSpec = { name: 'A', keyKind: 'int' };
const strings: StateTableSpec = { name: 'S', keyKind: 'string' };

describe('keyOrder: the order a store applies a batch in', () => {
  it('is null for ascending keys and an ascending permutation otherwise, for any safe integers', () => {
    const key = fc.oneof(
      fc.integer({ min: -1000, max: 1000 }),
      fc.maxSafeInteger(),
      fc.maxSafeNat(),
      fc.constantFrom(Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2 ** 32, -(2 ** 32), 2 ** 32 - 1),
    );
    fc.assert(
      fc.property(fc.uniqueArray(key, { maxLength: 300 }), (keys) => {
        const order = keyOrder('test', ints, keys);
        const sorted = [...keys].sort((a, b) => a - b);
        if (order === null) expect(keys).toEqual(sorted);
        else {
          expect([...order].sort((a, b) => a - b)).toEqual(keys.map((_, i) => i));
          expect([...order].map((i) => keys[i])).toEqual(sorted);
        }
      }),
    );
  });

  it('refuses a repeated key, naming both rows, ascending or not', () => {
    expect(() => keyOrder('test', ints, [1, 2, 2, 3])).toThrow(/key 2 is repeated \(rows 1 and 2\)/);
    expect(() => keyOrder('test', ints, Float64Array.of(9, -4, 7, -4))).toThrow(StateBatchError);
    expect(() => keyOrder('test', strings, ['b', 'a', 'b'])).toThrow(/"b" is repeated/);
  });

  it('orders string keys', () => {
    const keys = ['m', 'b', 'z', 'a'];
    expect([...keyOrder('test', strings, keys)!].map((i) => keys[i])).toEqual(['a', 'b', 'm', 'z']);
  });
});

describe('StateReadBuilder', () => {
  it('packs found and missing rows into one buffer with offsets, growing as needed', () => {
    const b = new StateReadBuilder(4, 1);
    b.add(3, Uint8Array.of(1, 2, 3));
    b.missing();
    b.add(1, new Uint8Array(100).fill(7));
    b.missing();
    const r = b.read();
    expect(r).toMatchObject({ count: 4, found: 2 });
    expect([...r.versions]).toEqual([3, 0, 1, 0]);
    expect([...r.missing]).toEqual([1, 3]);
    expect([...r.offsets]).toEqual([0, 3, 3, 103, 103]);
    expect(r.bytes.subarray(3, 103).every((x) => x === 7)).toBe(true);
  });
});
