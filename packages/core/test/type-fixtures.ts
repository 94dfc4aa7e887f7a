import { Grain, t, type TypesOf } from '../src/index.ts';

/** Grain classes for the type tests (an importable module, like every grain class). */
export class Wallet extends Grain({
  name: 'Wallet',
  module: import.meta.url,
  state: t.struct({ balance: t.f64, history: t.vec(t.f32, 8) }),
  methods: {
    deposit: { request: t.struct({ amount: t.f64 }), reply: t.struct({ balance: t.f64 }) },
    samples: { request: t.struct({ xs: t.array(t.f32, 3), flags: t.vec(t.bool, 2) }), reply: t.struct({ n: t.u32 }) },
    note: { request: t.struct({ code: t.i32 }) },
  },
}) {
  deposit(s: W['state'], m: W['req']['deposit']): W['reply']['deposit'] {
    s.balance += m.amount;
    return { balance: s.balance };
  }
  samples(_s: W['state'], m: W['req']['samples']): W['reply']['samples'] {
    return { n: m.xs.length + m.flags.length };
  }
  note(_s: W['state'], _m: W['req']['note']): void {}
}
type W = TypesOf<typeof Wallet>;

export class Tagged extends Grain({
  name: 'Tagged',
  module: import.meta.url,
  key: 'string',
  state: t.struct({ n: t.u32 }),
  methods: { bump: { request: t.struct({}), reply: t.struct({ n: t.u32 }) } },
}) {
  bump(s: G['state']): G['reply']['bump'] {
    s.n += 1;
    return { n: s.n };
  }
}
type G = TypesOf<typeof Tagged>;
