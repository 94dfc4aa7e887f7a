import { GrainSystem, HandlerError } from '@ringgrain/core';
import { KernelFaultError } from '@ringgrain/core/errors';
import type { AnyGrainClass } from '@ringgrain/core/types';
import { CONTROL } from '@ringgrain/core/backend';
import { afterEach, describe, expect, it } from 'vitest';
import { CpuBackend, CpuBackendOptionsError, GrainModuleError, WorkerDiedError } from '../src/index.ts';
import { Crashy, Misplaced } from './fixtures.ts';
import { Coordinator, Leaf, Sender, Seq } from '../../../test/fixtures/grains.ts';

let system: GrainSystem | undefined;
afterEach(async () => {
  await system?.shutdown({ mode: 'reject', timeoutMs: 1000 });
  system = undefined;
});

function make(
  grains: AnyGrainClass[],
  opts: { heartbeatTimeoutMs?: number } = {},
  threads?: number,
  backendOpts: { laneRestarts?: number } = {},
): GrainSystem {
  system = new GrainSystem({
    backends: { cpu: new CpuBackend({ ...(threads === undefined ? {} : { threads }), ...backendOpts }) },
    logLevel: 'silent',
    handleSignals: false,
    ...opts,
  });
  for (const g of grains) system.register(g, { placement: 'cpu' });
  return system;
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection');
}

describe('CpuBackend faults', () => {
  it('probe is always ok', async () => {
    expect((await new CpuBackend().probe()).ok).toBe(true);
  });

  it(
    'a worker that dies fails the asks of its lane with WorkerDiedError and the lane goes on in a new thread ' +
      '(fresh actor state); past laneRestarts the kernel faults; relaunch recovers',
    async () => {
      const s = make([Crashy], {}, 1, { laneRestarts: 1 });
      const restarts: Array<{ grain: string; lane: number; failedAsks: number }> = [];
      s.on('laneRestart', (e) => restarts.push({ grain: e.grain, lane: e.lane, failedAsks: e.failedAsks }));
      await s.start();
      expect(await s.grain(Crashy, 1).ping({})).toEqual({ n: 1 });
      expect(await s.grain(Crashy, 1).ping({})).toEqual({ n: 2 });
      const e = await rejection(s.grain(Crashy, 1).exit({}));
      expect(e).toBeInstanceOf(WorkerDiedError);
      expect(e.message).toMatch(/pool thread 0 \(lane 0 of 1\) ended: .*moved to a new thread/);
      expect(s.kernel(Crashy).state).toBe('active');
      expect(restarts).toEqual([{ grain: 'Crashy', lane: 0, failedAsks: 1 }]);
      // The lane serves again; the actor's in-memory state went with the thread.
      expect(await s.grain(Crashy, 1).ping({})).toEqual({ n: 1 });
      await s.idle();
      // The exit turn's outcome is unknown: counted received and rejected, so the counters balance.
      const c = s.counters(Crashy);
      expect(c.sent + c.k2kReceived).toBe(c.processed + c.rejected);
      expect(c.rejected).toBe(1);
      // A second death of the same lane is past laneRestarts (1): the kernel faults, typed.
      const e2 = await rejection(s.grain(Crashy, 1).exit({}));
      expect(e2).toBeInstanceOf(WorkerDiedError);
      expect(e2.message).toMatch(/already restarted 1 times/);
      expect(s.kernel(Crashy).state).toBe('faulted');
      await s.kernel(Crashy).terminate();
      await s.launch(Crashy);
      expect(await s.grain(Crashy, 1).ping({})).toEqual({ n: 1 });
    },
  );

  it(
    "a worker that dies in the middle of a tellMany column image: the lane restarts, the image's rows are " +
      'all accounted for (processed or rejected), its buffer is free again and later images run',
    async () => {
      const s = make([Crashy], {}, 1, { laneRestarts: 1 });
      const restarts: number[] = [];
      s.on('laneRestart', (e) => restarts.push(e.lane));
      await s.start();
      expect(s.kernel(Crashy).lanes[0]!.images).toBeDefined();
      const key = Int32Array.from({ length: 1000 }, (_, i) => 40 + (i % 7));
      const die = Uint32Array.from(key, (_, i) => (i === 500 ? 1 : 0));
      expect(s.tellMany(Crashy, 'count', { key, die })).toBe(1000);
      await s.idle();
      expect(restarts).toEqual([0]);
      const c = s.counters(Crashy);
      expect(c.sent).toBe(1000);
      expect(c.received).toBe(1000);
      expect(c.processed + c.rejected).toBe(1000);
      expect(c.rejected).toBeGreaterThan(0);
      // No buffer stays held by the dead thread.
      expect(Array.from(s.kernel(Crashy).lanes[0]!.images!.busy)).toEqual([0, 0, 0, 0]);
      // The restarted lane takes images: one row per actor, fresh states.
      const key2 = Int32Array.from({ length: 700 }, (_, i) => 40 + (i % 7));
      s.tellMany(Crashy, 'count', { key: key2, die: new Uint32Array(700) });
      await s.idle();
      for (let k = 40; k < 47; k++) expect(await s.grain(Crashy, k).ping({})).toEqual({ n: 101 });
      // A worker publishes its counts after the reply: read them once the system is quiet.
      await s.idle();
      const c2 = s.counters(Crashy);
      expect(c2.sent + c2.k2kReceived).toBe(c2.processed + c2.rejected);
    },
  );

  it(
    'a handler that never returns is caught by the heartbeat ' + '(KernelFaultError), and terminate still frees it',
    async () => {
      const s = make([Crashy], { heartbeatTimeoutMs: 200 });
      await s.start();
      const t0 = performance.now();
      const e = await rejection(s.grain(Crashy, 2).spin({}));
      expect(e).toBeInstanceOf(KernelFaultError);
      expect(e.message).toMatch(/heartbeat/);
      expect(performance.now() - t0).toBeLessThan(5000);
      await s.kernel(Crashy).terminate({ timeoutMs: 200 });
      expect(s.kernel(Crashy).state).toBe('terminated');
    },
  );

  it('a K2K send to a grain not on this backend fails the turn with a HandlerError naming the target', async () => {
    const s = make([Crashy]);
    await s.start();
    const e = await rejection(s.grain(Crashy, 3).stray({}));
    expect(e).toBeInstanceOf(HandlerError);
    expect(e.message).toMatch(/Elsewhere/);
    expect(await s.grain(Crashy, 3).ping({})).toEqual({ n: 1 });
  });

  it('a grain whose module does not export it fails start with GrainModuleError', async () => {
    class M extends Misplaced {}
    const s = make([M as unknown as AnyGrainClass]);
    const e = await rejection(s.start());
    expect(e).toBeInstanceOf(GrainModuleError);
    expect(e.message).toMatch(/Misplaced/);
  });
});

describe('CpuBackend pool', () => {
  it('threads must be a positive integer (typed error, not a silent default)', () => {
    expect(() => new CpuBackend({ threads: 0 })).toThrow(CpuBackendOptionsError);
    expect(() => new CpuBackend({ threads: 1.5 })).toThrow(CpuBackendOptionsError);
  });

  it(
    'a grain class spreads over every thread: each lane ' + 'takes turns, K2K crosses threads, counters add up',
    async () => {
      const s = make([Coordinator, Leaf], {}, 3);
      await s.start();
      const leaf = s.kernel(Leaf);
      expect(leaf.lanes.length).toBe(3);
      expect(await s.grain(Coordinator, 4).scatter({ n: 300, value: 1 })).toEqual({ expected: 300 });
      await s.idle({ timeoutMs: 10_000 });
      expect(await s.grain(Coordinator, 4).result({})).toEqual({
        expected: 300,
        count: 300,
        sum: 2 * (300 * 1 + (299 * 300) / 2),
      });
      // Leaf keys 0..299 land on all three lanes (threads), and the lanes' counters sum to the kernel's.
      const perLane = leaf.lanes.map((l) => Atomics.load(l.control, CONTROL.processed));
      expect(perLane.every((n) => n > 50)).toBe(true);
      expect(perLane.reduce((a, b) => a + b, 0)).toBe(s.counters(Leaf).processed);
      expect(s.counters(Leaf).k2kReceived).toBe(300);
      expect(s.counters(Coordinator).k2kReceived).toBe(300);
    },
  );

  it(
    'K2K messages a dying thread held for a full ring are counted (received and rejected by the target), so ' +
      'metrics balance and idle() resolves',
    async () => {
      system = new GrainSystem({
        backends: { cpu: new CpuBackend({ threads: 1 }) },
        logLevel: 'silent',
        handleSignals: false,
      });
      const s = system;
      s.register(Seq, { placement: 'cpu', ringCapacity: 4 })
        .register(Sender, { placement: 'cpu' })
        .register(Crashy, { placement: 'cpu' });
      await s.start();
      // Paused, Seq takes nothing: 4 pushes fill its K2K ring, the thread holds the other 46.
      await s.kernel(Seq).deactivate();
      expect(await s.grain(Sender, 1).emit({ target: 7, from: 1, first: 1, count: 50 })).toEqual({ sent: 50 });
      expect(s.metrics()['Seq']!.overflow).toMatchObject({ inUse: 46 });
      expect(await rejection(s.grain(Crashy, 1).exit({}))).toBeInstanceOf(WorkerDiedError);
      // Bounded by a replacement worker's start (a new thread loads its modules): seconds on a loaded 2-core machine.
      await expect.poll(() => s.metrics()['Seq']!.overflow?.inUse, { timeout: 30_000 }).toBe(0);
      await s.kernel(Seq).activate();
      await s.idle({ timeoutMs: 5_000 });
      const c = s.counters(Seq);
      expect(c.sent + c.k2kReceived).toBe(c.processed + c.rejected);
      expect(c.rejected).toBe(46);
      expect((await s.grain(Seq, 7).stats({})).count).toBe(4);
      expect(s.counters(Sender).k2kSent).toBe(c.k2kReceived);
    },
  );

  it(
    "with several threads, a thread that dies fails only its lanes' asks (typed); every kernel with a lane " +
      'there moves it to the replacement thread and the other lanes keep their actors',
    async () => {
      const s = make([Crashy, Leaf, Coordinator], {}, 3);
      const restarts: Array<{ grain: string; lane: number }> = [];
      s.on('laneRestart', (e) => restarts.push({ grain: e.grain, lane: e.lane }));
      await s.start();
      // Find a key per lane; kill the thread of one lane.
      const keys = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].filter(
        (k, i, all) => all.findIndex((x) => s.kernel(Crashy).laneOf(x) === s.kernel(Crashy).laneOf(k)) === i,
      );
      expect(keys.length).toBe(3);
      for (const k of keys) expect(await s.grain(Crashy, k).ping({})).toEqual({ n: 1 });
      // Leaf actors on every lane, with state.
      const leafKeys = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].filter(
        (k, i, all) => all.findIndex((x) => s.kernel(Leaf).laneOf(x) === s.kernel(Leaf).laneOf(k)) === i,
      );
      for (const k of leafKeys) s.grain(Leaf, k).tell.work({ coord: 1, value: 5 });
      await s.idle();
      const dead = s.kernel(Crashy).laneOf(keys[0]!);
      const e = await rejection(s.grain(Crashy, keys[0]!).exit({}));
      expect(e).toBeInstanceOf(WorkerDiedError);
      expect(e.message).toMatch(new RegExp(`pool thread \\d+ \\(lane ${dead} of 3\\)`));
      // Bounded by a replacement worker's start (a new thread loads its modules): seconds on a loaded 2-core machine.
      await expect.poll(() => restarts.length, { timeout: 30_000 }).toBe(3);
      expect(restarts.sort((a, b) => a.grain.localeCompare(b.grain))).toEqual([
        { grain: 'Coordinator', lane: dead },
        { grain: 'Crashy', lane: dead },
        { grain: 'Leaf', lane: dead },
      ]);
      for (const g of [Crashy, Leaf, Coordinator]) expect(s.kernel(g).state).toBe('active');
      // The other lanes kept their actors; the dead lane's actors start again.
      for (const k of keys)
        expect(await s.grain(Crashy, k).ping({})).toEqual({ n: s.kernel(Crashy).laneOf(k) === dead ? 1 : 2 });
      for (const k of leafKeys)
        expect((await s.grain(Leaf, k).get({})).total).toBe(s.kernel(Leaf).laneOf(k) === dead ? 0 : 5);
      await s.idle();
      for (const g of [Crashy, Leaf, Coordinator]) {
        const c = s.counters(g);
        expect(c.sent + c.k2kReceived).toBe(c.processed + c.rejected);
      }
    },
  );
});
