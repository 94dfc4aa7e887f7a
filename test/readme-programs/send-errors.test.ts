/**
 * README "Errors are typed (code, hint, cause)": oversize payloads say the slot size needed (never truncated);
 * a full ring makes senders wait (then QueueFullError); a send that has to wait is still encoded and checked at
 * the call and waits as bytes, in order; such a tell returns a Promise (await it for backpressure, or ignore it:
 * a cancelled one is a tellError event and counts in metrics().cancelled). Typed refs: `ref.tell.m` returns
 * undefined once in the ring.
 */
import {
  GrainSystem,
  PayloadTooLargeError,
  QueueFullError,
  SchemaValidationError,
  type RinggrainError,
} from '@ringgrain/core';
import { describe, expect, it } from 'vitest';
import { BACKENDS, imbalance, startSystem } from './backends.ts';
import { Named, Probe } from './grains.ts';

async function thrown(p: () => unknown): Promise<unknown> {
  try {
    await p();
  } catch (e) {
    return e;
  }
  return undefined;
}

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  it(
    'a payload over the slot size: PayloadTooLargeError at the call with the size needed and the slotSize to ' +
      'set; with that slotSize it goes through whole',
    async () => {
      const system = await startSystem(backend, [Probe]);
      let need: number;
      try {
        const bytes = new Uint8Array(900).map((_, i) => i & 0xff);
        const e = await thrown(() => system.grain(Probe, 1).blob({ bytes }));
        expect(e).toBeInstanceOf(PayloadTooLargeError);
        expect((e as RinggrainError).code).toBe('PAYLOAD_TOO_LARGE');
        const m = /needs (\d+) bytes but a slot holds (\d+)/.exec((e as Error).message);
        expect(m, (e as Error).message).not.toBeNull();
        expect(Number(m![1])).toBeGreaterThan(900);
        expect(Number(m![2])).toBeLessThan(256);
        const hint = /slotSize to at least (\d+)/.exec((e as RinggrainError).hint ?? '');
        expect(hint).not.toBeNull();
        need = Number(hint![1]);
        expect(need % 16).toBe(0);
        // The tell fails at the call too (synchronously), and nothing was sent.
        expect(() => system.grain(Probe, 1).tell.blob({ bytes })).toThrow(PayloadTooLargeError);
        await system.idle();
        expect(system.metrics()['Probe']!.sent).toBe(0);
      } finally {
        await system.shutdown();
      }
      // The slotSize the hint names is enough: the whole payload arrives (never truncated).
      const big = await startSystem(backend, [[Probe, { slotSize: need }]]);
      try {
        const bytes = new Uint8Array(900).fill(7);
        expect(await big.grain(Probe, 1).blob({ bytes })).toEqual({ n: 900 });
        // The hint's size exactly fits a payload as large as the schema's bound too.
        const e = await thrown(() => big.grain(Probe, 1).blob({ bytes: new Uint8Array(1000) }));
        if (e !== undefined) expect(e).toBeInstanceOf(PayloadTooLargeError);
      } finally {
        await big.shutdown();
      }
    },
  );

  it('a string key too long for a slot is PayloadTooLargeError, not a truncated key', async () => {
    const system = await startSystem(backend, [Named]);
    try {
      const long = 'k'.repeat(400);
      const e = await thrown(() => system.grain(Named, long).hit({ by: 1 }));
      expect(e).toBeInstanceOf(PayloadTooLargeError);
      // A key that fits, one byte different from a prefix of the long one, is its own actor.
      expect(await system.grain(Named, 'k'.repeat(100)).hit({ by: 1 })).toEqual({ hits: 1 });
      expect(await system.grain(Named, 'k'.repeat(101)).hit({ by: 1 })).toEqual({ hits: 1 });
    } finally {
      await system.shutdown();
    }
  });

  it(
    'ref.tell.m returns undefined while the ring has room, then a Promise that resolves once the message is ' +
      'in the ring (backpressure)',
    async () => {
      const system = await startSystem(backend, [[Probe, { ringCapacity: 64 }]]);
      try {
        const k = system.kernel(Probe);
        await k.deactivate();
        const returned: Array<Promise<void> | undefined> = [];
        for (let i = 1; i <= 200; i++) returned.push(system.grain(Probe, 1).tell.seq({ n: i }));
        const immediate = returned.filter((r) => r === undefined).length;
        expect(immediate).toBe(64); // ringCapacity is per lane, and key 1 has one lane
        expect(returned.slice(64).every((r) => r instanceof Promise)).toBe(true);
        // The waiting tells resolve after activate, and everything ran in order.
        const settled = Promise.all(returned.slice(64));
        await k.activate();
        await settled;
        expect(await system.grain(Probe, 1).read({})).toMatchObject({ last: 200, bad: 0, count: 200 });
        // A bad payload is refused at the call even while sends wait (it is encoded and checked there).
        await k.deactivate();
        for (let i = 0; i < 70; i++) system.grain(Probe, 2).tell.seq({ n: i + 1 });
        expect(() => system.grain(Probe, 2).tell.seq({ n: 1.5 })).toThrow(SchemaValidationError);
        await k.activate();
        await system.idle();
        expect(await system.grain(Probe, 2).read({})).toMatchObject({ last: 70, bad: 0 });
        expect(await imbalance(system)).toEqual([]);
      } finally {
        await system.shutdown();
      }
    },
  );

  it(
    'a full ring past queueFullTimeoutMs: waiting asks reject with QueueFullError, waiting tells are ' +
      'tellError events counted in cancelled; nothing is lost silently',
    async () => {
      const b = BACKENDS.find((x) => x.name === backend)!;
      const system = new GrainSystem({
        backends: { [backend]: b.make(1) },
        logLevel: 'silent',
        handleSignals: false,
        queueFullTimeoutMs: 200,
      });
      system.register(Probe, { placement: backend, ringCapacity: 64 });
      await system.start();
      try {
        const tellErrors: Error[] = [];
        system.on('tellError', (e) => tellErrors.push(e.error));
        const k = system.kernel(Probe);
        await k.deactivate();
        const tells: Array<Promise<void> | undefined> = [];
        for (let i = 1; i <= 100; i++) tells.push(system.grain(Probe, 1).tell.seq({ n: i }));
        const ask = system.grain(Probe, 1).read({});
        const askErr = await thrown(() => ask);
        expect(askErr).toBeInstanceOf(QueueFullError);
        expect((askErr as RinggrainError).code).toBe('QUEUE_FULL');
        expect((askErr as Error).message).toMatch(/Probe/);
        // Awaited waiting tells reject with the same error (ignored ones must not be unhandled rejections).
        const waiting = tells.filter((t): t is Promise<void> => t instanceof Promise);
        expect(waiting.length).toBe(36);
        for (const t of waiting) await expect(t).rejects.toBeInstanceOf(QueueFullError);
        expect(tellErrors.length).toBe(36);
        expect(tellErrors.every((e) => e instanceof QueueFullError)).toBe(true);
        await k.activate();
        await system.idle();
        const m = system.metrics()['Probe']!;
        expect(m.cancelled).toBe(37);
        expect(m.sent).toBe(64);
        expect(m.processed).toBe(64);
        // The 64 in the ring ran in order; the kernel serves on.
        expect(await system.grain(Probe, 1).read({})).toMatchObject({ last: 64, bad: 0, count: 64 });
        expect(await imbalance(system)).toEqual([]);
      } finally {
        await system.shutdown();
      }
    },
  );
});
