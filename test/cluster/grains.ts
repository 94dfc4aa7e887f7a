/** Grain classes of the cluster tests (silo processes import this module; no test code here). */
import { Grain, t, type TypesOf } from '@ringgrain/core';

/** Senders for the FIFO check: a sender numbers its tells to a key 1, 2, 3, ... */
export const SENDERS = 8;

export class Counter extends Grain({
  name: 'Counter',
  module: import.meta.url,
  state: t.struct({ total: t.f64, count: t.u32, bad: t.u32, last: t.array(t.i32, SENDERS) }),
  methods: {
    add: { request: t.struct({ n: t.f64 }), reply: t.struct({ total: t.f64 }) },
    /** A numbered tell from sender s: FIFO per sender → actor is checked here. */
    seq: { request: t.struct({ s: t.i32, n: t.i32 }) },
    get: { request: t.struct({}), reply: t.struct({ total: t.f64, count: t.u32, bad: t.u32, last: t.array(t.i32, SENDERS) }) },
    fail: { request: t.struct({ code: t.i32 }), reply: t.struct({ ok: t.bool }) },
    /** Sleeps the handler's thread (a slow turn, so an ask is in flight when its silo is killed). */
    slow: { request: t.struct({ ms: t.f64 }), reply: t.struct({ ok: t.bool }) },
  },
}) {
  add(s: C['state'], m: C['req']['add']): C['reply']['add'] {
    s.total += m.n;
    s.count += 1;
    return { total: s.total };
  }
  seq(s: C['state'], m: C['req']['seq']): void {
    if (m.n !== s.last[m.s]! + 1) s.bad += 1;
    s.last[m.s] = m.n;
    s.count += 1;
  }
  get(s: C['state']): C['reply']['get'] {
    return { total: s.total, count: s.count, bad: s.bad, last: s.last };
  }
  fail(_s: C['state'], m: C['req']['fail']): C['reply']['fail'] {
    throw new Error(`no such account ${m.code}`);
  }
  slow(_s: C['state'], m: C['req']['slow']): C['reply']['slow'] {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, m.ms);
    return { ok: true };
  }
}
type C = TypesOf<typeof Counter>;
