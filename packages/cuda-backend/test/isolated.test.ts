/**
 * IsolatedCudaBackend: GPU grains in a supervised GPU host process. With a GPU: asks and K2K through the
 * shared-memory rings, then a GPU fault (illegal address) that rejects pending asks, kills the host, and a
 * relaunch that runs in a new host process, i.e. a new CUDA context (in-process recovery is impossible:
 * see gpu-fault.test.ts). Without a GPU: the host process starts and answers a launch with the driver error.
 */
import { GrainSystem } from '@ringgrain/core';
import { DEFAULT_KERNEL_OPTIONS } from '@ringgrain/core/backend';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import { GpuFaultError, GpuHostError, IsolatedCudaBackend, probeCuda } from '../src/index.ts';
import { corruptRoute, gpuHostPid } from '../src/fault-injection.ts';

const probe = probeCuda();
const small = { maxActors: 1024, ringCapacity: 256, replyCapacity: 256 };
const systems: GrainSystem[] = [];
afterAll(async () => {
  for (const s of systems) await s.shutdown({ mode: 'reject', timeoutMs: 5000 }).catch(() => undefined);
});

function system(backend: IsolatedCudaBackend): GrainSystem {
  const sys = new GrainSystem({
    backends: { cuda: backend },
    logLevel: 'silent',
    handleSignals: false,
    askTimeoutMs: 20_000,
  });
  systems.push(sys);
  return sys.register(Account, { placement: 'cuda', ...small });
}

describe.skipIf(probe.ok)('IsolatedCudaBackend without a CUDA driver/device (the GPU host process still runs)', () => {
  it('starts the GPU host, which answers a launch with the typed driver error', async () => {
    // The system would refuse placement 'cuda' after the probe; the plan goes to the backend directly.
    const backend = new IsolatedCudaBackend({ arenaBytes: 1 << 20, hostTimeoutMs: 60_000 });
    expect((await backend.probe()).ok).toBe(false);
    const plan = {
      grainId: 0,
      grain: Account.grain,
      grains: [Account.grain],
      options: { ...DEFAULT_KERNEL_OPTIONS, ...small },
      logger: pino({ level: 'silent' }),
    };
    const err = await backend.createKernel(plan).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(GpuHostError);
    expect(String((err as Error).message)).toMatch(/libcuda|CUDA driver|driver/i);
    expect(backend.hostsStarted).toBe(1);
    await backend.dispose();
  }, 90_000);
});

describe.skipIf(!probe.ok)(`IsolatedCudaBackend on the GPU${probe.ok ? ` (${probe.device.name})` : ''}`, () => {
  it('a GPU host refuses fault injection unless the backend was built with faultInjection: true', async () => {
    const backend = new IsolatedCudaBackend({ arenaBytes: 16 << 20 });
    try {
      await expect(corruptRoute(backend, 0)).rejects.toThrow(/fault injection is off.*faultInjection: true/);
    } finally {
      await backend.dispose();
    }
  });

  it('asks and K2K through the GPU host; a GPU fault rejects pending asks, and the relaunch runs in a new host ' +
    '(a new CUDA context)', async () => {
    const backend = new IsolatedCudaBackend({ partitions: 4, arenaBytes: 64 << 20, faultInjection: true });
    const sys = system(backend);
    await sys.start();
    const a = sys.grain(Account, 1);
    expect(await a.deposit({ amount: 50 })).toEqual({ balance: 50 });
    a.tell.transfer({ to: 2, amount: 20 });
    expect(await a.balance({})).toMatchObject({ balance: 30 }); // FIFO per actor: the transfer ran first
    let b = 0;
    for (let i = 0; i < 200 && b !== 20; i++)
      b = ((await sys.grain(Account, 2).balance({})) as { balance: number }).balance;
    expect(b).toBe(20); // the K2K credit, sent on the GPU
    const firstPid = gpuHostPid(backend);

    await corruptRoute(backend, sys.kernel(Account).grainId);
    const t0 = performance.now();
    a.tell.transfer({ to: 2, amount: 1 }); // K2K through the corrupted route: an illegal address on the GPU
    const err = await a.balance({}).then(() => undefined, (e: unknown) => e);
    const detectedMs = performance.now() - t0;
    console.log(`isolated: GPU fault detected and the ask rejected after ${detectedMs.toFixed(1)} ms`);
    expect(err).toBeInstanceOf(GpuFaultError);
    expect(detectedMs).toBeLessThan(2000);

    await sys.kernel(Account).terminate();
    const t1 = performance.now();
    await sys.launch(Account);
    console.log(`isolated: relaunched in a new GPU host in ${(performance.now() - t1).toFixed(0)} ms`);
    expect(backend.hostsStarted).toBe(2);
    expect(gpuHostPid(backend)).not.toBe(firstPid);
    expect(await sys.grain(Account, 7).deposit({ amount: 5 })).toEqual({ balance: 5 });
    expect(await sys.grain(Account, 7).balance({})).toMatchObject({ balance: 5 });
  }, 180_000);
});
