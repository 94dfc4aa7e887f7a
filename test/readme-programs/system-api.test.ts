/**
 * The system's own calls as a user strings them together: start() twice (also concurrently), register after
 * start, shutdown() twice, idle({ timeoutMs }) and IdleTimeoutError naming what did not balance, an unknown
 * grain class, an unknown method.
 */
import { GrainSystem, RinggrainError, KernelTerminatedError } from '@ringgrain/core';
import { IdleTimeoutError, PlacementError, UnknownGrainError, UnknownMethodError } from '@ringgrain/core/errors';
import { describe, expect, it } from 'vitest';
import { BACKENDS, imbalance, startSystem } from './backends.ts';
import { Account, Named, Orphan, Probe } from './grains.ts';

async function thrown(p: () => unknown): Promise<unknown> {
  try {
    await p();
  } catch (e) {
    return e;
  }
  return undefined;
}

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  const make = () =>
    new GrainSystem({
      backends: { [backend]: BACKENDS.find((b) => b.name === backend)!.make() },
      logLevel: 'silent',
      handleSignals: false,
    });

  it('start() called twice at once: both resolve only once the system serves', async () => {
    const s = make().register(Account, { placement: backend });
    try {
      const a = s.start();
      await s.start(); // a second caller that awaits start must find a started system
      expect(await s.grain(Account, 1).deposit({ amount: 2 })).toEqual({ balance: 2 });
      await a;
      await s.start(); // and once more, after: nothing new, still serving
      expect(await s.grain(Account, 1).deposit({ amount: 2 })).toEqual({ balance: 4 });
      expect(s.kernels().length).toBe(1);
    } finally {
      await s.shutdown();
    }
  });

  it('register after start is a PlacementError naming the class; the system keeps serving', async () => {
    const s = await startSystem(backend, [Account]);
    try {
      const e = await thrown(() => s.register(Probe, { placement: backend }));
      expect(e).toBeInstanceOf(PlacementError);
      expect((e as Error).message).toMatch(/Probe/);
      // Registering the same class twice is refused too (before start it would also be).
      expect(() => make().register(Account).register(Account)).toThrow(PlacementError);
      expect(await s.grain(Account, 1).deposit({ amount: 1 })).toEqual({ balance: 1 });
    } finally {
      await s.shutdown();
    }
  });

  it('shutdown() twice (and at once) resolves both times; sends after it fail typed', async () => {
    const s = await startSystem(backend, [Account]);
    await s.grain(Account, 1).deposit({ amount: 1 });
    await Promise.all([s.shutdown(), s.shutdown()]);
    await s.shutdown();
    expect(s.metrics()['Account']!.state).toBe('terminated');
    expect(await thrown(() => s.grain(Account, 1).deposit({ amount: 1 }))).toBeInstanceOf(KernelTerminatedError);
    expect(() => s.grain(Account, 1).tell.credit({ amount: 1 })).toThrow(KernelTerminatedError);
  });

  it('sending before start() fails typed, at the call', async () => {
    const s = make().register(Account, { placement: backend });
    const e = await thrown(() => s.grain(Account, 1).deposit({ amount: 1 }));
    expect(e).toBeInstanceOf(RinggrainError);
    expect((e as RinggrainError).code).toBe('KERNEL_NOT_RUNNING');
    expect(() => s.grain(Account, 1).tell.credit({ amount: 1 })).toThrow(RinggrainError);
    await s.shutdown();
  });

  it('an unregistered grain class is UnknownGrainError (grain, kernel, tellMany, askMany, counters)', async () => {
    const s = await startSystem(backend, [Account]);
    try {
      for (const call of [
        () => s.grain(Orphan, 1),
        () => s.kernel(Orphan),
        () => s.counters(Orphan),
        () => s.tellMany(Orphan, 'ping', { key: [1], v: [1] }),
        () => s.askMany(Orphan, 'ping' as never, { key: [1] } as never),
      ]) {
        const e = await thrown(call);
        expect(e).toBeInstanceOf(UnknownGrainError);
        expect((e as RinggrainError).code).toBe('UNKNOWN_GRAIN');
        expect((e as Error).message).toMatch(/Orphan/);
      }
    } finally {
      await s.shutdown();
    }
  });

  it(
    'an unknown method (untyped JS caller) is UnknownMethodError for tellMany/askMany; a ref has no such ' + 'property',
    async () => {
      const s = await startSystem(backend, [Account]);
      try {
        const e1 = await thrown(() => s.tellMany(Account, 'withdraw' as never, { key: [1] } as never));
        expect(e1).toBeInstanceOf(UnknownMethodError);
        expect((e1 as Error).message).toMatch(/withdraw/);
        const e2 = await thrown(() => s.askMany(Account, 'withdraw' as never, { key: [1] } as never));
        expect(e2).toBeInstanceOf(UnknownMethodError);
        expect((s.grain(Account, 1) as unknown as Record<string, unknown>)['withdraw']).toBeUndefined();
        await s.idle();
        expect(s.metrics()['Account']!.sent).toBe(0);
      } finally {
        await s.shutdown();
      }
    },
  );

  it(
    'idle({ timeoutMs }) with a deactivated kernel holding messages: IdleTimeoutError names the class and ' +
      'the count; idle() passes after activate',
    async () => {
      const s = await startSystem(backend, [Account, Named]);
      try {
        await s.kernel(Named).deactivate();
        for (let i = 0; i < 7; i++) s.grain(Named, 'k').tell.poke({ by: 1 });
        const e = await thrown(() => s.idle({ timeoutMs: 50 }));
        expect(e).toBeInstanceOf(IdleTimeoutError);
        expect((e as IdleTimeoutError).code).toBe('IDLE_TIMEOUT');
        expect((e as IdleTimeoutError).unbalanced.join('; ')).toMatch(
          /NamedRP \(deactivated\): 7 of 7 messages not yet processed/,
        );
        expect((e as IdleTimeoutError).unbalanced.join('; ')).not.toMatch(/Account/);
        expect((e as Error).message).toMatch(/50 ms/);
        await s.kernel(Named).activate();
        await s.idle({ timeoutMs: 10_000 });
        expect((await s.grain(Named, 'k').hit({ by: 0 })).hits).toBe(7);
        expect(await imbalance(s)).toEqual([]);
      } finally {
        await s.shutdown();
      }
    },
  );
});

describe.each(BACKENDS.map((b) => b.name))('%s: shutdown racing a kernel terminate', (backend) => {
  it('kernel(G).terminate() and shutdown() at once both resolve; the kernel ends terminated', async () => {
    const s = await startSystem(backend, [Account, Probe]);
    await s.grain(Account, 1).deposit({ amount: 1 });
    await Promise.all([s.kernel(Account).terminate(), s.shutdown()]);
    expect(s.metrics()['Account']!.state).toBe('terminated');
    expect(s.metrics()['Probe']!.state).toBe('terminated');
  });
});
