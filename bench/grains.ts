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
