import { Grain, t, type TypesOf } from '@ringgrain/core';

/**
 * The benchmark grain: the smallest useful handlers. `ping` answers (round trip), `hit` is one-way
 * (throughput). The raw worker and Piscina baselines run these same methods (workers/*.mjs import this file).
 */
export class Echo extends Grain({
  name: 'Echo',
  module: import.meta.url,
  state: t.struct({ hits: t.u32, sum: t.f64 }),
  methods: {
    ping: { request: t.struct({ x: t.i32 }), reply: t.struct({ x: t.i32 }) },
    hit: { request: t.struct({ x: t.i32 }) },
  },
}) {
  ping(s: E['state'], m: E['req']['ping']): E['reply']['ping'] {
    s.hits += 1;
    return { x: m.x };
  }

  hit(s: E['state'], m: E['req']['hit']): void {
    s.hits += 1;
    s.sum += m.x;
  }
}
type E = TypesOf<typeof Echo>;

/** Actors of the on-device K2K benchmarks (bench/gpu: hop latency, throughput with 1M actors). */
export const RELAY_ACTORS = 1048576;

export class Relay extends Grain({
  name: 'Relay',
  module: import.meta.url,
  state: t.struct({ n: t.u32 }),
  methods: {
    /** A forward chain of `left` K2K hops; the last actor answers the asker. */
    chain: { request: t.struct({ left: t.u32 }), reply: t.struct({ at: t.i32, n: t.u32 }) },
    /** One-way: count, then pass it on to a pseudo-random actor until ttl runs out. */
    spread: { request: t.struct({ ttl: t.u32 }) },
    count: { request: t.struct({}), reply: t.struct({ n: t.u32 }) },
  },
}) {
  chain(s: R['state'], m: R['req']['chain'], ctx: R['ctx']): R['reply']['chain'] {
    s.n += 1;
    if (m.left === 0) return { at: ctx.key, n: s.n };
    return ctx.forward(Relay, (ctx.key + 1) % RELAY_ACTORS, 'chain', { left: m.left - 1 });
  }

  spread(s: R['state'], m: R['req']['spread'], ctx: R['ctx']): void {
    s.n += 1;
    if (m.ttl > 0) ctx.send(Relay, (ctx.key * 7919 + 13) % RELAY_ACTORS, 'spread', { ttl: m.ttl - 1 });
  }

  count(s: R['state']): R['reply']['count'] {
    return { n: s.n };
  }
}
type R = TypesOf<typeof Relay>;

/**
 * Divergence benchmark (bench/divergence.ts): four structurally different loops, chosen per message, so a
 * worker warp whose lanes hold messages of different paths runs the paths one after the other (SIMT).
 */
export class Branchy extends Grain({
  name: 'Branchy',
  module: import.meta.url,
  state: t.struct({ acc: t.f64, turns: t.u32 }),
  methods: {
    work: { request: t.struct({ path: t.i32, iters: t.i32 }) },
    turns: { request: t.struct({}), reply: t.struct({ turns: t.u32 }) },
  },
}) {
  work(s: B['state'], m: B['req']['work']): void {
    let x = s.acc;
    const n = m.iters;
    const p = m.path & 3;
    if (p === 0) {
      for (let i = 0; i < n; i++) x = x * 0.999 + 1;
    } else if (p === 1) {
      for (let i = 0; i < n; i++) x = x / 1.001 + 1;
    } else if (p === 2) {
      for (let i = 0; i < n; i++) x = Math.sqrt(x * x + 1);
    } else {
      for (let i = 0; i < n; i++) x = x - Math.floor(x * 0.001) + 1;
    }
    s.acc = x;
    s.turns += 1;
  }

  turns(s: B['state']): B['reply']['turns'] {
    return { turns: s.turns };
  }
}
type B = TypesOf<typeof Branchy>;

/**
 * The chain benchmark (bench/chains.ts, Savina's ThreadRing): `pass` counts, then sends the token on to the
 * next key of a ring of `n` actors until `left` runs out; `bounce` sends it to the other actor of its pair
 * (keys 2i and 2i+1: ping/pong). One message in flight per token, so a token's hops run one after another.
 */
export class Link extends Grain({
  name: 'Link',
  module: import.meta.url,
  state: t.struct({ n: t.u32 }),
  methods: {
    pass: { request: t.struct({ n: t.u32, left: t.u32 }) },
    bounce: { request: t.struct({ left: t.u32 }) },
    count: { request: t.struct({}), reply: t.struct({ n: t.u32 }) },
  },
}) {
  pass(s: L['state'], m: L['req']['pass'], ctx: L['ctx']): void {
    s.n += 1;
    if (m.left > 0) ctx.send(Link, (ctx.key + 1) % m.n, 'pass', { n: m.n, left: m.left - 1 });
  }

  bounce(s: L['state'], m: L['req']['bounce'], ctx: L['ctx']): void {
    s.n += 1;
    if (m.left > 0) {
      if (ctx.key % 2 === 0) ctx.send(Link, ctx.key + 1, 'bounce', { left: m.left - 1 });
      else ctx.send(Link, ctx.key - 1, 'bounce', { left: m.left - 1 });
    }
  }

  count(s: L['state']): L['reply']['count'] {
    return { n: s.n };
  }
}
type L = TypesOf<typeof Link>;
