/**
 * Grain classes of the typed programs: written as README.md shows, compiled by the repo's strict
 * tsconfig (tsc -p tsconfig.json, test/typecheck/tsc.test.ts in the suite), with the *.test-d.ts files beside this one.
 */
import { Grain, t, type TypesOf } from '@ringgrain/core';

/** README "A grain", verbatim. */
export class Account extends Grain({
  name: 'Account',
  module: import.meta.url, // workers import the class; the code generator parses it
  state: t.struct({ balance: t.f64, ops: t.u32 }),
  methods: {
    deposit: { request: t.struct({ amount: t.f64 }), reply: t.struct({ balance: t.f64 }) },
    transfer: { request: t.struct({ to: t.i32, amount: t.f64 }) }, // no reply: tell-only
    credit: { request: t.struct({ amount: t.f64 }) },
  },
}) {
  deposit(s: A['state'], m: A['req']['deposit']): A['reply']['deposit'] {
    s.balance += m.amount; // writes straight into the actor's state slot
    return { balance: s.balance };
  }
  transfer(s: A['state'], m: A['req']['transfer'], ctx: A['ctx']): void {
    if (m.amount <= s.balance) {
      s.balance -= m.amount;
      ctx.send(Account, m.to, 'credit', { amount: m.amount }); // actor → actor, never via the host
    }
  }
  credit(s: A['state'], m: A['req']['credit']): void {
    s.balance += m.amount;
  }
}
type A = TypesOf<typeof Account>;

/** Every schema kind: arrays, vecs, nested structs, bools, small integers, arrays of structs. */
export class Body extends Grain({
  name: 'Body',
  module: import.meta.url,
  state: t.struct({
    pos: t.struct({ x: t.f64, y: t.f64, z: t.f64 }),
    trail: t.vec(t.f32, 16),
    grid: t.array(t.u8, 4),
    alive: t.bool,
    hits: t.i16,
    flags: t.vec(t.bool, 4),
    joints: t.array(t.struct({ angle: t.f32, locked: t.bool }), 2),
  }),
  methods: {
    move: {
      request: t.struct({ dx: t.f64, dy: t.f64, dz: t.f64 }),
      reply: t.struct({ pos: t.struct({ x: t.f64, y: t.f64, z: t.f64 }) }),
    },
    record: {
      request: t.struct({ samples: t.vec(t.f32, 16), mask: t.array(t.bool, 4) }),
      reply: t.struct({ n: t.u32, sum: t.vec(t.f32, 16) }),
    },
    paint: { request: t.struct({ cells: t.array(t.u8, 4), alive: t.bool }) },
    setJoints: { request: t.struct({ joints: t.array(t.struct({ angle: t.f32, locked: t.bool }), 2) }) },
    snapshot: {
      request: t.struct({}),
      reply: t.struct({
        alive: t.bool,
        hits: t.i16,
        grid: t.array(t.u8, 4),
        tag: t.vec(t.i32, 3),
        flags: t.vec(t.bool, 4),
      }),
    },
    ping: { request: t.struct({}) },
  },
}) {
  move(s: B['state'], m: B['req']['move']): B['reply']['move'] {
    s.pos.x += m.dx;
    s.pos.y += m.dy;
    s.pos.z += m.dz;
    return { pos: { x: s.pos.x, y: s.pos.y, z: s.pos.z } };
  }
  record(s: B['state'], m: B['req']['record']): B['reply']['record'] {
    const n = Math.min(m.samples.length, 16);
    for (let i = 0; i < n; i++) s.trail.items[i] = m.samples[i]!;
    s.trail.length = n;
    for (let i = 0; i < 4; i++) s.flags.items[i] = m.mask[i] ? 1 : 0;
    s.flags.length = 4;
    return { n, sum: s.trail.items.subarray(0, n) };
  }
  paint(s: B['state'], m: B['req']['paint']): void {
    s.grid.set(m.cells);
    s.alive = m.alive;
  }
  setJoints(s: B['state'], m: B['req']['setJoints']): void {
    for (let i = 0; i < 2; i++) {
      const j = s.joints[i]!;
      j.angle = m.joints[i]!.angle;
      j.locked = m.joints[i]!.locked;
    }
  }
  snapshot(s: B['state']): B['reply']['snapshot'] {
    return { alive: s.alive, hits: s.hits, grid: s.grid, tag: [1, 2], flags: [s.alive] };
  }
  ping(s: B['state']): void {
    s.hits += 1;
  }
  onActivate(s: B['state'], ctx: B['ctx']): void {
    s.alive = ctx.key >= 0;
  }
  onDeactivate(_s: B['state'], _ctx: B['ctx']): void {}
}
type B = TypesOf<typeof Body>;

/** String keys and forwarding: a ctx.forward moves the reply obligation to another class. */
export class Directory extends Grain({
  name: 'Directory',
  module: import.meta.url,
  key: 'string',
  state: t.struct({ owner: t.i32, lookups: t.u32 }),
  methods: {
    assign: { request: t.struct({ owner: t.i32 }) },
    balanceOf: { request: t.struct({}), reply: t.struct({ balance: t.f64 }) },
  },
}) {
  assign(s: D['state'], m: D['req']['assign']): void {
    s.owner = m.owner;
  }
  balanceOf(s: D['state'], _m: D['req']['balanceOf'], ctx: D['ctx']): D['reply']['balanceOf'] {
    s.lookups += 1;
    // Account.deposit answers { balance }: its reply reaches this ask's asker.
    return ctx.forward(Account, s.owner, 'deposit', { amount: 0 });
  }
}
type D = TypesOf<typeof Directory>;

/** README "Timers and reminders", verbatim. */
export class Sensor extends Grain({
  name: 'Sensor',
  module: import.meta.url,
  state: t.struct({ samples: t.u32, alerts: t.u32 }),
  methods: {
    sample: { request: t.struct({}) }, // a tick's message is empty
    escalate: { request: t.struct({}) },
    arm: { request: t.struct({ periodMs: t.f64 }) },
  },
  timers: { sampler: { method: 'sample', periodMs: 100 } }, // starts at activation (autoStart: false to not)
  reminders: { daily: { method: 'escalate' } }, // persisted; needs storage
}) {
  sample(s: S['state'], _m: S['req']['sample'], ctx: S['ctx']): void {
    s.samples += 1;
    if (s.samples === 600) ctx.stopTimer('sampler');
  }
  escalate(s: S['state']): void {
    s.alerts += 1;
  }
  arm(_s: S['state'], m: S['req']['arm'], ctx: S['ctx']): void {
    ctx.startTimer('sampler', { periodMs: m.periodMs }); // restart with another period (dueMs: first delay)
    ctx.setReminder('daily', { periodMs: 86_400_000 }); // ctx.clearReminder('daily') removes it
  }
}
type S = TypesOf<typeof Sensor>;

/** Timers with every option: dueMs, autoStart false. */
export class Heart extends Grain({
  name: 'Heart',
  module: import.meta.url,
  state: t.struct({ beats: t.u32, last: t.f64 }),
  methods: {
    beat: { request: t.struct({}) },
    start: { request: t.struct({ periodMs: t.f64, dueMs: t.f64 }) },
    stop: { request: t.struct({}) },
  },
  timers: { pulse: { method: 'beat', periodMs: 1000, dueMs: 0, autoStart: false } },
}) {
  beat(s: H['state'], _m: H['req']['beat'], ctx: H['ctx']): void {
    s.beats += 1;
    s.last = ctx.now();
  }
  start(_s: H['state'], m: H['req']['start'], ctx: H['ctx']): void {
    ctx.startTimer('pulse', { periodMs: m.periodMs, dueMs: m.dueMs });
  }
  stop(_s: H['state'], _m: H['req']['stop'], ctx: H['ctx']): void {
    ctx.stopTimer('pulse');
    ctx.clearReminder('none');
  }
}
type H = TypesOf<typeof Heart>;
