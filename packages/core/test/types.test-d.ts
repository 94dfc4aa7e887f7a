/**
 * Type tests: checked by `tsc -p tsconfig.json` (test/typecheck/tsc.test.ts in the suite; never executed).
 * Each `@ts-expect-error` line must fail to compile; if it ever compiles, the check itself errors.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { GrainContext, GrainRef, GrainSystem, Infer, TypesOf } from '../src/index.ts';
import type { Input, StateView } from '../src/entries/types.ts';
import { t } from '../src/index.ts';
import { Tagged, Wallet } from './type-fixtures.ts';

declare const system: GrainSystem;

describe('typed refs', () => {
  it('methods take the request input type and resolve to the reply type', () => {
    const w = system.grain(Wallet, 1);
    expectTypeOf(w).toEqualTypeOf<GrainRef<typeof Wallet>>();
    expectTypeOf(w.deposit).parameter(0).toEqualTypeOf<{ amount: number }>();
    expectTypeOf(w.deposit({ amount: 5 })).resolves.toEqualTypeOf<{ balance: number }>();
    expectTypeOf(w.note({ code: 1 })).resolves.toEqualTypeOf<void>();
    expectTypeOf(w.tell.deposit({ amount: 1 })).toEqualTypeOf<Promise<void> | undefined>();
    expectTypeOf(w.key).toEqualTypeOf<number>();
    // Numeric arrays accept typed arrays or number[]; bool arrays accept boolean[].
    void w.samples({ xs: new Float32Array(3), flags: [true] });
    void w.samples({ xs: [1, 2, 3], flags: [] });
    expectTypeOf(w.samples).parameter(0).toHaveProperty('xs').toEqualTypeOf<Float32Array | readonly number[]>();
  });

  it('a wrong method name is a compile error', () => {
    const w = system.grain(Wallet, 1);
    // @ts-expect-error: no such method
    void w.withdraw({ amount: 1 });
    // @ts-expect-error: no such method on tell either
    void w.tell.withdraw({ amount: 1 });
  });

  it('a wrong payload type is a compile error', () => {
    const w = system.grain(Wallet, 1);
    // @ts-expect-error: amount must be a number
    void w.deposit({ amount: '5' });
    // @ts-expect-error: missing field
    void w.deposit({});
    // @ts-expect-error: unknown field
    void w.deposit({ amount: 1, extra: true });
    // @ts-expect-error: Float64Array is not Float32Array
    void w.samples({ xs: new Float64Array(3), flags: [] });
    // @ts-expect-error: numbers are not booleans
    void w.samples({ xs: [1, 2, 3], flags: [1] });
    // @ts-expect-error: tells check payloads too
    void w.tell.deposit({ amount: null });
  });

  it('keys are typed by the spec: integers by default, strings for key: "string"', () => {
    expectTypeOf(system.grain(Tagged, 'a').key).toEqualTypeOf<string>();
    // @ts-expect-error: Tagged has string keys
    system.grain(Tagged, 1);
    // @ts-expect-error: Wallet has integer keys
    system.grain(Wallet, 'one');
  });
});

describe('schema types', () => {
  it('Infer gives the decoded value: typed arrays for numeric arrays, nested objects', () => {
    const s = t.struct({ a: t.f32, b: t.bool, xs: t.vec(t.i32, 4), pts: t.array(t.struct({ x: t.f64 }), 2) });
    expectTypeOf<Infer<typeof s>>().toEqualTypeOf<{ a: number; b: boolean; xs: Int32Array; pts: { x: number }[] }>();
  });

  it('small integer kinds are numbers; their arrays are Uint8Array, Int8Array, Uint16Array, Int16Array', () => {
    const s = t.struct({
      a: t.u8,
      b: t.i8,
      c: t.u16,
      d: t.i16,
      bytes: t.vec(t.u8, 4),
      i8s: t.array(t.i8, 2),
      u16s: t.vec(t.u16, 2),
      i16s: t.array(t.i16, 2),
    });
    expectTypeOf<Infer<typeof s>>().toEqualTypeOf<{
      a: number;
      b: number;
      c: number;
      d: number;
      bytes: Uint8Array;
      i8s: Int8Array;
      u16s: Uint16Array;
      i16s: Int16Array;
    }>();
    expectTypeOf<Input<typeof s>['bytes']>().toEqualTypeOf<Uint8Array | readonly number[]>();
    expectTypeOf<Input<typeof s>['i16s']>().toEqualTypeOf<Int16Array | readonly number[]>();
    type V = StateView<typeof s>;
    expectTypeOf<V['a']>().toEqualTypeOf<number>();
    expectTypeOf<V['bytes']['items']>().toEqualTypeOf<Uint8Array>();
    expectTypeOf<V['i8s']>().toEqualTypeOf<Int8Array>();
    expectTypeOf<V['u16s']['items']>().toEqualTypeOf<Uint16Array>();
    expectTypeOf<V['i16s']>().toEqualTypeOf<Int16Array>();
    // @ts-expect-error: an Int8Array is not a byte array (Uint8Array)
    const wrong: Input<typeof s>['bytes'] = new Int8Array(2);
    void wrong;
  });

  it('state views are live: scalars assignable, vecs have length and items', () => {
    type V = TypesOf<typeof Wallet>['state'];
    expectTypeOf<V['balance']>().toEqualTypeOf<number>();
    expectTypeOf<V['history']['items']>().toEqualTypeOf<Float32Array>();
  });

  it('ctx.send checks the target method and payload', () => {
    const ctx = {} as GrainContext<number>;
    ctx.send(Wallet, 2, 'deposit', { amount: 1 });
    // @ts-expect-error: unknown method
    ctx.send(Wallet, 2, 'nope', { amount: 1 });
    // @ts-expect-error: wrong payload
    ctx.send(Wallet, 2, 'deposit', { amount: 'x' });
    // @ts-expect-error: wrong key kind
    ctx.send(Tagged, 2, 'bump', {});
  });
});

describe('askMany columns', () => {
  it('takes columns like tellMany and gives the replies as columns (numeric fields as Float64Array)', async () => {
    const r = await system.askMany(Wallet, 'deposit', { key: new Int32Array(2), amount: new Float64Array(2) });
    expectTypeOf(r.balance).toEqualTypeOf<Float64Array>();
    // @ts-expect-error: the reply has no such field
    void r.count;
    // @ts-expect-error: the request's field column is missing
    void system.askMany(Wallet, 'deposit', { key: [1] });
  });
});

describe('tellMany columns', () => {
  it('a key column and one column per request field; numeric fields take typed arrays or number[]', () => {
    expectTypeOf(
      system.tellMany(Wallet, 'deposit', { key: new Int32Array(2), amount: new Float64Array(2) }),
    ).toEqualTypeOf<number>();
    void system.tellMany(Wallet, 'note', { key: [1, 2], code: [3, 4] });
    // @ts-expect-error: a column for a field the request does not have
    void system.tellMany(Wallet, 'deposit', { key: [1], amount: [1], extra: [1] });
    // @ts-expect-error: the request's field column is missing
    void system.tellMany(Wallet, 'deposit', { key: [1] });
    // @ts-expect-error: no such method
    void system.tellMany(Wallet, 'withdraw', { key: [1], amount: [1] });
    // @ts-expect-error: a numeric field does not take strings
    void system.tellMany(Wallet, 'deposit', { key: [1], amount: ['1'] });
  });
});
