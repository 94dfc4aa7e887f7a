import { Grain, t, type TypesOf } from '@ringgrain/core';

/**
 * The fleet's rules, as numbers. The handlers below write them as literals (handlers are compiled to CUDA
 * too and may not read module bindings); model.ts reads them from here. Change both together.
 */
export const RULES = {
  /** The `check` timer's period (ms of the system's clock). */
  checkPeriodMs: 2000,
  /** A device whose last reading is older than this at a check is stale (ms). */
  staleMs: 2500,
  /** A last reading outside [low, high] is out of range. */
  low: -10,
  high: 60,
  /** Devices per Alerts actor (a region): Alerts key = Math.floor(device / regionSize). */
  regionSize: 4096,
} as const;

/** Alert kinds, added: 1 stale, 2 out of range, 3 both. */
export const ALERT_STALE = 1;
export const ALERT_RANGE = 2;

/**
 * One sensor. `reading` keeps the last value and its time and running min/max/sum/count (mean =
 * sum / count). The `check` timer (every 2 s of the system's clock, from activation) decides the alert
 * state; a change from none to some raises an alert at the device's region (a K2K tell to Alerts), a
 * change back clears it there. Only additions and comparisons of f64: no product that a CUDA build could
 * fuse into an FMA, so the GPU's numbers are bit-equal to the JavaScript model's.
 */
export class Device extends Grain({
  name: 'Device',
  module: import.meta.url,
  state: t.struct({
    last: t.f64,
    lastAt: t.f64,
    min: t.f64,
    max: t.f64,
    sum: t.f64,
    count: t.u32,
    /** The alert state the last check decided (0: none; ALERT_STALE + ALERT_RANGE). */
    alert: t.u32,
    /** Alerts this device raised (transitions from 0 to non-zero). */
    raised: t.u32,
    /** Checks run (timer ticks). */
    checks: t.u32,
  }),
  methods: {
    /** A reading taken at `at` (ms of the system's clock). */
    reading: { request: t.struct({ value: t.f64, at: t.f64 }) },
    /** The timer's method: decide the alert state by the clock now. */
    check: { request: t.struct({}) },
    get: {
      request: t.struct({}),
      reply: t.struct({
        last: t.f64,
        lastAt: t.f64,
        min: t.f64,
        max: t.f64,
        sum: t.f64,
        count: t.u32,
        alert: t.u32,
        raised: t.u32,
        checks: t.u32,
      }),
    },
  },
  timers: { check: { method: 'check', periodMs: RULES.checkPeriodMs } },
}) {
  reading(s: D['state'], m: D['req']['reading']): void {
    if (s.count === 0) {
      s.min = m.value;
      s.max = m.value;
    } else {
      if (m.value < s.min) s.min = m.value;
      if (m.value > s.max) s.max = m.value;
    }
    s.sum += m.value;
    s.count += 1;
    s.last = m.value;
    s.lastAt = m.at;
  }

  check(s: D['state'], _m: D['req']['check'], ctx: D['ctx']): void {
    s.checks += 1;
    let alert = 0;
    if (s.count > 0) {
      // RULES.staleMs, RULES.low, RULES.high, ALERT_STALE, ALERT_RANGE as literals.
      if (ctx.now() - s.lastAt > 2500) alert += 1;
      if (s.last < -10 || s.last > 60) alert += 2;
    }
    if (alert !== 0 && s.alert === 0) {
      s.raised += 1;
      ctx.send(Alerts, Math.floor(ctx.key / 4096), 'raise', { device: ctx.key, kind: alert });
    } else if (alert === 0 && s.alert !== 0) {
      ctx.send(Alerts, Math.floor(ctx.key / 4096), 'clear', { device: ctx.key });
    }
    s.alert = alert;
  }

  get(s: D['state']): D['reply']['get'] {
    return {
      last: s.last,
      lastAt: s.lastAt,
      min: s.min,
      max: s.max,
      sum: s.sum,
      count: s.count,
      alert: s.alert,
      raised: s.raised,
      checks: s.checks,
    };
  }
}
type D = TypesOf<typeof Device>;

/** One region's alert counters (RULES.regionSize devices each): raised by kind, and cleared. */
export class Alerts extends Grain({
  name: 'Alerts',
  module: import.meta.url,
  state: t.struct({ raised: t.u32, stale: t.u32, range: t.u32, cleared: t.u32 }),
  methods: {
    raise: { request: t.struct({ device: t.i32, kind: t.u32 }) },
    clear: { request: t.struct({ device: t.i32 }) },
    get: { request: t.struct({}), reply: t.struct({ raised: t.u32, stale: t.u32, range: t.u32, cleared: t.u32 }) },
  },
}) {
  raise(s: A['state'], m: A['req']['raise']): void {
    s.raised += 1;
    if (m.kind === 1 || m.kind === 3) s.stale += 1;
    if (m.kind === 2 || m.kind === 3) s.range += 1;
  }

  clear(s: A['state']): void {
    s.cleared += 1;
  }

  get(s: A['state']): A['reply']['get'] {
    return { raised: s.raised, stale: s.stale, range: s.range, cleared: s.cleared };
  }
}
type A = TypesOf<typeof Alerts>;
