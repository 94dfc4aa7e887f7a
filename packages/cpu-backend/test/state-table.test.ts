import { t } from '@ringgrain/core';
import { describe, expect, it } from 'vitest';
import { StateTableFullError } from '../src/errors.ts';
import { StateTable } from '../src/state-table.ts';

const schema = t.struct({ a: t.f64, b: t.bool, xs: t.vec(t.u32, 3) });
type V = { a: number; b: boolean; xs: { length: number; items: Uint32Array } };

describe('StateTable', () => {
  it('activates a zeroed slot per key, keeps states apart, and snapshots them', () => {
    const table = new StateTable<number>('G', schema, 10_000);
    const s1 = table.get(1) as V;
    const s2 = table.get(2) as V;
    expect(table.get(1)).toBe(s1);
    expect(table.has(3)).toBe(false);
    expect(table.snapshot(3)).toBeUndefined();
    expect({ a: s1.a, b: s1.b, len: s1.xs.length }).toEqual({ a: 0, b: false, len: 0 });
    s1.a = 1.5;
    s1.b = true;
    s1.xs.length = 2;
    s1.xs.items[0] = 7;
    s1.xs.items[1] = 8;
    s2.a = -1;
    expect(table.snapshot(1)).toEqual({ a: 1.5, b: true, xs: new Uint32Array([7, 8]) });
    expect(table.snapshot(2)).toEqual({ a: -1, b: false, xs: new Uint32Array([]) });
    expect(table.size).toBe(2);
  });

  it('grows past one chunk (4096 slots) without moving earlier states', () => {
    const table = new StateTable<number>('G', schema, 10_000);
    for (let k = 0; k < 9000; k++) (table.get(k) as V).a = k;
    for (let k = 0; k < 9000; k += 997) expect((table.get(k) as V).a).toBe(k);
    expect(table.size).toBe(9000);
  });

  it('string keys work the same way', () => {
    const table = new StateTable<string>('G', schema, 10);
    (table.get('x') as V).a = 3;
    expect((table.get('x') as V).a).toBe(3);
    expect((table.get('y') as V).a).toBe(0);
  });

  it('refuses more than maxActors keys with StateTableFullError', () => {
    const table = new StateTable<number>('G', schema, 2);
    table.get(1);
    table.get(2);
    expect(() => table.get(3)).toThrow(StateTableFullError);
    expect(table.get(1)).toBeDefined();
  });
});

describe('StateTable before-images', () => {
  it('copyOut copies a slot state and differs sees any byte change, in a later chunk too', () => {
    const table = new StateTable<number>('G', schema, 10_000);
    for (let k = 0; k < 5000; k++) table.get(k);
    const index = table.indexOf(4500);
    const was = new Uint8Array(table.size0);
    const v = table.get(4500) as V;
    v.a = 2.25;
    table.copyOut(index, was);
    expect(was).toEqual(table.bytes(index));
    expect(table.differs(index, was)).toBe(false);
    v.xs.items[2] = 1; // the last field's bytes
    expect(table.differs(index, was)).toBe(true);
    expect(table.differs(table.indexOf(4499), was)).toBe(true);
  });
});
