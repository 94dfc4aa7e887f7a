/** Lifecycle transitions with events; idle() and IdleTimeoutError; messages while deactivated run after activate. */
import type { GrainSystem, TransitionEvent } from '@ringgrain/core';
import { IdleTimeoutError, InvalidTransitionError } from '@ringgrain/core/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, imbalance, startSystem } from './backends.ts';
import { Account, Probe } from './grains.ts';

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  // One system for the three programs, in order (the last one terminates and relaunches Account).
  let system: GrainSystem;
  beforeAll(async () => {
    system = await startSystem(backend, [Account, Probe]);
  });
  afterAll(() => system.shutdown({ mode: 'reject' }));

  it('idle() with nothing sent resolves; after a K2K burst it resolves with K2K sent = received', async () => {
    await system.idle();
    await system.grain(Account, 1).deposit({ amount: 1_000 });
    for (let i = 0; i < 500; i++) system.grain(Account, 1).tell.transfer({ to: 2 + (i % 50), amount: 1 });
    await system.idle();
    const m = system.metrics()['Account']!;
    expect(m.k2kSent).toBe(500);
    expect(m.k2kReceived).toBe(500);
    expect(m.sent).toBe(501);
    expect(m.processed).toBe(1001);
    expect((await system.grain(Account, 1).get({})).balance).toBe(500);
    expect((await system.grain(Account, 2).get({})).balance).toBe(10);
  });

  it(
    'deactivated: messages wait; idle() throws IdleTimeoutError naming the class; after activate they run ' +
      'in order',
    async () => {
      const events: TransitionEvent[] = [];
      system.on('transition', (e) => events.push(e));
      const k = system.kernel(Probe);
      await k.deactivate();
      await expect(k.deactivate()).rejects.toBeInstanceOf(InvalidTransitionError);
      for (let i = 1; i <= 100; i++) system.grain(Probe, 3).tell.seq({ n: i });
      const read = system.grain(Probe, 3).read({});
      const e = await system.idle({ timeoutMs: 100 }).then(
        () => undefined,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(IdleTimeoutError);
      expect((e as Error).message).toContain('Probe');
      await k.activate();
      expect(await read).toMatchObject({ last: 100, bad: 0, count: 100 });
      await system.idle();
      expect(await imbalance(system)).toEqual([]);
      expect(events.map((x) => `${x.from}->${x.to}`)).toEqual(['active->deactivated', 'deactivated->active']);
    },
  );

  it('terminate then launch: state starts fresh; sends while terminated fail', async () => {
    await system.grain(Account, 1).deposit({ amount: 5 });
    await system.idle();
    const before = system.metrics()['Account']!;
    await system.kernel(Account).terminate();
    expect(() => system.grain(Account, 1).tell.credit({ amount: 1 })).toThrow();
    await system.launch(Account);
    expect(await system.grain(Account, 1).get({})).toEqual({ balance: 0, ops: 0 });
    await system.grain(Account, 1).deposit({ amount: 2 });
    await system.idle();
    // metrics() carries the counts across the relaunch: they go on from where they were.
    const after = system.metrics()['Account']!;
    expect([after.sent - before.sent, after.processed - before.processed]).toEqual([2, 2]);
    expect(await imbalance(system)).toEqual([]);
  });
});
