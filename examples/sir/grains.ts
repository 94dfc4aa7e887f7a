import { Grain, t, type TypesOf } from '@ringgrain/core';

/** Most contacts a person may have (the generator caps degrees at this). */
export const MAX_CONTACTS = 32;
/** People per ward. The Ward handlers use the literal 100 (handlers may not read module bindings). */
export const WARD_SIZE = 100;

/**
 * Deterministic infection decision, shared by the handler (as literal code) and the JS reference.
 * Integer math that is exact in f64 (every product < 2^53: multipliers < 2^21) and equal to u32 wrap-around arithmetic in C.
 */
export function infectionHash(step: number, from: number, to: number): number {
  let h = ((step * 40503) ^ (from * 2654435) ^ (to * 97)) >>> 0;
  h = (h ^ (h >>> 15)) >>> 0;
  h = (h * 1664525 + 13) >>> 0;
  h = (h ^ (h >>> 13)) >>> 0;
  h = (h * 1103515 + 7) >>> 0;
  h = (h ^ (h >>> 16)) >>> 0;
  return h;
}

/**
 * One person of the SIR model. status: 0 susceptible, 1 infected, 2 recovered. `infStep` is the step in
 * which the person was infected. A person infected in step t is infectious from step t+1 for `days` steps.
 */
export class Person extends Grain({
  name: 'Person',
  module: import.meta.url,
  state: t.struct({ status: t.u32, infStep: t.i32, contacts: t.vec(t.i32, MAX_CONTACTS) }),
  methods: {
    /** The contact list, from the host's generated graph. */
    setup: { request: t.struct({ contacts: t.vec(t.i32, MAX_CONTACTS) }) },
    /** Patient zero: infected at step 0. */
    seed: { request: t.struct({}) },
    /** From the ward, once per step while infected: try to infect every contact, then maybe recover. */
    tick: { request: t.struct({ step: t.i32, days: t.i32, threshold: t.u32 }) },
    /** An infection attempt from `from` in `step` (K2K). */
    infect: { request: t.struct({ step: t.i32, from: t.i32, threshold: t.u32 }) },
    status: { request: t.struct({}), reply: t.struct({ status: t.u32, infStep: t.i32, degree: t.u32 }) },
  },
}) {
  setup(s: P['state'], m: P['req']['setup']): void {
    const n = m.contacts.length;
    for (let i = 0; i < n; i++) {
      s.contacts.items[i] = m.contacts[i]!;
    }
    s.contacts.length = n;
  }

  seed(s: P['state'], _m: P['req']['seed'], ctx: P['ctx']): void {
    if (s.status === 0) {
      s.status = 1;
      s.infStep = 0;
      ctx.send(Ward, Math.floor(ctx.key / 100), 'infected', { who: ctx.key, step: 0 });
    }
  }

  tick(s: P['state'], m: P['req']['tick'], ctx: P['ctx']): void {
    // Only people infected before this step act in it (a ward may tick someone infected this very step).
    if (s.status !== 1 || s.infStep >= m.step) return;
    const n = s.contacts.length;
    for (let i = 0; i < n; i++) {
      ctx.send(Person, s.contacts.items[i]!, 'infect', { step: m.step, from: ctx.key, threshold: m.threshold });
    }
    if (m.step - s.infStep >= m.days) {
      s.status = 2;
      ctx.send(Ward, Math.floor(ctx.key / 100), 'recovered', { who: ctx.key, step: m.step });
    }
  }

  infect(s: P['state'], m: P['req']['infect'], ctx: P['ctx']): void {
    if (s.status !== 0) return;
    // infectionHash(m.step, m.from, ctx.key), written out: handlers cannot call module functions.
    let h = ((m.step * 40503) ^ (m.from * 2654435) ^ (ctx.key * 97)) >>> 0;
    h = (h ^ (h >>> 15)) >>> 0;
    h = (h * 1664525 + 13) >>> 0;
    h = (h ^ (h >>> 13)) >>> 0;
    h = (h * 1103515 + 7) >>> 0;
    h = (h ^ (h >>> 16)) >>> 0;
    if (h < m.threshold) {
      s.status = 1;
      s.infStep = m.step;
      ctx.send(Ward, Math.floor(ctx.key / 100), 'infected', { who: ctx.key, step: m.step });
    }
  }

  status(s: P['state']): P['reply']['status'] {
    return { status: s.status, infStep: s.infStep, degree: s.contacts.length };
  }
}
type P = TypesOf<typeof Person>;

/**
 * A ward mirrors the steps at which its 100 people were infected and recovered (stored as step + 1; 0 =
 * never), ticks its infectious members once per step and reports S/I/R counts as of the start of a step.
 */
export class Ward extends Grain({
  name: 'Ward',
  module: import.meta.url,
  state: t.struct({ inf: t.array(t.i32, WARD_SIZE), rec: t.array(t.i32, WARD_SIZE) }),
  methods: {
    infected: { request: t.struct({ who: t.i32, step: t.i32 }) },
    recovered: { request: t.struct({ who: t.i32, step: t.i32 }) },
    /** Counts as of the start of `step` (the result of step - 1), then ticks every member infectious in it. */
    step: { request: t.struct({ step: t.i32, days: t.i32, threshold: t.u32, members: t.i32 }), reply: t.struct({ s: t.u32, i: t.u32, r: t.u32 }) },
  },
}) {
  infected(s: W['state'], m: W['req']['infected'], ctx: W['ctx']): void {
    s.inf[m.who - ctx.key * 100] = m.step + 1;
  }

  recovered(s: W['state'], m: W['req']['recovered'], ctx: W['ctx']): void {
    s.rec[m.who - ctx.key * 100] = m.step + 1;
  }

  step(s: W['state'], m: W['req']['step'], ctx: W['ctx']): W['reply']['step'] {
    let sus = 0;
    let inf = 0;
    let rec = 0;
    for (let j = 0; j < m.members; j++) {
      const i1 = s.inf[j]!;
      const r1 = s.rec[j]!;
      if (r1 !== 0 && r1 - 1 < m.step) {
        rec += 1;
      } else if (i1 !== 0 && i1 - 1 < m.step) {
        inf += 1;
        ctx.send(Person, ctx.key * 100 + j, 'tick', { step: m.step, days: m.days, threshold: m.threshold });
      } else {
        sus += 1;
      }
    }
    return { s: sus, i: inf, r: rec };
  }
}
type W = TypesOf<typeof Ward>;
