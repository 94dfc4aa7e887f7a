/**
 * README "Lifecycle": Created → Launched → Active ⇄ Deactivated → Terminated (`system.kernel(Account).deactivate()`,
 * …).
 * Messages sent while deactivated queue and run after activate. Invalid transitions throw InvalidTransitionError;
 * every transition emits a `transition` event. "terminate + launch to recover".
 */
import {
  AskManyError,
  KernelTerminatedError,
  type RinggrainError,
  type GrainSystem,
  type TransitionEvent,
} from '@ringgrain/core';
import { InvalidTransitionError } from '@ringgrain/core/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, imbalance, startSystem } from './backends.ts';
import { Account, Probe } from './grains.ts';

async function thrown(p: () => Promise<unknown>): Promise<unknown> {
  try {
    await p();
  } catch (e) {
    return e;
  }
  return undefined;
}

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  let system: GrainSystem;
  const events: TransitionEvent[] = [];
  beforeAll(async () => {
    system = await startSystem(backend, [Account, Probe]);
    system.on('transition', (e) => events.push(e));
  });
  afterAll(() => system.shutdown({ mode: 'reject' }));

  it(
    'a started kernel is active; the whole cycle emits its transition events in order, each with grain and ' +
      'backend',
    async () => {
      const k = system.kernel(Account);
      expect(k.state).toBe('active');
      events.length = 0;
      await k.deactivate();
      expect(k.state).toBe('deactivated');
      await k.activate();
      await k.deactivate();
      await k.terminate();
      expect(k.state).toBe('terminated');
      await k.launch();
      expect(k.state).toBe('launched');
      await k.activate();
      expect(k.state).toBe('active');
      expect(events.map((e) => `${e.from}->${e.to}`)).toEqual([
        'active->deactivated',
        'deactivated->active',
        'active->deactivated',
        'deactivated->terminated',
        'terminated->launched',
        'launched->active',
      ]);
      for (const e of events) expect(e).toMatchObject({ grain: 'Account', backend });
      expect(await system.grain(Account, 1).deposit({ amount: 3 })).toEqual({ balance: 3 });
      expect(system.metrics()['Account']!.state).toBe('active');
    },
  );

  it(
    'every invalid transition throws InvalidTransitionError ' + '(typed, with code and hint) and changes nothing',
    async () => {
      const k = system.kernel(Account);
      const check = async (action: 'launch' | 'activate' | 'deactivate' | 'terminate', state: string) => {
        const e = await thrown(() => k[action]());
        expect(e, `${action} while ${state}`).toBeInstanceOf(InvalidTransitionError);
        expect((e as InvalidTransitionError).code).toBe('INVALID_TRANSITION');
        expect((e as InvalidTransitionError).hint).toBeTruthy();
        expect((e as Error).message).toContain(action);
        expect((e as Error).message).toContain(state);
        expect(k.state).toBe(state);
      };
      events.length = 0;
      // active: launch and activate are invalid
      await check('launch', 'active');
      await check('activate', 'active');
      // deactivated: launch and deactivate are invalid
      await k.deactivate();
      await check('launch', 'deactivated');
      await check('deactivate', 'deactivated');
      await k.activate();
      // terminated: activate, deactivate, terminate are invalid
      await k.terminate();
      await check('activate', 'terminated');
      await check('deactivate', 'terminated');
      await check('terminate', 'terminated');
      // launched: launch and deactivate are invalid
      await k.launch();
      await check('launch', 'launched');
      await check('deactivate', 'launched');
      await k.activate();
      // Only the valid calls emitted events.
      expect(events.map((e) => `${e.from}->${e.to}`)).toEqual([
        'active->deactivated',
        'deactivated->active',
        'active->terminated',
        'terminated->launched',
        'launched->active',
      ]);
      expect(await system.grain(Account, 2).deposit({ amount: 1 })).toEqual({ balance: 1 });
    },
  );

  it('tells and asks sent while deactivated queue and run after activate, in order', async () => {
    const k = system.kernel(Probe);
    await k.deactivate();
    for (let i = 1; i <= 300; i++) system.grain(Probe, 1).tell.seq({ n: i });
    const asks = Array.from({ length: 20 }, (_, i) => system.grain(Probe, 100 + i).flip({ on: i % 2 === 0 }));
    const read = system.grain(Probe, 1).read({});
    let settled = false;
    void Promise.allSettled([read, ...asks]).then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(settled).toBe(false);
    await k.activate();
    expect(await read).toMatchObject({ last: 300, bad: 0, count: 300 });
    expect((await Promise.all(asks)).map((r) => r.on)).toEqual(Array.from({ length: 20 }, (_, i) => i % 2 === 0));
    expect(await imbalance(system)).toEqual([]);
  });

  it('a kernel launched (not yet activated) queues messages too; activate runs them', async () => {
    const k = system.kernel(Probe);
    await k.terminate();
    await k.launch();
    expect(k.state).toBe('launched');
    system.grain(Probe, 2).tell.seq({ n: 1 });
    const r = system.grain(Probe, 2).read({});
    await k.activate();
    expect(await r).toMatchObject({ last: 1, count: 1 });
    expect(await imbalance(system)).toEqual([]);
  });

  it(
    'terminate while deactivated: the queued asks reject with KernelTerminatedError, the queued tells count ' +
      'as hostRejected; sends after it fail typed',
    async () => {
      const k = system.kernel(Probe);
      await system.idle();
      const before = system.counters(Probe);
      await k.deactivate();
      for (let i = 0; i < 10; i++) system.grain(Probe, 3).tell.seq({ n: i + 1 });
      const asks = Promise.allSettled(Array.from({ length: 5 }, () => system.grain(Probe, 3).read({})));
      await k.terminate();
      for (const s of await asks) {
        expect(s.status).toBe('rejected');
        expect((s as PromiseRejectedResult).reason).toBeInstanceOf(KernelTerminatedError);
        expect((s as PromiseRejectedResult).reason.code).toBe('KERNEL_TERMINATED');
      }
      const after = system.counters(Probe);
      expect(after.hostRejected - before.hostRejected).toBe(15);
      expect(after.sent - before.sent).toBe(15);
      // An ask after terminate rejects typed (a Promise, never a synchronous throw from an ask).
      const p = system.grain(Probe, 3).read({});
      expect(p).toBeInstanceOf(Promise);
      const e = await thrown(() => p);
      expect(e).toBeInstanceOf(KernelTerminatedError);
      expect((e as RinggrainError).hint).toMatch(/launch/);
      // A tell after terminate throws the same typed error at the call.
      expect(() => system.grain(Probe, 3).tell.seq({ n: 1 })).toThrow(KernelTerminatedError);
      // tellMany / askMany alike.
      expect(() => system.tellMany(Probe, 'seq', { key: [1], n: [1] })).toThrow(KernelTerminatedError);
      // askMany: README "if any ask fails it rejects ... with AskManyError naming the first failed row and its error".
      const am = await thrown(() => system.askMany(Probe, 'read', { key: [1, 2] }));
      expect(am).toBeInstanceOf(AskManyError);
      expect((am as AskManyError).row).toBe(0);
      expect((am as Error).cause).toBeInstanceOf(KernelTerminatedError);
      // Relaunch (system.launch: launch + activate): fresh state, serving again; counters carried and balanced.
      await system.launch(Probe);
      expect(k.state).toBe('active');
      expect(await system.grain(Probe, 3).read({})).toMatchObject({ last: 0, count: 0 });
      expect(await imbalance(system)).toEqual([]);
    },
  );

  it('terminate while active drains (default): asks already sent are answered, not rejected', async () => {
    const k = system.kernel(Probe);
    for (let i = 1; i <= 200; i++) system.grain(Probe, 4).tell.seq({ n: i });
    const r = system.grain(Probe, 4).read({});
    await k.terminate();
    expect(await r).toMatchObject({ last: 200, bad: 0, count: 200 });
    await system.launch(Probe);
    expect(await imbalance(system)).toEqual([]);
  });

  it(
    "terminate({ mode: 'reject' }) while a deactivated kernel holds asks rejects them at once; relaunch " +
      'works again and again',
    async () => {
      for (let round = 0; round < 3; round++) {
        const k = system.kernel(Account);
        await k.deactivate();
        const a = system
          .grain(Account, 9)
          .deposit({ amount: 1 })
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        await k.terminate({ mode: 'reject' });
        expect(await a).toBeInstanceOf(KernelTerminatedError);
        await system.launch(Account);
        expect(await system.grain(Account, 9).deposit({ amount: 2 })).toEqual({ balance: 2 });
      }
      expect(await imbalance(system)).toEqual([]);
    },
  );

  it(
    'lifecycle calls made without awaiting run one at a time in call order; a duplicate among them is the ' +
      'one that throws',
    async () => {
      const k = system.kernel(Account);
      events.length = 0;
      await Promise.all([k.deactivate(), k.activate(), k.deactivate(), k.activate()]);
      expect(events.map((e) => `${e.from}->${e.to}`)).toEqual([
        'active->deactivated',
        'deactivated->active',
        'active->deactivated',
        'deactivated->active',
      ]);
      const r = await Promise.allSettled([k.deactivate(), k.deactivate(), k.activate()]);
      expect(r.map((x) => x.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((r[1] as PromiseRejectedResult).reason).toBeInstanceOf(InvalidTransitionError);
      expect(k.state).toBe('active');
      expect(await system.grain(Account, 11).deposit({ amount: 1 })).toEqual({ balance: 1 });
    },
  );

  it(
    'system.launch of a kernel that is running is an ' + 'InvalidTransitionError, and the kernel keeps serving',
    async () => {
      const e = await thrown(() => system.launch(Account));
      expect(e).toBeInstanceOf(InvalidTransitionError);
      expect(system.kernel(Account).state).toBe('active');
      expect(await system.grain(Account, 10).deposit({ amount: 1 })).toEqual({ balance: 1 });
    },
  );
});
