/**
 * Typed programs (type level only): typed refs (ask, tell, into), keys, tellMany / askMany columns.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { AskOptions, GrainRef, GrainSystem } from '@ringgrain/core';
import type { Columns, NumberColumn, ReplyArrays, ReplyColumns } from '@ringgrain/core/types';
import { Account, Body, Directory, Sensor } from './grains.ts';

declare const system: GrainSystem;

describe('refs', () => {
  it('README: ask resolves to the typed reply, tell is one-way', async () => {
    const acct = system.grain(Account, 42);
    expectTypeOf(acct).toEqualTypeOf<GrainRef<typeof Account>>();
    const r = await acct.deposit({ amount: 5 });
    expectTypeOf(r).toEqualTypeOf<{ balance: number }>();
    expectTypeOf(acct.tell.transfer({ to: 7, amount: 2 })).toEqualTypeOf<Promise<void> | undefined>();
    // an ask of a tell-only method resolves to void
    expectTypeOf(acct.credit({ amount: 1 })).toEqualTypeOf<Promise<void>>();
    expectTypeOf(acct.key).toEqualTypeOf<number>();
    // a tell's Promise (backpressure) may be awaited
    await acct.tell.credit({ amount: 1 });
    // @ts-expect-error: unknown method
    void acct.withdraw({ amount: 1 });
    // @ts-expect-error: unknown method on tell
    void acct.tell.withdraw({ amount: 1 });
    // @ts-expect-error: wrong payload field type
    void acct.deposit({ amount: '5' });
    // @ts-expect-error: wrong payload field type on tell
    void acct.tell.transfer({ to: '7', amount: 2 });
    // @ts-expect-error: missing field
    void acct.tell.transfer({ amount: 2 });
    // @ts-expect-error: the reply has no such field
    void r.ops;
  });

  it('keys: safe integers or strings, by the spec', () => {
    const d = system.grain(Directory, 'alice');
    expectTypeOf(d.key).toEqualTypeOf<string>();
    expectTypeOf(d.balanceOf({})).resolves.toEqualTypeOf<{ balance: number }>();
    d.tell.assign({ owner: 1 });
    // @ts-expect-error: Directory keys are strings
    system.grain(Directory, 1);
    // @ts-expect-error: Account keys are numbers
    system.grain(Account, '42');
    // @ts-expect-error: bigint is not a key
    system.grain(Account, 42n);
  });

  it('every schema kind in payloads and replies', async () => {
    const b = system.grain(Body, 1);
    expectTypeOf(b.move({ dx: 1, dy: 2, dz: 3 })).resolves.toEqualTypeOf<{
      pos: { x: number; y: number; z: number };
    }>();
    const rec = await b.record({ samples: [1, 2, 3], mask: [true, false, false, true] });
    expectTypeOf(rec).toEqualTypeOf<{ n: number; sum: Float32Array }>();
    void b.record({ samples: new Float32Array(16), mask: [] });
    b.tell.paint({ cells: new Uint8Array(4), alive: false });
    b.tell.paint({ cells: [1, 2, 3, 4], alive: true });
    b.tell.setJoints({
      joints: [
        { angle: 0.5, locked: true },
        { angle: 1, locked: false },
      ],
    });
    const snap = await b.snapshot({});
    expectTypeOf(snap).toEqualTypeOf<{
      alive: boolean;
      hits: number;
      grid: Uint8Array;
      tag: Int32Array;
      flags: boolean[];
    }>();
    void b.ping({});
    // @ts-expect-error: Int8Array is not a byte array
    b.tell.paint({ cells: new Int8Array(4), alive: true });
    // @ts-expect-error: bool arrays take booleans
    void b.record({ samples: [1], mask: [0, 1] });
    // @ts-expect-error: bool field takes a boolean
    b.tell.paint({ cells: [1, 2, 3, 4], alive: 1 });
    // @ts-expect-error: nested struct field missing
    b.tell.setJoints({ joints: [{ angle: 1 }] });
    // @ts-expect-error: an empty request still takes an object
    void b.ping();
  });

  it('into: caller-owned typed arrays for the reply numeric array fields', async () => {
    const b = system.grain(Body, 1);
    const out = new Float32Array(16);
    const rec = await b.record({ samples: [1, 2], mask: [true, true, true, true] }, { into: { sum: out } });
    expectTypeOf(rec.sum).toEqualTypeOf<Float32Array>();
    await b.snapshot({}, { into: { grid: new Uint8Array(4), tag: new Int32Array(3) } });
    await b.snapshot({}, {});
    expectTypeOf<ReplyArrays<{ n: number; sum: Float32Array }>>().toEqualTypeOf<{ readonly sum?: Float32Array }>();
    expectTypeOf<AskOptions<{ sum: Float32Array }>['into']>().toEqualTypeOf<
      { readonly sum?: Float32Array } | undefined
    >();
    // @ts-expect-error: wrong kind for the field
    void b.record({ samples: [], mask: [] }, { into: { sum: new Float64Array(16) } });
    // @ts-expect-error: not a numeric array field of the reply
    void b.record({ samples: [], mask: [] }, { into: { n: new Uint32Array(1) } });
    // @ts-expect-error: bool arrays are not numeric arrays
    void b.snapshot({}, { into: { flags: new Uint8Array(4) } });
    // @ts-expect-error: no such reply field
    void b.record({ samples: [], mask: [] }, { into: { other: new Float32Array(1) } });
    // @ts-expect-error: tells take no options
    b.tell.record({ samples: [], mask: [] }, { into: { sum: out } });
  });
});

describe('tellMany / askMany', () => {
  it('README: tellMany from Int32Array/Float64Array columns returns the row count', () => {
    const key = Int32Array.from({ length: 4 }, (_, i) => i);
    expectTypeOf(system.tellMany(Account, 'credit', { key, amount: new Float64Array(4) })).toEqualTypeOf<number>();
    system.tellMany(Account, 'transfer', { key: [1, 2], to: new Int32Array([2, 3]), amount: [1, 2] });
    system.tellMany(Directory, 'assign', { key: ['a', 'b'], owner: [1, 2] });
    system.tellMany(Body, 'paint', { key: [1], cells: [new Uint8Array(4)], alive: [true] });
    system.tellMany(Sensor, 'sample', { key: [1, 2, 3] });
    // @ts-expect-error: unknown method
    system.tellMany(Account, 'withdraw', { key, amount: [1] });
    // @ts-expect-error: a column the request does not have
    system.tellMany(Account, 'credit', { key, amount: [1], memo: [1] });
    // @ts-expect-error: a missing column
    system.tellMany(Account, 'transfer', { key, amount: [1] });
    // @ts-expect-error: strings in a numeric column
    system.tellMany(Account, 'credit', { key, amount: ['1'] });
    // @ts-expect-error: string keys for an int-keyed class
    system.tellMany(Account, 'credit', { key: ['a'], amount: [1] });
    // @ts-expect-error: int keys for a string-keyed class
    system.tellMany(Directory, 'assign', { key: new Int32Array(1), owner: [1] });
    // @ts-expect-error: bool column takes booleans
    system.tellMany(Body, 'paint', { key: [1], cells: [new Uint8Array(4)], alive: [1] });
    // @ts-expect-error: no key column
    system.tellMany(Account, 'credit', { amount: [1] });
  });

  it('README: askMany resolves with reply columns (Float64Array per numeric field, arrays otherwise)', async () => {
    const key = new Int32Array([1, 2]);
    const amount = new Float64Array([5, 6]);
    const r = await system.askMany(Account, 'deposit', { key, amount });
    expectTypeOf(r).toEqualTypeOf<ReplyColumns<{ balance: number }>>();
    expectTypeOf(r.balance).toEqualTypeOf<Float64Array>();
    const s = await system.askMany(Body, 'snapshot', { key: [1, 2] });
    expectTypeOf(s.alive).toEqualTypeOf<boolean[]>();
    expectTypeOf(s.hits).toEqualTypeOf<Float64Array>();
    expectTypeOf(s.grid).toEqualTypeOf<Uint8Array[]>();
    const m = await system.askMany(Body, 'move', { key: [1], dx: [1], dy: [1], dz: [1] });
    expectTypeOf(m.pos).toEqualTypeOf<{ x: number; y: number; z: number }[]>();
    const d = await system.askMany(Directory, 'balanceOf', { key: ['a'] });
    expectTypeOf(d.balance).toEqualTypeOf<Float64Array>();
    // @ts-expect-error: unknown method
    void system.askMany(Account, 'withdraw', { key, amount });
    // @ts-expect-error: the reply has no such column
    void r.ops;
    // @ts-expect-error: wrong column type
    void system.askMany(Account, 'deposit', { key, amount: [true] });
    expectTypeOf<Columns<{ a: number }, number>['key']>().toEqualTypeOf<NumberColumn>();
    // @ts-expect-error: a tell-only method has no reply to collect (it rejects at run time: use tellMany)
    void system.askMany(Account, 'credit', { key, amount });
    // @ts-expect-error: tell-only, too
    void system.askMany(Body, 'paint', { key: [1], cells: [[1, 2, 3, 4]], alive: [true] });
  });

  it('array fields take a column of what a ref takes: typed arrays or number[] per row', () => {
    system.tellMany(Body, 'record', {
      key: [1, 2],
      samples: [[1, 2], new Float32Array(3)],
      mask: [
        [true, false, true, false],
        [false, false, false, false],
      ],
    });
    system.tellMany(Body, 'paint', { key: [1], cells: [[1, 2, 3, 4]], alive: [true] });
    void system.askMany(Body, 'record', { key: [1], samples: [[1]], mask: [[true, true, true, true]] });
    // @ts-expect-error: a Float64Array row for an f32 field
    system.tellMany(Body, 'record', { key: [1], samples: [new Float64Array(1)], mask: [[]] });
    // @ts-expect-error: numbers in a bool array column
    system.tellMany(Body, 'record', { key: [1], samples: [[1]], mask: [[1, 0, 1, 0]] });
  });
});
