/**
 * GrainSystem against a fake backend (fake-backend.ts: real rings and control blocks, a consumer the test
 * steps) and an injected clock: sends, replies, errors, backpressure, timeouts, faults, idle() and the
 * lifecycle, without worker threads or a GPU. A net below the conformance suite for refactors of system/.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Grain } from '../../src/grain.ts';
import { t } from '../../src/schema/index.ts';
import { GrainSystem, type SystemOptions } from '../../src/system.ts';
import {
  AskManyError,
  AskTimeoutError,
  BackendUnavailableError,
  HandlerError,
  IdleTimeoutError,
  InvalidKeyError,
  KernelFaultError,
  KernelTerminatedError,
  PlacementError,
  QueueFullError,
  ReplyTargetError,
  SchemaValidationError,
  SystemOptionsError,
  UnknownGrainError,
  UnknownMethodError,
} from '../../src/errors.ts';
import { laneOfKey } from '../../src/lanes.ts';
import { FakeBackend, type FakeMessage } from './fake-backend.ts';

class Counter extends Grain({
  name: 'Counter',
  module: import.meta.url,
  state: t.struct({ total: t.f64 }),
  methods: {
    add: { request: t.struct({ by: t.f64 }), reply: t.struct({ total: t.f64 }) },
    bump: { request: t.struct({ by: t.f64 }) },
    ping: { request: t.struct({}) },
    samples: { request: t.struct({ n: t.u32 }), reply: t.struct({ xs: t.vec(t.f64, 8) }) },
  },
}) {
  add(s: { total: number }, m: { by: number }) {
    s.total += m.by;
    return { total: s.total };
  }
  bump(s: { total: number }, m: { by: number }) {
    s.total += m.by;
  }
  ping() {}
  samples(_s: unknown, m: { n: number }) {
    return { xs: Array.from({ length: m.n }, (_, i) => i) };
  }
}

class Named extends Grain({
  name: 'Named',
  module: import.meta.url,
  key: 'string',
  state: t.struct({ n: t.u32 }),
  methods: { hello: { request: t.struct({ n: t.u32 }), reply: t.struct({ n: t.u32 }) } },
}) {
  hello(_s: unknown, m: { n: number }) {
    return { n: m.n };
  }
}

class Unregistered extends Grain({
  name: 'Unregistered',
  module: import.meta.url,
  state: t.struct({ n: t.u32 }),
  methods: { x: { request: t.struct({}) } },
}) {
  x() {}
}

/**
 * The fake's default answer: `add` replies with its `by` doubled, `samples` with n numbers, `hello` echoes; others {}.
 */
function answer(m: FakeMessage): unknown {
  const p = m.payload as Record<string, number>;
  if (m.method === 'add') return { total: p['by']! * 2 };
  if (m.method === 'samples') return { xs: Array.from({ length: p['n']! }, (_, i) => i + 0.5) };
  if (m.method === 'hello') return m.payload;
  return {};
}

const systems: GrainSystem[] = [];
afterEach(async () => {
  for (const s of systems.splice(0)) await s.shutdown({ mode: 'reject', timeoutMs: 200 }).catch(() => undefined);
});

async function setup(
  opts: { lanes?: number; auto?: boolean; ringCapacity?: number; system?: Partial<SystemOptions> } = {},
) {
  const fake = new FakeBackend({ lanes: opts.lanes ?? 1, auto: opts.auto ?? true });
  fake.handle = answer;
  const clock = { now: 1_000 };
  const system = new GrainSystem({
    backends: { fake },
    logLevel: 'silent',
    handleSignals: false,
    clock: () => clock.now,
    ...opts.system,
  });
  systems.push(system);
  system.register(Counter, { placement: 'fake', ...(opts.ringCapacity ? { ringCapacity: opts.ringCapacity } : {}) });
  system.register(Named, { placement: 'fake' });
  await system.start();
  return { system, fake, clock, counter: fake.kernel('Counter'), named: fake.kernel('Named') };
}

/** Lets the reply pump and the fake's microtask steps run (a few event-loop turns). */
async function turns(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

describe('GrainSystem: single sends', () => {
  it(
    'an ask reaches the kernel with its key, payload, correlation id and the injected clock, and resolves with ' +
      'the reply',
    async () => {
      const { system, counter, clock } = await setup();
      clock.now = 5_000;
      await expect(system.grain(Counter, 7).add({ by: 21 })).resolves.toEqual({ total: 42 });
      expect(counter.taken).toHaveLength(1);
      const m = counter.taken[0]!;
      expect(m).toMatchObject({ grain: 'Counter', method: 'add', key: 7, payload: { by: 21 }, time: 5_000 });
      expect(m.corr).toBeGreaterThan(0);
      // The clock is read at each send: a test moves it between sends.
      clock.now = 6_000;
      await system.grain(Counter, 7).add({ by: 1 });
      expect(counter.taken[1]!.time).toBe(6_000);
    },
  );

  it(
    'a tell returns undefined while the ring has room and carries correlation id 0; counters balance after idle()',
    async () => {
      const { system, counter } = await setup();
      for (let i = 0; i < 10; i++) expect(system.grain(Counter, i).tell.bump({ by: i })).toBeUndefined();
      await system.idle({ timeoutMs: 5_000 });
      expect(counter.taken.map((m) => [m.key, m.corr])).toEqual(Array.from({ length: 10 }, (_, i) => [i, 0]));
      const c = system.counters(Counter);
      expect(c).toMatchObject({ sent: 10, received: 10, processed: 10, replied: 0, inboundDepth: 0 });
    },
  );

  it('an ask of a method without reply resolves undefined; negative and 2^53-1 keys travel whole', async () => {
    const { system, counter } = await setup();
    await expect(system.grain(Counter, -5).ping({})).resolves.toBeUndefined();
    await system.grain(Counter, Number.MAX_SAFE_INTEGER).ping({});
    expect(counter.taken.map((m) => m.key)).toEqual([-5, Number.MAX_SAFE_INTEGER]);
  });

  it('string keys arrive as strings; a bad key is InvalidKeyError at the call and nothing is sent', async () => {
    const { system, named } = await setup();
    await expect(system.grain(Named, 'ålfa').hello({ n: 3 })).resolves.toEqual({ n: 3 });
    expect(named.taken[0]).toMatchObject({ key: 'ålfa', payload: { n: 3 } });
    await expect(system.grain(Named, 'a\uD800b').hello({ n: 1 })).rejects.toBeInstanceOf(InvalidKeyError);
    await expect(system.grain(Counter, 1.5).add({ by: 1 })).rejects.toBeInstanceOf(InvalidKeyError);
    expect(() => system.grain(Counter, 2 ** 60).tell.bump({ by: 1 })).toThrow(InvalidKeyError);
    expect(named.taken).toHaveLength(1);
    expect(system.counters(Counter).sent).toBe(0);
  });

  it('a bad payload is SchemaValidationError at the call and takes no ring slot', async () => {
    const { system, counter } = await setup();
    await expect(system.grain(Counter, 1).add({ by: 'x' as unknown as number })).rejects.toBeInstanceOf(
      SchemaValidationError,
    );
    expect(() => system.grain(Counter, 1).tell.bump({} as { by: number })).toThrow(SchemaValidationError);
    await system.grain(Counter, 1).add({ by: 1 });
    expect(counter.taken).toHaveLength(1);
    expect(system.counters(Counter).sent).toBe(1);
  });

  it('keys go to the lane laneOfKey picks, FIFO per key', async () => {
    const { system, counter } = await setup({ lanes: 4 });
    for (let round = 0; round < 3; round++)
      for (let key = 0; key < 20; key++) system.grain(Counter, key).tell.bump({ by: round });
    await system.idle({ timeoutMs: 5_000 });
    expect(counter.taken).toHaveLength(60);
    for (const m of counter.taken) expect(m.lane).toBe(laneOfKey(m.key, 4));
    for (let key = 0; key < 20; key++)
      expect(counter.taken.filter((m) => m.key === key).map((m) => (m.payload as { by: number }).by)).toEqual([
        0, 1, 2,
      ]);
  });

  it('`into` must name a numeric array field of the reply with its typed array', async () => {
    const { system } = await setup();
    const xs = new Float64Array(8);
    const r = (await system.grain(Counter, 1).samples({ n: 3 }, { into: { xs } })) as { xs: Float64Array };
    expect(Array.from(r.xs)).toEqual([0.5, 1.5, 2.5]);
    expect(r.xs.buffer).toBe(xs.buffer);
    await expect(
      system.grain(Counter, 1).samples({ n: 1 }, { into: { xs: new Float32Array(8) as unknown as Float64Array } }),
    ).rejects.toBeInstanceOf(ReplyTargetError);
    await expect(
      system.grain(Counter, 1).samples({ n: 1 }, { into: { ys: new Float64Array(8) } as never }),
    ).rejects.toBeInstanceOf(ReplyTargetError);
  });

  it('unknown classes and methods are typed errors', async () => {
    const { system } = await setup();
    expect(() => system.grain(Unregistered, 1)).toThrow(UnknownGrainError);
    expect(() => system.send(Counter.grain, 'nope', 1, {}, true)).toThrow(UnknownMethodError);
  });
});

describe('GrainSystem: failures', () => {
  it("a handler's throw rejects the ask with HandlerError; a failed tell is a tellError event", async () => {
    const { system, fake } = await setup();
    fake.handle = (m) => {
      throw new Error(`no ${m.method} for ${m.key}`);
    };
    const err = await system.grain(Counter, 3).add({ by: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HandlerError);
    expect((err as Error).message).toContain('no add for 3');
    const events: Array<{ grain: string; method: string; error: Error }> = [];
    system.on('tellError', (e) => events.push(e));
    system.grain(Counter, 4).tell.bump({ by: 1 });
    await system.idle({ timeoutMs: 5_000 });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ grain: 'Counter', method: 'bump' });
    expect(events[0]!.error).toBeInstanceOf(HandlerError);
    expect(system.counters(Counter).handlerErrors).toBe(2);
  });

  it(
    'an ask nobody answers rejects with AskTimeoutError; its reply arriving later is counted late, not lost',
    async () => {
      const { system, counter } = await setup({ auto: false, system: { askTimeoutMs: 100 } });
      const err = await system
        .grain(Counter, 1)
        .add({ by: 1 })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AskTimeoutError);
      expect(system.lateReplies).toBe(0);
      counter.step();
      await system.idle({ timeoutMs: 5_000 });
      expect(system.lateReplies).toBe(1);
    },
  );

  it(
    'a kernel whose backend reports a fault is faulted: waiting asks reject with KernelFaultError, a fault ' +
      'event fires, later sends fail typed',
    async () => {
      const { system, counter } = await setup({ auto: false });
      const faults: string[] = [];
      system.on('fault', (e) => faults.push(e.grain));
      const ask = system.grain(Counter, 1).add({ by: 1 });
      counter.fault = new Error('device lost');
      await expect(ask).rejects.toBeInstanceOf(KernelFaultError);
      expect(faults).toEqual(['Counter']);
      expect(system.kernel(Counter).state).toBe('faulted');
      await expect(system.grain(Counter, 1).add({ by: 1 })).rejects.toBeInstanceOf(KernelFaultError);
    },
  );

  it('a lane whose heartbeat stands still while an ask waits faults the kernel after heartbeatTimeoutMs', async () => {
    const { system, counter } = await setup({ system: { heartbeatTimeoutMs: 100 } });
    counter.stalled = true;
    const err = await system.grain(Counter, 1).add({ by: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KernelFaultError);
    expect((err as Error).message).toContain('heartbeat stood still');
  });
});

describe('GrainSystem: backpressure', () => {
  it('sends past a full ring wait in order (a tell returns a Promise) and go in as the kernel makes room', async () => {
    const { system, counter } = await setup({ auto: false, ringCapacity: 4 });
    const returned = Array.from({ length: 10 }, (_, i) => system.grain(Counter, 1).tell.bump({ by: i }));
    expect(returned.slice(0, 4)).toEqual([undefined, undefined, undefined, undefined]);
    expect(returned.slice(4).every((p) => p instanceof Promise)).toBe(true);
    const ask = system.grain(Counter, 1).add({ by: 100 });
    expect(system.waitingSendsOf(system.kernel(Counter))).toBe(7);
    while (counter.taken.length < 11) {
      counter.step();
      await turns(2);
    }
    await expect(ask).resolves.toEqual({ total: 200 });
    await Promise.all(returned);
    expect(counter.taken.map((m) => (m.payload as { by: number }).by)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100]);
    expect(system.waitingSendsOf(system.kernel(Counter))).toBe(0);
  });

  it(
    'sends that wait past queueFullTimeoutMs fail: asks reject with QueueFullError, tells are tellError events, ' +
      'all counted cancelled',
    async () => {
      const { system, counter } = await setup({ auto: false, ringCapacity: 2, system: { queueFullTimeoutMs: 100 } });
      const events: Error[] = [];
      system.on('tellError', (e) => events.push(e.error));
      system.grain(Counter, 1).tell.bump({ by: 0 });
      system.grain(Counter, 1).tell.bump({ by: 1 });
      const tell = system.grain(Counter, 1).tell.bump({ by: 2 });
      const ask = system.grain(Counter, 1).add({ by: 3 });
      await expect(ask).rejects.toBeInstanceOf(QueueFullError);
      await expect(tell).rejects.toBeInstanceOf(QueueFullError);
      expect(events).toHaveLength(1);
      expect(events[0]).toBeInstanceOf(QueueFullError);
      expect(system.counters(Counter).cancelled).toBe(2);
      // The two in the ring were accepted and still run.
      counter.step();
      expect(counter.taken.map((m) => (m.payload as { by: number }).by)).toEqual([0, 1]);
    },
  );
});

describe('GrainSystem: bulk sends', () => {
  it('askMany answers row i with ask i as columns; tellMany sends every row in order per key', async () => {
    const { system, counter } = await setup({ lanes: 3 });
    const n = 200;
    const key = Int32Array.from({ length: n }, (_, i) => i % 17);
    const by = Float64Array.from({ length: n }, (_, i) => i);
    const r = await system.askMany(Counter, 'add', { key, by });
    expect(r.total).toBeInstanceOf(Float64Array);
    expect(Array.from(r.total)).toEqual(Array.from(by, (v) => v * 2));
    expect(system.tellMany(Counter, 'bump', { key, by })).toBe(n);
    await system.idle({ timeoutMs: 5_000 });
    const bumps = counter.taken.filter((m) => m.method === 'bump');
    expect(bumps).toHaveLength(n);
    for (let k = 0; k < 17; k++) {
      const mine = bumps.filter((m) => m.key === k).map((m) => (m.payload as { by: number }).by);
      expect(mine).toEqual(Array.from(by).filter((_, i) => i % 17 === k));
    }
    expect(system.counters(Counter).sent).toBe(2 * n);
  });

  it(
    'a bad column throws SchemaValidationError naming it and sends nothing; a failed row rejects askMany with ' +
      'AskManyError after all settle',
    async () => {
      const { system, counter, fake } = await setup();
      expect(() => system.tellMany(Counter, 'bump', { key: Int32Array.of(1, 2), by: Float64Array.of(1) })).toThrow(
        SchemaValidationError,
      );
      await expect(system.askMany(Counter, 'add', { key: [1, 2.5], by: [1, 2] })).rejects.toBeInstanceOf(
        SchemaValidationError,
      );
      expect(counter.taken).toHaveLength(0);
      fake.handle = (m) => {
        if ((m.payload as { by: number }).by === 3) throw new Error('three');
        return answer(m);
      };
      const err = await system
        .askMany(Counter, 'add', { key: Int32Array.of(1, 2, 3, 4), by: Float64Array.of(1, 2, 3, 4) })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AskManyError);
      expect(err).toMatchObject({ row: 2 });
      expect(counter.taken).toHaveLength(4);
    },
  );

  it('askMany past a full ring waits and completes', async () => {
    const { system, counter } = await setup({ auto: false, ringCapacity: 4 });
    const n = 19;
    const p = system.askMany(Counter, 'add', {
      key: Int32Array.from({ length: n }, (_, i) => i),
      by: Float64Array.from({ length: n }, (_, i) => i),
    });
    let settled = false;
    void p.then(() => (settled = true));
    while (!settled) {
      counter.step();
      await turns(2);
    }
    expect(Array.from((await p).total)).toEqual(Array.from({ length: n }, (_, i) => 2 * i));
  });
});

describe('GrainSystem: idle()', () => {
  it('waits for messages not yet processed and names them when it times out', async () => {
    const { system, counter } = await setup({ auto: false });
    system.grain(Counter, 1).tell.bump({ by: 1 });
    system.grain(Counter, 2).tell.bump({ by: 1 });
    const err = await system.idle({ timeoutMs: 50 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IdleTimeoutError);
    expect((err as Error).message).toContain('2 of 2 messages not yet processed');
    counter.step();
    await system.idle({ timeoutMs: 5_000 });
    expect(system.counters(Counter).processed).toBe(2);
  });
});

describe('GrainSystem: options, placement and lifecycle', () => {
  it('refuses bad options typed at construction and at register', () => {
    const fake = new FakeBackend();
    expect(() => new GrainSystem({ backends: { fake }, logLevel: 'silent', askTimeoutMs: -1 })).toThrow(
      SystemOptionsError,
    );
    expect(() => new GrainSystem({ backends: { fake }, logLevel: 'silent', replySpinMicros: Number.NaN })).toThrow(
      SystemOptionsError,
    );
    expect(() => new GrainSystem({ backends: { fake }, logLevel: 'silent', autoOrder: ['cpu'] })).toThrow(
      PlacementError,
    );
    const system = new GrainSystem({ backends: { fake }, logLevel: 'silent' });
    expect(() => system.register(Counter, { maxActors: 0 })).toThrow(PlacementError);
    system.register(Counter);
    expect(() => system.register(Counter)).toThrow(PlacementError);
  });

  it(
    "'auto' places on the highest-ranked backend whose probe passes; a placement on a backend not given names " +
      'the fix',
    async () => {
      const low = new FakeBackend({ name: 'low' });
      const high = Object.assign(new FakeBackend({ name: 'high' }), { autoRank: 10 });
      high.probeResult = { ok: false, reason: 'no device' };
      const system = new GrainSystem({ backends: { low, high }, logLevel: 'silent', handleSignals: false });
      systems.push(system);
      system.register(Counter);
      await system.start();
      expect(system.kernel(Counter).backend).toBe(low);
      expect(system.metrics()['Counter']).toMatchObject({ backend: 'low', state: 'active' });

    const other = new GrainSystem({ backends: { low }, logLevel: 'silent', handleSignals: false });
    other.register(Counter, { placement: 'cuda' });
    const err = await other.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BackendUnavailableError);
    expect((err as Error).message).toContain('CudaBackend');
    // The one start's error again, not a second attempt.
    await expect(other.start()).rejects.toBe(err);
  });

  it(
    'start launches and activates every kernel once; register after start is refused; shutdown drains, stops ' +
      'and disposes',
    async () => {
      const { system, fake, counter } = await setup();
      expect(system.kernels().map((k) => k.state)).toEqual(['active', 'active']);
      expect(() => system.register(Unregistered, { placement: 'fake' })).toThrow(PlacementError);
      const transitions: string[] = [];
      system.on('transition', (e) => transitions.push(`${e.grain}:${e.to}`));
      system.grain(Counter, 1).tell.bump({ by: 1 });
      await system.shutdown();
      expect(counter.taken).toHaveLength(1);
      expect(transitions).toEqual(['Counter:terminated', 'Named:terminated']);
      expect(counter.disposed).toBe(true);
      expect(fake.disposed).toBe(1);
      expect(() => system.grain(Counter, 1).tell.bump({ by: 1 })).toThrow(KernelTerminatedError);
    },
  );

  it("shutdown in 'reject' mode fails what still waits with KernelTerminatedError", async () => {
    const { system } = await setup({ auto: false });
    const ask = system.grain(Counter, 1).add({ by: 1 });
    const done = system.shutdown({ mode: 'reject', timeoutMs: 200 });
    await expect(ask).rejects.toBeInstanceOf(KernelTerminatedError);
    await done.catch(() => undefined);
  });
});
