/**
 * Sends that wait for a full ring are bounded in bytes per kernel (SystemOptions.maxQueuedBytes): a tell
 * loop that never yields into a kernel that does not consume fails at the call with QueueLimitError once
 * the bound is reached, instead of growing the spill until the process runs out of memory; every send
 * accepted before is delivered, in order, once the kernel runs again.
 */
import { GrainSystem } from '@ringgrain/core';
import { QueueLimitError, SystemOptionsError } from '@ringgrain/core/errors';
import { describe, expect, it } from 'vitest';
import { BACKENDS, imbalance, startSystem } from '../readme-programs/backends.ts';
import { Probe } from '../readme-programs/grains.ts';

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  it('a send past maxQueuedBytes is QueueLimitError at the call; what was accepted is delivered in order', async () => {
    const system = await startSystem(backend, [[Probe, { ringCapacity: 16 }]], { maxQueuedBytes: 1 << 20 });
    try {
      await system.kernel(Probe).deactivate();
      const ref = system.grain(Probe, 1);
      let accepted = 0;
      let error: unknown;
      // A 1 MiB bound holds at most 1 MiB / 64 bytes of waiting images: the loop ends long before 1e6.
      for (let n = 1; n <= 1_000_000; n++) {
        try {
          ref.tell.seq({ n });
        } catch (e) {
          error = e;
          break;
        }
        accepted = n;
      }
      expect(error).toBeInstanceOf(QueueLimitError);
      expect(error).toMatchObject({ code: 'QUEUE_LIMIT', hint: expect.stringMatching(/maxQueuedBytes/) });
      expect(accepted).toBeGreaterThan(1000);
      expect(accepted).toBeLessThan((1 << 20) / 16);
      await system.kernel(Probe).activate();
      expect(await imbalance(system)).toEqual([]);
      // Every accepted send ran once, in order (bad counts a gap or a repeat).
      expect(await ref.read({})).toMatchObject({ count: accepted, last: accepted, bad: 0 });
      // Room again once it drained.
      ref.tell.seq({ n: accepted + 1 });
      await system.idle();
      expect(await ref.read({})).toMatchObject({ count: accepted + 1, bad: 0 });
    } finally {
      await system.shutdown();
    }
  });
});

it('maxQueuedBytes out of range is a typed SystemOptionsError', () => {
  for (const v of [0, -1, Number.NaN])
    expect(
      () => new GrainSystem({ backends: {}, maxQueuedBytes: v, handleSignals: false, logLevel: 'silent' }),
    ).toThrow(SystemOptionsError);
});
