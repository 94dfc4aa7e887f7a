import { GrainSystem, KernelFaultError, HandlerError, type AnyGrainClass } from '@ringgrain/core';
import { afterEach, describe, expect, it } from 'vitest';
import { CpuBackend, GrainModuleError, WorkerDiedError } from '../src/index.ts';
import { Crashy, Misplaced } from './fixtures.ts';

let system: GrainSystem | undefined;
afterEach(async () => {
  await system?.shutdown({ mode: 'reject', timeoutMs: 1000 });
  system = undefined;
});

function make(grains: AnyGrainClass[], opts: { heartbeatTimeoutMs?: number } = {}): GrainSystem {
  system = new GrainSystem({ backends: { cpu: new CpuBackend() }, logLevel: 'silent', handleSignals: false, ...opts });
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
