/**
 * A kernel's lifecycle: valid and invalid transitions, messages across deactivate/activate, terminate
 * and relaunch.
 */
import { KernelTerminatedError, type TransitionEvent } from '@ringgrain/core';
import { InvalidTransitionError, KernelFaultError } from '@ringgrain/core/errors';
import { expect } from 'vitest';
import { Hop1, Hop2, Hop3, Numbers, Seq } from '../../fixtures/grains.ts';
import { rejection, thrown, sleep, type ConformanceCase } from './helpers.ts';

export const lifecycleCases: ConformanceCase[] = [
  {
    name: 'lifecycle: every valid transition on a live kernel, each emitting an event',
    isolated: true,
    grains: [[Numbers]],
    async run({ system }) {
      const events: TransitionEvent[] = [];
      system.on('transition', (e) => events.push(e));
      const k = system.kernel(Numbers);
      const ref = system.grain(Numbers, 1);
      expect(k.state).toBe('active');
      await k.deactivate(); // active → deactivated
      expect(k.state).toBe('deactivated');
      await k.activate(); // deactivated → active
      expect(await ref.add({ by: 1 })).toEqual({ count: 1, total: 1 });
      await k.deactivate();
      await k.terminate(); // deactivated → terminated
      expect(k.state).toBe('terminated');
      await k.launch(); // terminated → launched
      expect(k.state).toBe('launched');
      await k.terminate(); // launched → terminated
      await k.launch();
      await k.activate(); // launched → active
      expect(await ref.add({ by: 2 })).toEqual({ count: 1, total: 2 });
      await k.terminate(); // active → terminated
      await k.launch();
      await k.activate();
      k.markFaulted(new Error('injected fault')); // active → faulted
      expect(k.state).toBe('faulted');
      expect(await rejection(ref.add({ by: 1 }))).toBeInstanceOf(KernelFaultError);
      await k.terminate(); // faulted → terminated
      await k.launch();
      await k.activate();
      expect(await ref.add({ by: 3 })).toEqual({ count: 1, total: 3 });
      const path = events.map((e) => `${e.from}>${e.to}`);
      expect(path).toEqual([
        'active>deactivated',
        'deactivated>active',
        'active>deactivated',
        'deactivated>terminated',
        'terminated>launched',
        'launched>terminated',
        'terminated>launched',
        'launched>active',
        'active>terminated',
        'terminated>launched',
        'launched>active',
        'active>faulted',
        'faulted>terminated',
        'terminated>launched',
        'launched>active',
      ]);
      expect(events.every((e) => e.grain === 'Numbers')).toBe(true);
    },
  },
  {
    name: 'lifecycle: every invalid transition is rejected with InvalidTransitionError and changes nothing',
    isolated: true,
    grains: [[Numbers]],
    async run({ system }) {
      const k = system.kernel(Numbers);
      const ref = system.grain(Numbers, 1);
      const invalid = async (action: 'launch' | 'activate' | 'deactivate' | 'terminate') => {
        const before = k.state;
        const e = await rejection(k[action]());
        expect(e, `${action} while ${before}`).toBeInstanceOf(InvalidTransitionError);
        expect(k.state).toBe(before);
      };
      // active
      await invalid('launch');
      await invalid('activate');
      expect(await ref.add({ by: 1 })).toEqual({ count: 1, total: 1 });
      // deactivated
      await k.deactivate();
      await invalid('launch');
      await invalid('deactivate');
      await k.activate();
      expect(await ref.add({ by: 1 })).toEqual({ count: 2, total: 2 });
      // launched
      await k.terminate();
      await k.launch();
      await invalid('launch');
      await invalid('deactivate');
      // terminated
      await k.terminate();
      await invalid('activate');
      await invalid('deactivate');
      await invalid('terminate');
      // faulted
      await k.launch();
      await k.activate();
      k.markFaulted(new Error('injected'));
      await invalid('launch');
      await invalid('activate');
      await invalid('deactivate');
      await k.terminate();
      await k.launch();
      await k.activate();
      expect(await ref.add({ by: 5 })).toEqual({ count: 1, total: 5 });
    },
  },
  {
    name: 'messages sent while deactivated are processed after activate, in order',
    isolated: true,
    grains: [[Seq]],
    async run({ system }) {
      const k = system.kernel(Seq);
      await k.deactivate();
      const asks: Array<Promise<{ count: number }>> = [];
      for (let i = 1; i <= 100; i++) {
        if (i % 10 === 0) asks.push(system.grain(Seq, 1).pushAsk({ sender: 0, seq: i }));
        else expect(system.grain(Seq, 1).tell.push({ sender: 0, seq: i })).toBeUndefined();
      }
      await sleep(30);
      expect(k.counters().processed).toBe(0);
      expect(k.counters().inboundDepth).toBe(100);
      await k.activate();
      expect((await Promise.all(asks)).map((r) => r.count)).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
      const st = await system.grain(Seq, 1).stats({});
      expect(st.violations).toBe(0);
      expect(st.last[0]).toBe(100);
    },
  },
  {
    name: 'terminate with pending asks rejects them with KernelTerminatedError',
    isolated: true,
    grains: [[Numbers]],
    async run({ system }) {
      const k = system.kernel(Numbers);
      await k.deactivate();
      // rejection() attaches a handler now: the asks reject during terminate().
      const asks = [1, 2, 3].map((i) => rejection(system.grain(Numbers, i).add({ by: i })));
      await sleep(10);
      expect(k.counters().processed).toBe(0);
      await k.terminate();
      for (const a of asks) expect(await a).toBeInstanceOf(KernelTerminatedError);
      const c = k.counters();
      expect(c.sent).toBe(3);
      expect(c.processed).toBe(0);
      expect(c.hostRejected).toBe(3);
    },
  },
  {
    name: 'ask or tell to a terminated kernel fails with KernelTerminatedError',
    isolated: true,
    grains: [[Numbers]],
    async run({ system }) {
      await system.kernel(Numbers).terminate();
      expect(await rejection(system.grain(Numbers, 1).add({ by: 1 }))).toBeInstanceOf(KernelTerminatedError);
      expect(thrown(() => system.grain(Numbers, 1).tell.add({ by: 1 }))).toBeInstanceOf(KernelTerminatedError);
      expect(system.kernel(Numbers).counters().sent).toBe(0);
    },
  },
  {
    name: 'relaunch after terminate works and state starts fresh',
    isolated: true,
    grains: [[Numbers], [Hop1], [Hop2], [Hop3]],
    async run({ system }) {
      const ref = system.grain(Numbers, 9);
      expect(await ref.add({ by: 7 })).toEqual({ count: 1, total: 7 });
      expect(await system.grain(Hop1, 1).go({ x: 1, trail: 0 })).toEqual({ x: 9, trail: 123, by: 3 });
      await system.kernel(Numbers).terminate();
      await system.launch(Numbers);
      expect(system.kernel(Numbers).state).toBe('active');
      expect(await ref.load({})).toEqual({ f32: 0, f64: 0, i32: 0, u32: 0, b: false, count: 0, total: 0 });
      expect(await ref.add({ by: 1 })).toEqual({ count: 1, total: 1 });
      // A relaunched kernel in a K2K chain is reachable again.
      await system.kernel(Hop2).terminate();
      await system.launch(Hop2);
      expect(await system.grain(Hop1, 1).go({ x: 2, trail: 0 })).toEqual({ x: 15, trail: 123, by: 3 });
      expect(await system.grain(Hop2, 2).seen({})).toEqual({ seen: 1 });
    },
  },
];
