/**
 * Errors as data across the ring (core turn-error.ts): a turn the runtime refuses keeps its own error type,
 * code and hint on the host, and is not counted as the handler failing. A full actor table: the ask
 * rejects with StateTableFullError (it was a HandlerError with no hint), a tell's tellError carries it.
 */
import { GrainSystem, HandlerError, type RinggrainError } from '@ringgrain/core';
import { StateTableFullError } from '@ringgrain/core/errors';
import { CudaBackend, probeCuda } from '@ringgrain/cuda-backend';
import { Account } from '../../examples/bank/grains.ts';
import { describe, expect, it } from 'vitest';
import { BACKENDS, imbalance, startSystem } from '../readme-programs/backends.ts';
import { Probe } from '../readme-programs/grains.ts';

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  it('a full actor table is StateTableFullError with its hint, counted rejected, not a handler error', async () => {
    const system = await startSystem(backend, [[Probe, { maxActors: 2 }]]);
    try {
      const tellErrors: RinggrainError[] = [];
      system.on('tellError', (e) => tellErrors.push(e.error as RinggrainError));
      await system.grain(Probe, 1).read({});
      await system.grain(Probe, 2).read({});
      const e = await system
        .grain(Probe, 3)
        .read({})
        .catch((x: unknown) => x);
      expect(e).toBeInstanceOf(StateTableFullError);
      expect(e).not.toBeInstanceOf(HandlerError);
      expect(e).toMatchObject({ code: 'STATE_TABLE_FULL', maxActors: 2, hint: expect.stringMatching(/maxActors/) });
      expect((e as Error).message).toContain('Probe');
      system.grain(Probe, 4).tell.seq({ n: 1 });
      expect(await imbalance(system)).toEqual([]);
      expect(tellErrors).toHaveLength(1);
      expect(tellErrors[0]).toBeInstanceOf(StateTableFullError);
      const m = system.metrics()['Probe']!;
      expect(m.handlerErrors).toBe(0);
      expect(m.rejected).toBe(2);
      // A handler's own throw is still a HandlerError with its message.
      const h = await system
        .grain(Probe, 1)
        .boom({ code: 1 })
        .catch((x: unknown) => x);
      expect(h).toBeInstanceOf(HandlerError);
      expect(system.metrics()['Probe']!.handlerErrors).toBe(1);
    } finally {
      await system.shutdown();
    }
  });
});

// The CUDA runtime sends a full table as code and maxActors too (runtime/turn-run.cuh, reply.cuh rg_reply_code1).
const probe = probeCuda();
describe.skipIf(!probe.ok)(`cuda${probe.ok ? '' : ' (skipped: no CUDA driver/device on this machine)'}`, () => {
  it('a full actor table is StateTableFullError with maxActors, counted rejected, not a handler error', async () => {
    const system = new GrainSystem({
      backends: { cuda: new CudaBackend({ hostLanes: 1 }) },
      logLevel: 'silent',
      handleSignals: false,
    });
    system.register(Account, { placement: 'cuda', maxActors: 64, ringCapacity: 256, replyCapacity: 256 });
    await system.start();
    try {
      for (let key = 0; key < 64; key++) await system.grain(Account, key).deposit({ amount: 1 });
      const e = await system
        .grain(Account, 64)
        .deposit({ amount: 1 })
        .catch((x: unknown) => x);
      expect(e).toBeInstanceOf(StateTableFullError);
      expect(e).toMatchObject({ code: 'STATE_TABLE_FULL', maxActors: 64 });
      await system.idle();
      const m = system.metrics()['Account']!;
      expect(m.handlerErrors).toBe(0);
      expect(m.rejected).toBe(1);
    } finally {
      await system.shutdown();
    }
  }, 120_000);
});
