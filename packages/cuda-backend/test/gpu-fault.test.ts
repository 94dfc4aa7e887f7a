/**
 * A GPU fault inside a ring kernel, in a file of its own: CUDA keeps a sticky fault (illegal address)
 * for the rest of the process, so nothing else may share this process's GPU after it. Measured on the
 * H100: after the fault, resetting and releasing the primary context, a new retain still fails with
 * CUDA_ERROR_ILLEGAL_ADDRESS. Recovery is a new process; this file checks everything up to there.
 */
import { GrainSystem } from '@ringgrain/core';
import { afterAll, describe, expect, it } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import { CudaBackend, GpuFaultError, probeCuda } from '../src/index.ts';
import { corruptRoute } from '../src/fault-injection.ts';

const probe = probeCuda();
const lane = probe.ok
  ? `on the GPU (${probe.device.name})`
  : `on the GPU (skipped: no CUDA driver/device — ${probe.reason})`;
const gpu = probe.ok ? describe : describe.skip;
const small = { maxActors: 1024, ringCapacity: 256, replyCapacity: 256 };

gpu(`GPU fault ${lane}`, () => {
  const systems: GrainSystem[] = [];
  afterAll(async () => {
    for (const s of systems) await s.shutdown({ mode: 'reject', timeoutMs: 2000 }).catch(() => undefined);
  });

  it(
    'rejects pending asks with GpuFaultError within the sweep interval; a relaunch says the process must restart',
    async () => {
      const backend = new CudaBackend({ partitions: 4 });
      const sys = new GrainSystem({
        backends: { cuda: backend },
        logLevel: 'silent',
        handleSignals: false,
        askTimeoutMs: 10_000,
      });
      systems.push(sys);
      sys.register(Account, { placement: 'cuda', ...small });
      await sys.start();
      const faults: Error[] = [];
      sys.on('fault', (e) => faults.push(e.error));
      const a = sys.grain(Account, 1);
      expect(await a.deposit({ amount: 50 })).toEqual({ balance: 50 });
      await corruptRoute(backend, sys.kernel(Account).grainId);
      const t0 = performance.now();
      a.tell.transfer({ to: 2, amount: 1 }); // K2K through the corrupted route: an illegal address on the GPU
      const err = await a.balance({}).then(
        () => undefined,
        (e: unknown) => e,
      );
      const detectedMs = performance.now() - t0;
      console.log(`GPU fault detected and the ask rejected after ${detectedMs.toFixed(1)} ms`);
      expect(err).toBeInstanceOf(GpuFaultError);
      expect((err as GpuFaultError).code).toBe('GPU_FAULT');
      expect(detectedMs).toBeLessThan(1000); // health is polled every 50 ms (healthIntervalMs) by the 50 ms sweep
      expect(faults.length).toBe(1);
      await sys.kernel(Account).terminate();
      const again = await sys.launch(Account).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(again).toBeInstanceOf(Error);
      expect(String((again as Error).message)).toMatch(/sticky fault|restart the process/);
    },
  );
});
