/**
 * Typed programs (type level only): grain definitions, TypesOf and its parts, handlers, ctx.
 * Every `@ts-expect-error` line must fail to compile; if it ever compiles, the check itself errors.
 */
import { describe, expectTypeOf, it } from 'vitest';
import { Grain, t, type GrainContext, type Infer, type TypesOf } from '@ringgrain/core';
import type { Forwarded, Input, StateView } from '@ringgrain/core/types';
import { Account, Body, Directory, Heart, type Sensor } from './grains.ts';

type A = TypesOf<typeof Account>;
type B = TypesOf<typeof Body>;
type D = TypesOf<typeof Directory>;

describe('TypesOf parts', () => {
  it(
    "'state' is the live view: scalars assignable, nested structs, vec { length, items }, arrays as typed " + 'arrays',
    () => {
      expectTypeOf<A['state']>().toEqualTypeOf<{ balance: number; ops: number }>();
      expectTypeOf<B['state']['pos']>().toEqualTypeOf<{ x: number; y: number; z: number }>();
      expectTypeOf<B['state']['trail']>().toEqualTypeOf<{ length: number; readonly items: Float32Array }>();
      expectTypeOf<B['state']['grid']>().toEqualTypeOf<Uint8Array>();
      expectTypeOf<B['state']['alive']>().toEqualTypeOf<boolean>();
      expectTypeOf<B['state']['hits']>().toEqualTypeOf<number>();
      // bool arrays in a state are bytes (0/1)
      expectTypeOf<B['state']['flags']['items']>().toEqualTypeOf<Uint8Array>();
      expectTypeOf<B['state']['joints']>().toEqualTypeOf<{ angle: number; locked: boolean }[]>();
    },
  );

  it("'req' is the decoded request: typed arrays for numeric arrays, boolean[] for bool arrays", () => {
    expectTypeOf<A['req']['deposit']>().toEqualTypeOf<{ amount: number }>();
    expectTypeOf<A['req']['transfer']>().toEqualTypeOf<{ to: number; amount: number }>();
    expectTypeOf<B['req']['record']>().toEqualTypeOf<{ samples: Float32Array; mask: boolean[] }>();
    expectTypeOf<B['req']['paint']>().toEqualTypeOf<{ cells: Uint8Array; alive: boolean }>();
    expectTypeOf<B['req']['setJoints']>().toEqualTypeOf<{ joints: { angle: number; locked: boolean }[] }>();
    expectTypeOf<B['req']['ping']>().toEqualTypeOf<{}>();
    // @ts-expect-error: no such method in 'req'
    type Nope = A['req']['withdraw'];
  });

  it("'reply' is what a handler returns: the reply's input type, void for tell-only, or a forward", () => {
    expectTypeOf<A['reply']['deposit']>().toEqualTypeOf<{ balance: number } | Forwarded>();
    expectTypeOf<A['reply']['credit']>().toEqualTypeOf<void | Forwarded>();
    expectTypeOf<B['reply']['record']>().toEqualTypeOf<
      { n: number; sum: Float32Array | readonly number[] } | Forwarded
    >();
    const ok: B['reply']['snapshot'] = {
      alive: true,
      hits: 1,
      grid: [1, 2, 3, 4],
      tag: new Int32Array(3),
      flags: [true],
    };
    void ok;
    // @ts-expect-error: reply field of the wrong type
    const bad: A['reply']['deposit'] = { balance: '1' };
    // @ts-expect-error: reply field missing
    const missing: A['reply']['deposit'] = {};
    void bad, missing;
  });

  it("'ctx' and 'key' follow the key kind", () => {
    expectTypeOf<A['ctx']>().toEqualTypeOf<GrainContext<number>>();
    expectTypeOf<D['ctx']>().toEqualTypeOf<GrainContext<string>>();
    expectTypeOf<A['key']>().toEqualTypeOf<number>();
    expectTypeOf<D['key']>().toEqualTypeOf<string>();
    expectTypeOf<A['ctx']['key']>().toEqualTypeOf<number>();
    expectTypeOf<A['ctx']['now']>().returns.toEqualTypeOf<number>();
  });

  it('schemas: Infer/Input of every kind', () => {
    const s = t.struct({
      a: t.f32,
      b: t.f64,
      c: t.i8,
      d: t.u8,
      e: t.i16,
      f: t.u16,
      g: t.i32,
      h: t.u32,
      ok: t.bool,
      v: t.vec(t.f64, 3),
      arr: t.array(t.u32, 2),
      bs: t.vec(t.bool, 2),
      n: t.struct({ m: t.struct({ q: t.i32 }) }),
    });
    expectTypeOf<Infer<typeof s>>().toEqualTypeOf<{
      a: number;
      b: number;
      c: number;
      d: number;
      e: number;
      f: number;
      g: number;
      h: number;
      ok: boolean;
      v: Float64Array;
      arr: Uint32Array;
      bs: boolean[];
      n: { m: { q: number } };
    }>();
    expectTypeOf<Input<typeof s>['v']>().toEqualTypeOf<Float64Array | readonly number[]>();
    expectTypeOf<Input<typeof s>['bs']>().toEqualTypeOf<readonly boolean[]>();
    expectTypeOf<StateView<typeof s>['n']['m']['q']>().toEqualTypeOf<number>();
    expectTypeOf<StateView<typeof s>['v']['items']>().toEqualTypeOf<Float64Array>();
    expectTypeOf<StateView<typeof s>['arr']>().toEqualTypeOf<Uint32Array>();
  });
});

describe('handlers', () => {
  it('a handler may take fewer parameters; the class is a grain class', () => {
    class Counter extends Grain({
      name: 'Counter',
      module: import.meta.url,
      state: t.struct({ n: t.u32 }),
      methods: { inc: { request: t.struct({}) }, get: { request: t.struct({}), reply: t.struct({ n: t.u32 }) } },
    }) {
      inc(s: C['state']): void {
        s.n += 1;
      }
      get(s: C['state']): C['reply']['get'] {
        return { n: s.n };
      }
    }
    type C = TypesOf<typeof Counter>;
    expectTypeOf(Counter.grain.name).toEqualTypeOf<string>();
    expectTypeOf(Counter.grain.keyKind).toEqualTypeOf<'int' | 'string'>();
    expectTypeOf<C['req']['inc']>().toEqualTypeOf<{}>();
  });

  it('the class type carrier `$` names the same types', () => {
    expectTypeOf<Account['$']>().toEqualTypeOf<A>();
  });
});

describe('ctx.send and ctx.forward', () => {
  it('checks class, key kind, method name and payload', () => {
    const ctx = {} as A['ctx'];
    ctx.send(Account, 7, 'credit', { amount: 1 });
    ctx.send(Body, 1, 'paint', { cells: [1, 2, 3, 4], alive: true });
    ctx.send(Body, 1, 'record', { samples: new Float32Array(2), mask: [true, false, true, false] });
    ctx.send(Body, 1, 'setJoints', {
      joints: [
        { angle: 1, locked: false },
        { angle: 2, locked: true },
      ],
    });
    ctx.send(Directory, 'alice', 'assign', { owner: 3 });
    // @ts-expect-error: unknown method
    ctx.send(Account, 7, 'withdraw', { amount: 1 });
    // @ts-expect-error: wrong payload field type
    ctx.send(Account, 7, 'credit', { amount: '1' });
    // @ts-expect-error: unknown payload field
    ctx.send(Account, 7, 'credit', { amount: 1, memo: 'x' });
    // @ts-expect-error: missing payload field
    ctx.send(Account, 7, 'transfer', { amount: 1 });
    // @ts-expect-error: a string key for an int-keyed class
    ctx.send(Account, '7', 'credit', { amount: 1 });
    // @ts-expect-error: an int key for a string-keyed class
    ctx.send(Directory, 7, 'assign', { owner: 3 });
    // @ts-expect-error: wrong typed array kind
    ctx.send(Body, 1, 'record', { samples: new Float64Array(2), mask: [] });
    // @ts-expect-error: nested struct field of the wrong type
    ctx.send(Body, 1, 'setJoints', { joints: [{ angle: 1, locked: 1 }] });
    // @ts-expect-error: ctx.send returns nothing
    const r: number = ctx.send(Account, 7, 'credit', { amount: 1 });
    void r;
  });

  it('forward returns Forwarded, a valid handler result, and checks like send', () => {
    const ctx = {} as D['ctx'];
    const f = ctx.forward(Account, 1, 'deposit', { amount: 0 });
    expectTypeOf(f).toEqualTypeOf<Forwarded>();
    const asReply: A['reply']['deposit'] = f;
    void asReply;
    // @ts-expect-error: unknown method
    ctx.forward(Account, 1, 'balance', {});
    // @ts-expect-error: wrong payload field type
    ctx.forward(Account, 1, 'deposit', { amount: true });
    // @ts-expect-error: a forward is not a reply value a caller can read
    const n: { balance: number } = f;
    void n;
  });

  it('timers and reminders from a handler', () => {
    const ctx = {} as TypesOf<typeof Sensor>['ctx'];
    ctx.startTimer('sampler');
    ctx.startTimer('sampler', { periodMs: 50 });
    ctx.startTimer('sampler', { dueMs: 0 });
    ctx.stopTimer('sampler');
    ctx.setReminder('daily', { periodMs: 86_400_000, dueMs: 60_000 });
    ctx.clearReminder('daily');
    // @ts-expect-error: a reminder needs its period
    ctx.setReminder('daily', { dueMs: 1 });
    // @ts-expect-error: periodMs is a number
    ctx.startTimer('sampler', { periodMs: '50' });
    // @ts-expect-error: no such option
    ctx.startTimer('sampler', { every: 50 });
    expectTypeOf(Heart.grain.timers[0]!.autoStart).toEqualTypeOf<boolean>();
  });
});

describe('grain spec errors at compile time', () => {
  it('a request must be a struct schema; the spec needs module and state', () => {
    // @ts-expect-error: request is a scalar, not a t.struct
    Grain({ name: 'X', module: import.meta.url, state: t.struct({}), methods: { m: { request: t.f64 } } });
    // @ts-expect-error: state missing
    Grain({ name: 'X', module: import.meta.url, methods: { m: { request: t.struct({}) } } });
    Grain({
      name: 'X',
      module: import.meta.url,
      // @ts-expect-error: key is 'int' or 'string'
      key: 'uuid',
      state: t.struct({}),
      methods: { m: { request: t.struct({}) } },
    });
    Grain({
      name: 'X',
      module: import.meta.url,
      state: t.struct({}),
      methods: { m: { request: t.struct({}) } },
      // @ts-expect-error: a timer's period is a number
      timers: { a: { method: 'm', periodMs: '1s' } },
    });
  });
});
