import { CONTROL, GrainSystem, KernelFaultError, HandlerError, type AnyGrainClass } from '@ringgrain/core';
import { afterEach, describe, expect, it } from 'vitest';
import { CpuBackend, CpuBackendOptionsError, GrainModuleError, WorkerDiedError } from '../src/index.ts';
import { Crashy, Misplaced } from './fixtures.ts';
import { Coordinator, Leaf } from '../../../test/fixtures/grains.ts';

let system: GrainSystem | undefined;
afterEach(async () => {
  await system?.shutdown({ mode: 'reject', timeoutMs: 1000 });
  system = undefined;
});

function make(grains: AnyGrainClass[], opts: { heartbeatTimeoutMs?: number } = {}, threads?: number): GrainSystem {
  system = new GrainSystem({ backends: { cpu: new CpuBackend(threads === undefined ? {} : { threads }) }, logLevel: 'silent', handleSignals: false, ...opts });
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

  it('a worker that dies fails its pending asks with WorkerDiedError and marks the kernel faulted; relaunch recovers', async () => {
    const s = make([Crashy]);
    await s.start();
    expect(await s.grain(Crashy, 1).ping({})).toEqual({ n: 1 });
    const e = await rejection(s.grain(Crashy, 1).exit({}));
    expect(e).toBeInstanceOf(WorkerDiedError);
    expect(s.kernel(Crashy).state).toBe('faulted');
    await s.kernel(Crashy).terminate();
    await s.launch(Crashy);
    expect(await s.grain(Crashy, 1).ping({})).toEqual({ n: 1 });
  });

  it('a handler that never returns is caught by the heartbeat (KernelFaultError), and terminate still frees it', async () => {
    const s = make([Crashy], { heartbeatTimeoutMs: 200 });
    await s.start();
    const t0 = performance.now();
    const e = await rejection(s.grain(Crashy, 2).spin({}));
    expect(e).toBeInstanceOf(KernelFaultError);
    expect(e.message).toMatch(/heartbeat/);
    expect(performance.now() - t0).toBeLessThan(5000);
    await s.kernel(Crashy).terminate({ timeoutMs: 200 });
    expect(s.kernel(Crashy).state).toBe('terminated');
  });

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

  it('a grain class spreads over every thread: each lane takes turns, K2K crosses threads, counters add up', async () => {
    const s = make([Coordinator, Leaf], {}, 3);
    await s.start();
    const leaf = s.kernel(Leaf);
    expect(leaf.lanes.length).toBe(3);
    expect(await s.grain(Coordinator, 4).scatter({ n: 300, value: 1 })).toEqual({ expected: 300 });
    await s.idle({ timeoutMs: 10_000 });
    expect(await s.grain(Coordinator, 4).result({})).toEqual({ expected: 300, count: 300, sum: 2 * (300 * 1 + (299 * 300) / 2) });
    // Leaf keys 0..299 land on all three lanes (threads), and the lanes' counters sum to the kernel's.
    const perLane = leaf.lanes.map((l) => Atomics.load(l.control, CONTROL.processed));
    expect(perLane.every((n) => n > 50)).toBe(true);
    expect(perLane.reduce((a, b) => a + b, 0)).toBe(s.counters(Leaf).processed);
    expect(s.counters(Leaf).k2kReceived).toBe(300);
    expect(s.counters(Coordinator).k2kReceived).toBe(300);
  });

  it('with several threads, a thread that dies faults the kernels with a lane on it (typed), the pool replaces it, relaunch recovers', async () => {
    const s = make([Crashy, Leaf], {}, 3);
    await s.start();
    // Find a key per lane; kill the thread of one lane.
    const keys = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].filter((k, i, all) => all.findIndex((x) => s.kernel(Crashy).laneOf(x) === s.kernel(Crashy).laneOf(k)) === i);
    expect(keys.length).toBe(3);
    for (const k of keys) expect(await s.grain(Crashy, k).ping({})).toEqual({ n: 1 });
    const e = await rejection(s.grain(Crashy, keys[0]!).exit({}));
    expect(e).toBeInstanceOf(WorkerDiedError);
    expect(e.message).toMatch(/pool thread \d+ \(lane \d+ of 3\)/);
    expect(s.kernel(Crashy).state).toBe('faulted');
    // Leaf had a lane on that thread too: it faults as well once the sweep sees it (typed, not silent).
    await expect.poll(() => s.kernel(Leaf).state, { timeout: 5_000 }).toBe('faulted');
    await s.kernel(Crashy).terminate();
    await s.kernel(Leaf).terminate();
    await s.launch(Crashy);
    await s.launch(Leaf);
    for (const k of keys) expect(await s.grain(Crashy, k).ping({})).toEqual({ n: 1 });
    expect(await s.grain(Leaf, 5).get({})).toEqual({ total: 0, hits: 0 });
  });
});
