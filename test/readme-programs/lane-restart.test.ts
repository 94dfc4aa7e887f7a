/**
 * README (CPU backend): "A thread that dies (e.g. `process.exit` in a handler) is replaced at once, and every
 * kernel that had a lane on it moves that lane to the new thread ...: only the asks waiting on that lane fail
 * (`WorkerDiedError`, and a `laneRestart` event `{ grain, lane, error, failedAsks }`), the other lanes never
 * stop, the lane's actors start from fresh state ..., so `metrics()` still balances. After
 * `new CpuBackend({ laneRestarts })` moves of one lane (default 3) the next death faults the kernel
 * (`terminate` + `launch` to recover)."
 */
import { GrainSystem, type RinggrainError } from '@ringgrain/core';
import { laneOfKey } from '@ringgrain/core/backend';
import { CpuBackend, WorkerDiedError } from '@ringgrain/cpu-backend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imbalance } from './backends.ts';
import { Account, Exiter } from './grains.ts';

type LaneRestart = { grain: string; lane: number; error: Error; failedAsks: number };

const keyOnLane = (lane: number, from = 0): number => {
  for (let k = from; ; k++) if (laneOfKey(k, 2) === lane) return k;
};

async function until(cond: () => boolean, ms = 20_000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('cpu: a handler that calls process.exit', () => {
  let system: GrainSystem;
  const restarts: LaneRestart[] = [];
  const faults: Array<{ grain: string; error: Error }> = [];
  beforeAll(async () => {
    // heartbeatTimeoutMs: these cases are about deaths, not stalls. A thread's exit event can come seconds late on a
    // loaded 2-core machine (load average ~25 saw 5 s), and the ask waiting on the dying lane would fault the
    // kernel as a stalled heartbeat first.
    system = new GrainSystem({
      backends: { cpu: new CpuBackend({ threads: 2 }) /* laneRestarts: the default 3 */ },
      logLevel: 'silent',
      handleSignals: false,
      heartbeatTimeoutMs: 120_000,
    });
    system.register(Exiter, { placement: 'cpu' }).register(Account, { placement: 'cpu' });
    system.on('laneRestart', (e) => restarts.push(e));
    system.on('fault', (e) => faults.push(e));
    await system.start();
  });
  afterAll(() => system.shutdown({ mode: 'reject', timeoutMs: 5000 }));

  const dying = keyOnLane(0);
  const other = keyOnLane(1);
  const dyingToo = keyOnLane(0, dying + 1);

  it(
    'the ask on the dying lane fails with WorkerDiedError; laneRestart says grain, lane, error, failedAsks; ' +
      'the other lane keeps its actors',
    async () => {
      for (let i = 0; i < 3; i++) {
        await system.grain(Exiter, dyingToo).inc({});
        await system.grain(Exiter, other).inc({});
      }
      await system.grain(Account, other).deposit({ amount: 10 });
      const e = await system
        .grain(Exiter, dying)
        .exit({ code: 3 })
        .then(
          () => undefined,
          (x: unknown) => x,
        );
      expect(e).toBeInstanceOf(WorkerDiedError);
      expect((e as RinggrainError).code).toBe('WORKER_DIED');
      expect((e as RinggrainError).hint).toBeTruthy();
      await until(() => restarts.some((r) => r.grain === 'Exiter'));
      const r = restarts.find((x) => x.grain === 'Exiter')!;
      expect(r.lane).toBe(0);
      expect(r.failedAsks).toBe(1);
      expect(r.error).toBeInstanceOf(WorkerDiedError);
      // The kernel keeps serving: lane 1 never stopped (its actors kept their state), lane 0's start fresh.
      expect(system.kernel(Exiter).state).toBe('active');
      expect(await system.grain(Exiter, other).inc({})).toEqual({ n: 4 });
      expect(await system.grain(Exiter, dyingToo).inc({})).toEqual({ n: 1 });
      expect(await system.grain(Account, other).get({})).toEqual({ balance: 10, ops: 1 });
      // The other class's lane on that thread moved too and serves.
      expect(await system.grain(Account, dying).deposit({ amount: 1 })).toEqual({ balance: 1 });
      expect(faults).toEqual([]);
      await system.idle({ timeoutMs: 10_000 });
      expect(await imbalance(system)).toEqual([]);
    },
  );

  it(
    'askMany rows waiting on the dying lane fail (AskManyError, its cause WorkerDiedError); rows on the ' +
      'other lane are answered',
    async () => {
      const kernel = system.kernel(Account);
      await kernel.deactivate();
      const keys = [other, dying, other, dying];
      const many = system.askMany(Account, 'deposit', { key: keys, amount: [1, 1, 1, 1] }).then(
        () => undefined,
        (e: unknown) => e,
      );
      await kernel.activate();
      const before = restarts.length;
      const kill = system
        .grain(Exiter, dying)
        .exit({ code: 4 })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      const e = (await many) as { row?: number; cause?: unknown } | undefined;
      // The rows ran before the thread died (they were sent first): all answered, or the dying lane's rows failed
      // typed.
      if (e !== undefined) {
        expect((e as { code?: string }).code).toBe('ASK_MANY');
        expect(e.cause).toBeInstanceOf(WorkerDiedError);
      }
      expect(await kill).toBeInstanceOf(WorkerDiedError);
      await until(() => restarts.slice(before).some((r) => r.grain === 'Exiter'));
      expect((await system.grain(Account, other).get({})).balance).toBeGreaterThanOrEqual(12);
      await system.idle({ timeoutMs: 10_000 });
      expect(await imbalance(system)).toEqual([]);
    },
  );

  it(
    'a tell that kills the thread: laneRestart with failedAsks 0, tells behind it on other lanes still run; ' +
      'counters balance',
    async () => {
      const before = restarts.length;
      const balance = (await system.grain(Account, other).get({})).balance;
      system.grain(Exiter, dying).tell.exitTell({ code: 1 });
      for (let i = 0; i < 10; i++) system.grain(Account, other).tell.credit({ amount: 1 });
      await until(() => restarts.slice(before).some((r) => r.grain === 'Exiter'));
      const r = restarts.slice(before).find((x) => x.grain === 'Exiter')!;
      expect(r).toMatchObject({ grain: 'Exiter', lane: 0, failedAsks: 0 });
      expect((await system.grain(Account, other).get({})).balance).toBe(balance + 10);
      expect(await system.grain(Exiter, dyingToo).inc({})).toEqual({ n: 1 });
      await system.idle({ timeoutMs: 10_000 });
      expect(await imbalance(system)).toEqual([]);
    },
  );

  it(
    'past laneRestarts moves of a lane the next death faults the kernel (typed, a fault event); terminate + ' +
      'launch recovers',
    async () => {
      const e = await system
        .grain(Exiter, dying)
        .exit({ code: 2 })
        .then(
          () => undefined,
          (x: unknown) => x,
        );
      expect(e).toBeInstanceOf(WorkerDiedError);
      await until(() => faults.some((f) => f.grain === 'Exiter'));
      expect(faults.find((f) => f.grain === 'Exiter')!.error.message).toMatch(/laneRestarts/);
      expect(system.kernel(Exiter).state).toBe('faulted');
      const sendErr = await system
        .grain(Exiter, other)
        .inc({})
        .then(
          () => undefined,
          (x: unknown) => x,
        );
      expect((sendErr as RinggrainError).code).toBe('KERNEL_FAULT');
      // Every kernel with a lane on that thread had it moved as often: Account faults alike.
      await until(() => faults.some((f) => f.grain === 'Account'));
      expect(system.kernel(Account).state).toBe('faulted');
      // Even faulted, what the dead thread took counts (received and rejected): the counters balance, idle() passes.
      await system.idle({ timeoutMs: 10_000 });
      expect(await imbalance(system)).toEqual([]);
      await system.kernel(Exiter).terminate();
      await system.launch(Exiter);
      await system.kernel(Account).terminate();
      await system.launch(Account);
      expect(await system.grain(Exiter, other).inc({})).toEqual({ n: 1 });
      expect(await system.grain(Exiter, dying).inc({})).toEqual({ n: 1 });
      expect(await system.grain(Account, dying).deposit({ amount: 2 })).toEqual({ balance: 2 });
      await system.idle({ timeoutMs: 10_000 });
      expect(await imbalance(system)).toEqual([]);
    },
  );
});
