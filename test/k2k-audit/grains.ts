/**
 * Grain classes of the K2K audit (workers import this module by URL, so no test code lives here).
 *
 * Sender numbering for the FIFO checks (a receiver keeps, per sender, the last sequence number seen):
 * host senders 0..HOSTS-1, Src actor k → SRC0 + k, Sink actor k → SINK0 + k.
 */
import { Grain, t, type TypesOf } from '@ringgrain/core';

export const HOSTS = 4;
export const SRCS = 8;
export const SINKS = 24;
export const SRC0 = HOSTS;
export const SINK0 = HOSTS + SRCS;
export const SENDERS = HOSTS + SRCS + SINKS;
/** Most targets in one fan-out message. */
export const FAN = 32;

const seqReply = t.struct({ last: t.array(t.i32, SENDERS), bad: t.u32, count: t.u32, first: t.i32 });

/** A receiver that is also a sender: seq checks FIFO per sender; fan sends numbered messages to other Sinks. */
export class Sink extends Grain({
  name: 'Sink',
  module: import.meta.url,
  state: t.struct({ last: t.array(t.i32, SENDERS), bad: t.u32, count: t.u32, first: t.i32, next: t.array(t.i32, SINKS) }),
  methods: {
    seq: { request: t.struct({ s: t.i32, n: t.i32 }) },
    /** seq as an ask: answers the count so far. */
    seqAck: { request: t.struct({ s: t.i32, n: t.i32 }), reply: t.struct({ count: t.u32 }) },
    fan: { request: t.struct({ to: t.vec(t.i32, FAN) }) },
    burst: { request: t.struct({ to: t.i32, n: t.i32 }) },
    read: { request: t.struct({}), reply: seqReply },
  },
}) {
  seq(s: K['state'], m: K['req']['seq']): void {
    // `first` records the first violation (sender * 1e6 + n) for a readable failure.
    if (m.n !== s.last[m.s]! + 1) {
      if (s.bad === 0) s.first = m.s * 1_000_000 + m.n;
      s.bad += 1;
    }
    s.last[m.s] = m.n;
    s.count += 1;
  }
  seqAck(s: K['state'], m: K['req']['seqAck']): K['reply']['seqAck'] {
    this.seq(s, m);
    return { count: s.count };
  }
  fan(s: K['state'], m: K['req']['fan'], ctx: K['ctx']): void {
    for (let i = 0; i < m.to.length; i++) {
      const to = m.to[i]!;
      s.next[to] = s.next[to]! + 1;
      ctx.send(Sink, to, 'seq', { s: SINK0 + ctx.key, n: s.next[to]! });
    }
  }
  burst(s: K['state'], m: K['req']['burst'], ctx: K['ctx']): void {
    for (let i = 0; i < m.n; i++) {
      s.next[m.to] = s.next[m.to]! + 1;
      ctx.send(Sink, m.to, 'seq', { s: SINK0 + ctx.key, n: s.next[m.to]! });
    }
  }
  read(s: K['state']): K['reply']['read'] {
    return { last: s.last, bad: s.bad, count: s.count, first: s.first };
  }
}
type K = TypesOf<typeof Sink>;

/** The receiver of the lifecycle test: the same checks as Sink, in its own kernel. */
export class Gate extends Grain({
  name: 'Gate',
  module: import.meta.url,
  state: t.struct({ last: t.array(t.i32, SENDERS), bad: t.u32, count: t.u32, first: t.i32 }),
  methods: {
    seq: { request: t.struct({ s: t.i32, n: t.i32 }) },
    read: { request: t.struct({}), reply: seqReply },
  },
}) {
  seq(s: G['state'], m: G['req']['seq']): void {
    if (m.n !== s.last[m.s]! + 1) {
      if (s.bad === 0) s.first = m.s * 1_000_000 + m.n;
      s.bad += 1;
    }
    s.last[m.s] = m.n;
    s.count += 1;
  }
  read(s: G['state']): G['reply']['read'] {
    return { last: s.last, bad: s.bad, count: s.count, first: s.first };
  }
}
type G = TypesOf<typeof Gate>;

/** Another class's senders into Sink (and Gate): numbered per target in its state. */
export class Src extends Grain({
  name: 'Src',
  module: import.meta.url,
  state: t.struct({ next: t.array(t.i32, SINKS), gnext: t.array(t.i32, SINKS), turns: t.u32 }),
  methods: {
    fan: { request: t.struct({ to: t.vec(t.i32, FAN) }) },
    burst: { request: t.struct({ to: t.i32, n: t.i32 }) },
    fanGate: { request: t.struct({ to: t.vec(t.i32, FAN), rounds: t.i32 }) },
    /** Sends to to[0..throwAt-1], then throws (before the rest). An ask answers { sent } when it does not throw. */
    fanThrow: { request: t.struct({ to: t.vec(t.i32, FAN), throwAt: t.i32 }), reply: t.struct({ sent: t.i32 }) },
    fanThrowTell: { request: t.struct({ to: t.vec(t.i32, FAN), throwAt: t.i32 }) },
    next: { request: t.struct({}), reply: t.struct({ next: t.array(t.i32, SINKS), turns: t.u32 }) },
    /** One turn: a send, a forward (Sink.seqAck answers the asker) and a send, all to Sink `to`. */
    mix: { request: t.struct({ to: t.i32 }), reply: t.struct({ count: t.u32 }) },
  },
}) {
  fan(s: S['state'], m: S['req']['fan'], ctx: S['ctx']): void {
    s.turns += 1;
    for (let i = 0; i < m.to.length; i++) {
      const to = m.to[i]!;
      s.next[to] = s.next[to]! + 1;
      ctx.send(Sink, to, 'seq', { s: SRC0 + ctx.key, n: s.next[to]! });
    }
  }
  burst(s: S['state'], m: S['req']['burst'], ctx: S['ctx']): void {
    s.turns += 1;
    for (let i = 0; i < m.n; i++) {
      s.next[m.to] = s.next[m.to]! + 1;
      ctx.send(Sink, m.to, 'seq', { s: SRC0 + ctx.key, n: s.next[m.to]! });
    }
  }
  fanGate(s: S['state'], m: S['req']['fanGate'], ctx: S['ctx']): void {
    s.turns += 1;
    for (let r = 0; r < m.rounds; r++) {
      for (let i = 0; i < m.to.length; i++) {
        const to = m.to[i]!;
        s.gnext[to] = s.gnext[to]! + 1;
        ctx.send(Gate, to, 'seq', { s: SRC0 + ctx.key, n: s.gnext[to]! });
      }
    }
  }
  fanThrow(s: S['state'], m: S['req']['fanThrow'], ctx: S['ctx']): S['reply']['fanThrow'] {
    s.turns += 1;
    for (let i = 0; i < m.to.length; i++) {
      if (i === m.throwAt) throw new Error(`fanThrow at ${i} of ${m.to.length}`);
      const to = m.to[i]!;
      s.next[to] = s.next[to]! + 1;
      ctx.send(Sink, to, 'seq', { s: SRC0 + ctx.key, n: s.next[to]! });
    }
    return { sent: m.to.length };
  }
  fanThrowTell(s: S['state'], m: S['req']['fanThrowTell'], ctx: S['ctx']): void {
    this.fanThrow(s, m, ctx);
  }
  mix(s: S['state'], m: S['req']['mix'], ctx: S['ctx']): S['reply']['mix'] {
    s.turns += 1;
    const me = SRC0 + ctx.key;
    s.next[m.to] = s.next[m.to]! + 1;
    ctx.send(Sink, m.to, 'seq', { s: me, n: s.next[m.to]! });
    s.next[m.to] = s.next[m.to]! + 1;
    const r = ctx.forward(Sink, m.to, 'seqAck', { s: me, n: s.next[m.to]! });
    s.next[m.to] = s.next[m.to]! + 1;
    ctx.send(Sink, m.to, 'seq', { s: me, n: s.next[m.to]! });
    return r;
  }
  next(s: S['state']): S['reply']['next'] {
    return { next: s.next, turns: s.turns };
  }
}
type S = TypesOf<typeof Src>;

// ---- forward chains ----------------------------------------------------------------------------------

/** Path element: v ≥ 0 is Fwd key v; v < 0 is FwdS key `s${-v - 1}`. */
export const PATH = 64;
export const MODE = { sendBefore: 1, sendAfter: 2, throwLast: 4, forwardToTell: 8, forwardToOtherSchema: 16, throwAfterForward: 32 } as const;

const hopReq = t.struct({ path: t.vec(t.i32, PATH), i: t.u32, acc: t.f64, mode: t.u32, tag: t.i32 });
const hopReply = t.struct({ acc: t.f64, at: t.i32, hops: t.u32, tag: t.i32 });

/** The numeric id a hop adds to acc: an int key itself, a string key `s<n>` → -(n + 1). */
function idOf(key: number | string): number {
  if (typeof key === 'number') return key;
  if (!/^s\d+$/.test(key)) throw new Error(`unexpected string key ${JSON.stringify(key)}`);
  return -Number(key.slice(1)) - 1;
}

type HopReq = { path: Int32Array; i: number; acc: number; mode: number; tag: number };
type HopCtx = { readonly key: number | string; send: (...a: never[]) => void; forward: (...a: never[]) => unknown };

function hop(seen: { seen: number }, m: HopReq, ctx: HopCtx, keyKind: 'int' | 'string'): unknown {
  if (typeof ctx.key !== (keyKind === 'int' ? 'number' : 'string')) throw new Error(`ctx.key ${String(ctx.key)} is a ${typeof ctx.key}`);
  seen.seen += 1;
  const acc = m.acc + idOf(ctx.key);
  const c = ctx as unknown as { send: (g: unknown, k: unknown, m: string, p: unknown) => void; forward: (g: unknown, k: unknown, m: string, p: unknown) => unknown };
  // The tally of each hop goes to Tally key = tag (an int), and to the string-keyed tally `t<tag>`.
  if (m.mode & MODE.sendBefore) c.send(Tally, m.tag, 'inc', { by: 1 });
  if (m.i < m.path.length) {
    const v = m.path[m.i]!;
    const next = { path: m.path, i: m.i + 1, acc, mode: m.mode, tag: m.tag };
    const r = v >= 0 ? c.forward(Fwd, v, 'hop', next) : c.forward(FwdS, `s${-v - 1}`, 'hop', next);
    if (m.mode & MODE.sendAfter) c.send(TallyS, `t${m.tag}`, 'inc', { by: 1 });
    if (m.mode & MODE.throwAfterForward) throw new Error(`after forward at ${String(ctx.key)}`);
    return r;
  }
  if (m.mode & MODE.throwLast) throw new Error(`chain end ${String(ctx.key)} tag ${m.tag}`);
  if (m.mode & MODE.forwardToTell) return c.forward(Tally, m.tag, 'inc', { by: 100 });
  if (m.mode & MODE.forwardToOtherSchema) return c.forward(Tally, m.tag, 'read', {});
  if (m.mode & MODE.sendAfter) c.send(TallyS, `t${m.tag}`, 'inc', { by: 1 });
  return { acc, at: idOf(ctx.key), hops: m.i, tag: m.tag };
}

export class Fwd extends Grain({
  name: 'Fwd',
  module: import.meta.url,
  state: t.struct({ seen: t.u32 }),
  methods: {
    hop: { request: hopReq, reply: hopReply },
    seen: { request: t.struct({}), reply: t.struct({ seen: t.u32 }) },
  },
}) {
  hop(s: F['state'], m: F['req']['hop'], ctx: F['ctx']): F['reply']['hop'] {
    return hop(s, m, ctx as never, 'int') as F['reply']['hop'];
  }
  seen(s: F['state']): F['reply']['seen'] {
    return { seen: s.seen };
  }
}
type F = TypesOf<typeof Fwd>;

export class FwdS extends Grain({
  name: 'FwdS',
  module: import.meta.url,
  key: 'string',
  state: t.struct({ seen: t.u32 }),
  methods: {
    hop: { request: hopReq, reply: hopReply },
    seen: { request: t.struct({}), reply: t.struct({ seen: t.u32 }) },
  },
}) {
  hop(s: FS['state'], m: FS['req']['hop'], ctx: FS['ctx']): FS['reply']['hop'] {
    return hop(s, m, ctx as never, 'string') as FS['reply']['hop'];
  }
  seen(s: FS['state']): FS['reply']['seen'] {
    return { seen: s.seen };
  }
}
type FS = TypesOf<typeof FwdS>;

export class Tally extends Grain({
  name: 'Tally',
  module: import.meta.url,
  state: t.struct({ n: t.f64 }),
  methods: {
    inc: { request: t.struct({ by: t.f64 }) },
    read: { request: t.struct({}), reply: t.struct({ n: t.f64 }) },
    /** int → string: counts `by` here, then sends it to TallyS `t<key>`. */
    back: { request: t.struct({ by: t.f64 }) },
  },
}) {
  inc(s: T['state'], m: T['req']['inc']): void {
    s.n += m.by;
  }
  back(s: T['state'], m: T['req']['back'], ctx: T['ctx']): void {
    s.n += m.by;
    ctx.send(TallyS, `t${ctx.key}`, 'inc', { by: m.by });
  }
  read(s: T['state']): T['reply']['read'] {
    return { n: s.n };
  }
}
type T = TypesOf<typeof Tally>;

export class TallyS extends Grain({
  name: 'TallyS',
  module: import.meta.url,
  key: 'string',
  state: t.struct({ n: t.f64, keyOk: t.bool }),
  methods: {
    inc: { request: t.struct({ by: t.f64 }) },
    read: { request: t.struct({}), reply: t.struct({ n: t.f64, keyOk: t.bool }) },
    /** string → int → string: Tally `to` counts `by` and sends it on to TallyS `t<to>`. */
    relay: { request: t.struct({ to: t.i32, by: t.f64 }) },
  },
}) {
  inc(s: TS['state'], m: TS['req']['inc'], ctx: TS['ctx']): void {
    s.n += m.by;
    s.keyOk = typeof ctx.key === 'string' && ctx.key.startsWith('t');
  }
  read(s: TS['state']): TS['reply']['read'] {
    return { n: s.n, keyOk: s.keyOk };
  }
  relay(_s: TS['state'], m: TS['req']['relay'], ctx: TS['ctx']): void {
    ctx.send(Tally, m.to, 'back', { by: m.by });
  }
}
type TS = TypesOf<typeof TallyS>;

// ---- TTL cycles ----------------------------------------------------------------------------------------

export const BALL_ACTORS = 40;

/** The next hop of a ball: a deterministic mix of (ball, ttl, key), the same in the model. */
export function nextHop(ball: number, ttl: number, key: number): number {
  let h = Math.imul(ball ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(ttl + 1, 0xc2b2ae35) ^ Math.imul(key + 7, 0x27d4eb2f);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  return (h >>> 0) % BALL_ACTORS;
}

const ballState = t.struct({ count: t.u32, sum: t.f64 });
const ballMethods = {
  bounce: { request: t.struct({ ball: t.i32, ttl: t.i32 }) },
  read: { request: t.struct({}), reply: t.struct({ count: t.u32, sum: t.f64 }) },
} as const;

type BallView = { count: number; sum: number };
function bounce(s: BallView, m: { ball: number; ttl: number }, key: number, send: (cls: 'ping' | 'pong', to: number, ttl: number) => void): void {
  s.count += 1;
  s.sum += m.ball * 1000 + m.ttl;
  if (m.ttl > 0) send(m.ttl % 2 === 0 ? 'ping' : 'pong', nextHop(m.ball, m.ttl, key), m.ttl - 1);
}

export class Ping extends Grain({ name: 'Ping', module: import.meta.url, state: ballState, methods: ballMethods }) {
  bounce(s: B['state'], m: B['req']['bounce'], ctx: B['ctx']): void {
    bounce(s, m, ctx.key, (cls, to, ttl) => (cls === 'ping' ? ctx.send(Ping, to, 'bounce', { ball: m.ball, ttl }) : ctx.send(Pong, to, 'bounce', { ball: m.ball, ttl })));
  }
  read(s: B['state']): B['reply']['read'] {
    return { count: s.count, sum: s.sum };
  }
}
type B = TypesOf<typeof Ping>;

export class Pong extends Grain({ name: 'Pong', module: import.meta.url, state: ballState, methods: ballMethods }) {
  bounce(s: B['state'], m: B['req']['bounce'], ctx: B['ctx']): void {
    bounce(s, m, ctx.key, (cls, to, ttl) => (cls === 'ping' ? ctx.send(Ping, to, 'bounce', { ball: m.ball, ttl }) : ctx.send(Pong, to, 'bounce', { ball: m.ball, ttl })));
  }
  read(s: B['state']): B['reply']['read'] {
    return { count: s.count, sum: s.sum };
  }
}

// ---- keys ----------------------------------------------------------------------------------------------

/** Int keys of any safe value: K2K to a key given as f64, forwards, ctx.key recorded by each turn. */
export class Keys extends Grain({
  name: 'Keys',
  module: import.meta.url,
  state: t.struct({ count: t.u32, lastFrom: t.f64, seenKey: t.f64, fromStr: t.u32 }),
  methods: {
    pass: { request: t.struct({ to: t.f64 }) },
    note: { request: t.struct({ from: t.f64 }) },
    who: { request: t.struct({}), reply: t.struct({ key: t.f64, count: t.u32, lastFrom: t.f64, seenKey: t.f64, fromStr: t.u32 }) },
    whoVia: { request: t.struct({ to: t.f64 }), reply: t.struct({ key: t.f64, count: t.u32, lastFrom: t.f64, seenKey: t.f64, fromStr: t.u32 }) },
    /** int → string: KeysS `k<key>`.fromInt, which answers back with fromStr. */
    toStr: { request: t.struct({}) },
    fromStr: { request: t.struct({}) },
  },
}) {
  pass(_s: KY['state'], m: KY['req']['pass'], ctx: KY['ctx']): void {
    ctx.send(Keys, m.to, 'note', { from: ctx.key });
  }
  note(s: KY['state'], m: KY['req']['note'], ctx: KY['ctx']): void {
    s.count += 1;
    s.lastFrom = m.from;
    s.seenKey = ctx.key;
  }
  who(s: KY['state'], _m: KY['req']['who'], ctx: KY['ctx']): KY['reply']['who'] {
    return { key: ctx.key, count: s.count, lastFrom: s.lastFrom, seenKey: s.seenKey, fromStr: s.fromStr };
  }
  whoVia(_s: KY['state'], m: KY['req']['whoVia'], ctx: KY['ctx']): KY['reply']['whoVia'] {
    return ctx.forward(Keys, m.to, 'who', {});
  }
  toStr(_s: KY['state'], _m: KY['req']['toStr'], ctx: KY['ctx']): void {
    ctx.send(KeysS, `k${ctx.key}`, 'fromInt', { from: ctx.key });
  }
  fromStr(s: KY['state']): void {
    s.fromStr += 1;
  }
}
type KY = TypesOf<typeof Keys>;

/** String keys of any content: K2K to itself (the key through the K2K encoding), to Keys and back. */
export class KeysS extends Grain({
  name: 'KeysS',
  module: import.meta.url,
  key: 'string',
  state: t.struct({ self: t.u32, fromInt: t.u32, lastFrom: t.f64, keyLen: t.u32, keyHash: t.u32 }),
  methods: {
    echo: { request: t.struct({ times: t.i32 }) },
    self: { request: t.struct({}) },
    fromInt: { request: t.struct({ from: t.f64 }) },
    who: { request: t.struct({}), reply: t.struct({ self: t.u32, fromInt: t.u32, lastFrom: t.f64, keyLen: t.u32, keyHash: t.u32 }) },
    /** K2K to this key with a lone surrogate appended (split from a surrogate pair, as slicing does). */
    sendHalf: { request: t.struct({}), reply: t.struct({ ok: t.bool }) },
  },
}) {
  echo(_s: KS['state'], m: KS['req']['echo'], ctx: KS['ctx']): void {
    for (let i = 0; i < m.times; i++) ctx.send(KeysS, ctx.key, 'self', {});
  }
  self(s: KS['state'], _m: KS['req']['self'], ctx: KS['ctx']): void {
    s.self += 1;
    s.keyLen = ctx.key.length;
    s.keyHash = strHash(ctx.key);
  }
  fromInt(s: KS['state'], m: KS['req']['fromInt'], ctx: KS['ctx']): void {
    s.fromInt += 1;
    s.lastFrom = m.from;
    s.keyLen = ctx.key.length;
    s.keyHash = strHash(ctx.key);
    ctx.send(Keys, m.from, 'fromStr', {});
  }
  sendHalf(_s: KS['state'], _m: KS['req']['sendHalf'], ctx: KS['ctx']): KS['reply']['sendHalf'] {
    ctx.send(KeysS, ctx.key + '😀'.slice(0, 1), 'self', {});
    return { ok: true };
  }
  who(s: KS['state']): KS['reply']['who'] {
    return { self: s.self, fromInt: s.fromInt, lastFrom: s.lastFrom, keyLen: s.keyLen, keyHash: s.keyHash };
  }
}
type KS = TypesOf<typeof KeysS>;

export function strHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
