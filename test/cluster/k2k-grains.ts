/** A K2K sender for the cross-silo K2K test (workers import this module by URL: no test code here). */
import { Grain, t, type TypesOf } from '@ringgrain/core';
import { Counter } from './grains.ts';

/** A string-keyed K2K target (cross-silo K2K sends carry its keys as strings). */
export class Tag extends Grain({
  name: 'Tag',
  module: import.meta.url,
  key: 'string',
  state: t.struct({ total: t.f64, count: t.u32 }),
  methods: {
    add: { request: t.struct({ n: t.f64 }) },
    get: { request: t.struct({}), reply: t.struct({ total: t.f64, count: t.u32 }) },
  },
}) {
  add(s: T['state'], m: T['req']['add']): void {
    s.total += m.n;
    s.count += 1;
  }
  get(s: T['state']): T['reply']['get'] {
    return { total: s.total, count: s.count };
  }
}
type T = TypesOf<typeof Tag>;

export class Relay extends Grain({
  name: 'Relay',
  module: import.meta.url,
  state: t.struct({ sent: t.u32 }),
  methods: {
    /** ctx.send of Counter.add to `key` (a tell). */
    tell: { request: t.struct({ key: t.i32, n: t.f64 }) },
    /** ctx.forward of this ask to Counter.add of `key` (the reply comes from Counter). */
    fwd: { request: t.struct({ key: t.i32, n: t.f64 }), reply: t.struct({ total: t.f64 }) },
    /** ctx.send of Counter.seq from sender `s`, numbered from..from+count-1, to `key` (FIFO check). */
    burst: { request: t.struct({ key: t.i32, s: t.i32, from: t.i32, count: t.i32 }) },
    /** ctx.send of Tag.add to the string key `tag-<key>`, `count` times, n = 1, 2, ... */
    tag: { request: t.struct({ key: t.i32, count: t.i32 }) },
    get: { request: t.struct({}), reply: t.struct({ sent: t.u32 }) },
  },
}) {
  tag(s: R['state'], m: R['req']['tag'], ctx: R['ctx']): void {
    for (let n = 1; n <= m.count; n++) {
      s.sent += 1;
      ctx.send(Tag, `tag-${m.key}`, 'add', { n });
    }
  }
  tell(s: R['state'], m: R['req']['tell'], ctx: R['ctx']): void {
    s.sent += 1;
    ctx.send(Counter, m.key, 'add', { n: m.n });
  }
  fwd(s: R['state'], m: R['req']['fwd'], ctx: R['ctx']): R['reply']['fwd'] {
    s.sent += 1;
    return ctx.forward(Counter, m.key, 'add', { n: m.n });
  }
  burst(s: R['state'], m: R['req']['burst'], ctx: R['ctx']): void {
    for (let n = m.from; n < m.from + m.count; n++) {
      s.sent += 1;
      ctx.send(Counter, m.key, 'seq', { s: m.s, n });
    }
  }
  get(s: R['state']): R['reply']['get'] {
    return { sent: s.sent };
  }
}
type R = TypesOf<typeof Relay>;
