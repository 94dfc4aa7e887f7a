import { Grain, t, type TypesOf } from '@ringgrain/core';

/** The timer benchmark's grain (bench/timers.ts): a 10 Hz timer whose tick counts itself. */
export class Sensor extends Grain({
  name: 'Sensor',
  module: import.meta.url,
  state: t.struct({ ticks: t.u32, last: t.f64 }),
  methods: {
    onTick: { request: t.struct({}) },
    wake: { request: t.struct({}), reply: t.struct({ ticks: t.u32 }) },
    /** Stops this actor's timer (the host-driven baseline sends its ticks itself). */
    quiet: { request: t.struct({}), reply: t.struct({ ticks: t.u32 }) },
  },
  timers: { sample: { method: 'onTick', periodMs: 100 } },
}) {
  onTick(s: S['state'], _m: S['req']['onTick'], ctx: S['ctx']): void {
    s.ticks += 1;
    s.last = ctx.now();
  }
  wake(s: S['state']): S['reply']['wake'] {
    return { ticks: s.ticks };
  }
  quiet(s: S['state'], _m: S['req']['quiet'], ctx: S['ctx']): S['reply']['quiet'] {
    ctx.stopTimer('sample');
    return { ticks: s.ticks };
  }
}
type S = TypesOf<typeof Sensor>;
