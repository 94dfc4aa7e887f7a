/**
 * Grain classes of the README programs (workers import this module by URL, so no test code lives here).
 */
import { Grain, t, type TypesOf } from '@ringgrain/core';

export class Account extends Grain({
  name: 'Account',
  module: import.meta.url,
  state: t.struct({ balance: t.f64, ops: t.u32 }),
  methods: {
    deposit: { request: t.struct({ amount: t.f64 }), reply: t.struct({ balance: t.f64 }) },
    transfer: { request: t.struct({ to: t.i32, amount: t.f64 }) },
    credit: { request: t.struct({ amount: t.f64 }) },
    get: { request: t.struct({}), reply: t.struct({ balance: t.f64, ops: t.u32 }) },
  },
}) {
  deposit(s: A['state'], m: A['req']['deposit']): A['reply']['deposit'] {
    s.balance += m.amount;
    s.ops += 1;
    return { balance: s.balance };
  }
  transfer(s: A['state'], m: A['req']['transfer'], ctx: A['ctx']): void {
    if (m.amount <= s.balance) {
      s.balance -= m.amount;
      ctx.send(Account, m.to, 'credit', { amount: m.amount });
    }
  }
  credit(s: A['state'], m: A['req']['credit']): void {
    s.balance += m.amount;
    s.ops += 1;
  }
  get(s: A['state']): A['reply']['get'] {
    return { balance: s.balance, ops: s.ops };
  }
}
type A = TypesOf<typeof Account>;

/** Sequence checks, throwing handlers, small-int state, bool fields, ctx.now, K2K relay. */
export class Probe extends Grain({
  name: 'Probe',
  module: import.meta.url,
  state: t.struct({ last: t.i32, bad: t.u32, count: t.u32, small: t.u8, signed: t.i8, flag: t.bool }),
  methods: {
    seq: { request: t.struct({ n: t.i32 }) },
    read: {
      request: t.struct({}),
      reply: t.struct({ last: t.i32, bad: t.u32, count: t.u32, small: t.u8, signed: t.i8, flag: t.bool }),
    },
    boom: { request: t.struct({ code: t.i32 }), reply: t.struct({ ok: t.bool }) },
    boomTell: { request: t.struct({ code: t.i32 }) },
    bump: { request: t.struct({ by: t.i32 }) },
    flip: { request: t.struct({ on: t.bool }), reply: t.struct({ on: t.bool }) },
    now: { request: t.struct({}), reply: t.struct({ t: t.f64 }) },
    relay: { request: t.struct({ to: t.i32, n: t.i32 }) },
    vec: {
      request: t.struct({ xs: t.vec(t.f64, 8), fixed: t.array(t.i16, 3) }),
      reply: t.struct({ n: t.u32, sum: t.f64, xs: t.vec(t.f64, 8) }),
    },
    blob: { request: t.struct({ bytes: t.vec(t.u8, 1000) }), reply: t.struct({ n: t.u32 }) },
  },
}) {
  seq(s: P['state'], m: P['req']['seq']): void {
    if (m.n !== s.last + 1) s.bad += 1;
    s.last = m.n;
    s.count += 1;
  }
  read(s: P['state']): P['reply']['read'] {
    return { last: s.last, bad: s.bad, count: s.count, small: s.small, signed: s.signed, flag: s.flag };
  }
  boom(s: P['state'], m: P['req']['boom']): P['reply']['boom'] {
    s.count += 1;
    if (m.code > 0) throw new Error('boom requested');
    return { ok: true };
  }
  boomTell(s: P['state'], m: P['req']['boomTell']): void {
    if (m.code > 0) throw new Error('boomTell requested');
    s.count += 1;
  }
  bump(s: P['state'], m: P['req']['bump']): void {
    s.small += m.by;
    s.signed += m.by;
  }
  flip(s: P['state'], m: P['req']['flip']): P['reply']['flip'] {
    s.flag = m.on;
    return { on: s.flag };
  }
  now(_s: P['state'], _m: P['req']['now'], ctx: P['ctx']): P['reply']['now'] {
    return { t: ctx.now() };
  }
  relay(s: P['state'], m: P['req']['relay'], ctx: P['ctx']): void {
    ctx.send(Probe, m.to, 'seq', { n: m.n });
    s.count += 1;
  }
  vec(_s: P['state'], m: P['req']['vec']): P['reply']['vec'] {
    let sum = 0;
    for (let i = 0; i < m.xs.length; i++) sum += m.xs[i]!;
    for (let i = 0; i < 3; i++) sum += m.fixed[i]!;
    return { n: m.xs.length, sum, xs: m.xs };
  }
  blob(_s: P['state'], m: P['req']['blob']): P['reply']['blob'] {
    return { n: m.bytes.length };
  }
}
type P = TypesOf<typeof Probe>;

/** A string-keyed class. */
export class Named extends Grain({
  name: 'NamedRP',
  module: import.meta.url,
  key: 'string',
  state: t.struct({ hits: t.u32 }),
  methods: {
    hit: { request: t.struct({ by: t.u32 }), reply: t.struct({ hits: t.u32 }) },
    poke: { request: t.struct({ by: t.u32 }) },
  },
}) {
  hit(s: N['state'], m: N['req']['hit']): N['reply']['hit'] {
    s.hits += m.by;
    return { hits: s.hits };
  }
  poke(s: N['state'], m: N['req']['poke']): void {
    s.hits += m.by;
  }
}
type N = TypesOf<typeof Named>;

/** A chain A → B → C with forward; the last one replies. */
export class Chain extends Grain({
  name: 'Chain',
  module: import.meta.url,
  state: t.struct({ seen: t.u32 }),
  methods: {
    walk: { request: t.struct({ hops: t.i32, acc: t.f64 }), reply: t.struct({ acc: t.f64, at: t.i32 }) },
  },
}) {
  walk(s: C['state'], m: C['req']['walk'], ctx: C['ctx']): C['reply']['walk'] {
    s.seen += 1;
    if (m.hops > 0) return ctx.forward(Chain, ctx.key + 1, 'walk', { hops: m.hops - 1, acc: m.acc + ctx.key });
    return { acc: m.acc + ctx.key, at: ctx.key };
  }
}
type C = TypesOf<typeof Chain>;

/** A timer grain on the injected clock. */
export class Ticker extends Grain({
  name: 'Ticker',
  module: import.meta.url,
  state: t.struct({ ticks: t.u32, lastAt: t.f64, fails: t.u32 }),
  methods: {
    onTick: { request: t.struct({}) },
    onBad: { request: t.struct({}) },
    read: { request: t.struct({}), reply: t.struct({ ticks: t.u32, lastAt: t.f64 }) },
    start: { request: t.struct({ periodMs: t.f64 }) },
    startBad: { request: t.struct({}) },
    relayNow: { request: t.struct({ to: t.i32 }), reply: t.struct({ t: t.f64 }) },
  },
  timers: { tick: { method: 'onTick', periodMs: 100 }, bad: { method: 'onBad', periodMs: 50, autoStart: false } },
}) {
  onTick(s: T['state'], _m: T['req']['onTick'], ctx: T['ctx']): void {
    s.ticks += 1;
    s.lastAt = ctx.now();
  }
  onBad(s: T['state']): void {
    s.fails += 1;
    throw new Error('tick failed');
  }
  read(s: T['state']): T['reply']['read'] {
    return { ticks: s.ticks, lastAt: s.lastAt };
  }
  start(_s: T['state'], m: T['req']['start'], ctx: T['ctx']): void {
    ctx.startTimer('tick', { periodMs: m.periodMs });
  }
  startBad(_s: T['state'], _m: T['req']['startBad'], ctx: T['ctx']): void {
    ctx.startTimer('bad', {});
  }
  relayNow(_s: T['state'], m: T['req']['relayNow'], ctx: T['ctx']): T['reply']['relayNow'] {
    ctx.send(Ticker, m.to, 'onTick', {});
    return { t: ctx.now() };
  }
}
type T = TypesOf<typeof Ticker>;

/** Never registered: a K2K send to it has nowhere to go. */
export class Orphan extends Grain({
  name: 'Orphan',
  module: import.meta.url,
  state: t.struct({ n: t.u32 }),
  methods: { ping: { request: t.struct({ v: t.i32 }) } },
}) {
  ping(s: O['state']): void {
    s.n += 1;
  }
}
type O = TypesOf<typeof Orphan>;

/** ctx.send / ctx.forward with arguments a careful user gets wrong: each must fail the turn, typed. */
export class Sender extends Grain({
  name: 'SenderRP',
  module: import.meta.url,
  state: t.struct({ sent: t.u32 }),
  methods: {
    badKey: { request: t.struct({ to: t.f64 }), reply: t.struct({ ok: t.bool }) },
    badPayload: { request: t.struct({ n: t.f64 }), reply: t.struct({ ok: t.bool }) },
    toOrphan: { request: t.struct({}), reply: t.struct({ ok: t.bool }) },
    badMethod: { request: t.struct({}), reply: t.struct({ ok: t.bool }) },
    forwardTell: { request: t.struct({ to: t.i32 }) },
    forwardToTellOnly: { request: t.struct({ to: t.i32 }), reply: t.struct({ ok: t.bool }) },
  },
}) {
  badKey(s: SR['state'], m: SR['req']['badKey'], ctx: SR['ctx']): SR['reply']['badKey'] {
    ctx.send(Probe, m.to, 'seq', { n: 1 });
    s.sent += 1;
    return { ok: true };
  }
  badPayload(s: SR['state'], m: SR['req']['badPayload'], ctx: SR['ctx']): SR['reply']['badPayload'] {
    ctx.send(Probe, 1, 'seq', { n: m.n });
    s.sent += 1;
    return { ok: true };
  }
  toOrphan(s: SR['state'], _m: SR['req']['toOrphan'], ctx: SR['ctx']): SR['reply']['toOrphan'] {
    ctx.send(Orphan, 1, 'ping', { v: 1 });
    s.sent += 1;
    return { ok: true };
  }
  badMethod(s: SR['state'], _m: SR['req']['badMethod'], ctx: SR['ctx']): SR['reply']['badMethod'] {
    ctx.send(Probe, 1, 'nope' as 'seq', { n: 1 });
    s.sent += 1;
    return { ok: true };
  }
  forwardTell(_s: SR['state'], m: SR['req']['forwardTell'], ctx: SR['ctx']): void {
    ctx.forward(Chain, m.to, 'walk', { hops: 2, acc: 0 });
  }
  forwardToTellOnly(
    _s: SR['state'],
    m: SR['req']['forwardToTellOnly'],
    ctx: SR['ctx'],
  ): SR['reply']['forwardToTellOnly'] {
    return ctx.forward(Probe, m.to, 'seq', { n: 1 }) as never;
  }
}
type SR = TypesOf<typeof Sender>;

/** Handlers that return what their reply schema does not allow. */
export class Replier extends Grain({
  name: 'Replier',
  module: import.meta.url,
  state: t.struct({ n: t.u32, f: t.f32 }),
  methods: {
    missing: { request: t.struct({}), reply: t.struct({ ok: t.bool, v: t.i32 }) },
    wrongType: { request: t.struct({}), reply: t.struct({ v: t.i32 }) },
    tooBig: { request: t.struct({}), reply: t.struct({ v: t.u8 }) },
    nothing: { request: t.struct({}), reply: t.struct({ v: t.i32 }) },
    tellOnly: { request: t.struct({ by: t.u32 }) },
    read: { request: t.struct({}), reply: t.struct({ n: t.u32, f: t.f32 }) },
  },
}) {
  missing(): R['reply']['missing'] {
    return { ok: true } as never;
  }
  wrongType(): R['reply']['wrongType'] {
    return { v: 'seven' } as never;
  }
  tooBig(): R['reply']['tooBig'] {
    return { v: 300 };
  }
  nothing(): R['reply']['nothing'] {
    return undefined as never;
  }
  tellOnly(s: R['state'], m: R['req']['tellOnly']): void {
    s.n += m.by;
    s.f = 0.1;
  }
  read(s: R['state']): R['reply']['read'] {
    return { n: s.n, f: s.f };
  }
}
type R = TypesOf<typeof Replier>;

/** A handler that ends its thread (process.exit in a CPU worker): the lane is restarted. Run it on 'cpu' only. */
export class Exiter extends Grain({
  name: 'Exiter',
  module: import.meta.url,
  state: t.struct({ n: t.u32 }),
  methods: {
    exit: { request: t.struct({ code: t.i32 }), reply: t.struct({ ok: t.bool }) },
    exitTell: { request: t.struct({ code: t.i32 }) },
    inc: { request: t.struct({}), reply: t.struct({ n: t.u32 }) },
  },
}) {
  exit(_s: X['state'], m: X['req']['exit']): X['reply']['exit'] {
    process.exit(m.code);
  }
  exitTell(_s: X['state'], m: X['req']['exitTell']): void {
    process.exit(m.code);
  }
  inc(s: X['state']): X['reply']['inc'] {
    s.n += 1;
    return { n: s.n };
  }
}
type X = TypesOf<typeof Exiter>;
