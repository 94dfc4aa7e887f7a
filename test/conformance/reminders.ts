/**
 * Reminder conformance cases, parametrized by a store fixture like the persistent-state cases: the
 * conformance suite runs them on LMDB on every lane; packages/postgres-store/test on PostgreSQL.
 */
import { type GrainSystem, HandlerError, type StorageErrorEvent } from '@ringgrain/core';
import { ReminderStorageError, TimerArgumentError } from '@ringgrain/core/errors';
import type { StateStore } from '@ringgrain/core/types';
import { StateDecodeError, stateTableSpec } from '@ringgrain/core/store';
import { expect } from 'vitest';
import { Reminded } from '../fixtures/timers.ts';
import type { PersistenceCase, PersistenceContext } from './persistence.ts';

const NEVER = 3_600_000;

async function started(
  c: PersistenceContext,
  store: StateStore,
  before?: (s: GrainSystem) => void,
): Promise<GrainSystem> {
  const system = c.fresh();
  before?.(system);
  system.register(Reminded, { placement: c.placement, storage: store, flushIntervalMs: NEVER });
  await system.start();
  return system;
}

export const reminderCases: PersistenceCase[] = [
  {
    name:
      'reminders: set by a handler and by the system API, fired by the injected clock; a new system on the ' +
      'same store re-arms them and fires a missed reminder once at start',
    async run(c, stores) {
      const store = await stores.make();
      const t0 = c.clock.now;
      const a = await started(c, store);
      await a.grain(Reminded, 1).remind({ periodMs: 1000, dueMs: 500 }); // first at t0 + 500
      await a.reminders(Reminded).set(2, 'nudge', { periodMs: 2000 }); // first at t0 + 2000
      await a.flush(); // the handler's reminder row is committed too
      expect(
        a
          .reminders(Reminded)
          .list()
          .map((r) => [r.key, r.name, r.method, r.periodMs, r.nextDue])
          .sort(),
      ).toEqual([
        [1, 'nudge', 'onNudge', 1000, t0 + 500],
        [2, 'nudge', 'onNudge', 2000, t0 + 2000],
      ]);
      c.clock.now = t0 + 499;
      expect(await a.advanceTimers()).toBe(0);
      c.clock.now = t0 + 500;
      expect(await a.advanceTimers()).toBe(1);
      expect(await a.grain(Reminded, 1).get({})).toEqual({ nudges: 1, lastNudge: t0 + 500 });
      c.clock.now = t0 + 2000;
      expect(await a.advanceTimers()).toBe(2); // 1 (due t0 + 1500) and 2
      expect(await a.grain(Reminded, 1).get({})).toEqual({ nudges: 2, lastNudge: t0 + 2000 });
      expect(await a.grain(Reminded, 2).get({})).toEqual({ nudges: 1, lastNudge: t0 + 2000 });
      await a.grain(Reminded, 2).forget({});
      await a.flush();
      expect(
        a
          .reminders(Reminded)
          .list()
          .map((r) => r.key),
      ).toEqual([1]);
      expect(a.metrics()['Reminded']!.reminders).toEqual({ armed: 1, fired: 3, writeErrors: 0, fenced: 0 });
      await a.shutdown();
      await store.close();

      // Nothing runs for 6.2 s: key 1 missed its fires at t0 + 2500 … 8000. A new system fires it once, at start.
      c.clock.now = t0 + 8200;
      const again = await stores.reopen(store);
      const b = await started(c, again);
      try {
        expect(await b.grain(Reminded, 1).get({})).toEqual({ nudges: 3, lastNudge: t0 + 8200 });
        expect(await b.grain(Reminded, 2).get({})).toEqual({ nudges: 1, lastNudge: t0 + 2000 });
        expect(b.reminders(Reminded).list()).toEqual([
          { key: 1, name: 'nudge', method: 'onNudge', periodMs: 1000, nextDue: t0 + 8500 },
        ]);
        c.clock.now = t0 + 8500;
        expect(await b.advanceTimers()).toBe(1);
        expect((await b.grain(Reminded, 1).get({})).nudges).toBe(4);
        expect(b.metrics()['Reminded']!.reminders?.fired).toBe(2);
      } finally {
        await b.shutdown();
        await again.close();
      }
    },
  },
  {
    name:
      'reminders: bad arguments are TimerArgumentError (nothing stored); a stored row the spec does not ' +
      'declare is a storageError and is not armed; reminders without storage are refused',
    async run(c, stores) {
      const store = await stores.make();
      await store.open();
      const rows = await store.reminders!(stateTableSpec(Reminded.grain, 'layout'));
      await rows.put([
        { key: 7, name: 'gone', method: 'onNudge', periodMs: 100, nextDue: 0 },
        { key: 8, name: 'nudge', method: 'onNudge', periodMs: 100, nextDue: c.clock.now + 100 },
      ]);
      const errors: StorageErrorEvent[] = [];
      const a = await started(c, store, (s) => s.on('storageError', (e) => errors.push(e)));
      try {
        expect(errors).toHaveLength(1);
        expect(errors[0]!.op).toBe('reminder');
        expect(errors[0]!.keys).toEqual([7]);
        expect(errors[0]!.error).toBeInstanceOf(StateDecodeError);
        expect(errors[0]!.error.message).toContain('the class declares no reminder "gone"');
        expect(
          a
            .reminders(Reminded)
            .list()
            .map((r) => [r.key, r.name]),
        ).toEqual([[8, 'nudge']]);
        // The row is left as it was (another version of the class may still declare it).
        expect((await rows.list()).map((r) => r.name).sort()).toEqual(['gone', 'nudge']);

        for (const periodMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
          const e = await a
            .reminders(Reminded)
            .set(1, 'nudge', { periodMs })
            .then(
              () => undefined,
              (x: unknown) => x as Error,
            );
          expect(e, `periodMs ${periodMs}`).toBeInstanceOf(TimerArgumentError);
          expect((e as TimerArgumentError).problem).toBe('bad-period');
        }
        const unknown = await a
          .reminders(Reminded)
          .set(1, 'nope', { periodMs: 10 })
          .then(
            () => undefined,
            (x: unknown) => x as Error,
          );
        expect((unknown as TimerArgumentError).problem).toBe('unknown-timer');
        const dueErr = await a
          .reminders(Reminded)
          .set(1, 'nudge', { periodMs: 10, dueMs: -1 })
          .then(
            () => undefined,
            (x: unknown) => x as Error,
          );
        expect((dueErr as TimerArgumentError).problem).toBe('bad-due');
        const inHandler = await a
          .grain(Reminded, 1)
          .remind({ periodMs: 0, dueMs: 0 })
          .then(
            () => undefined,
            (x: unknown) => x as Error,
          );
        expect(inHandler).toBeInstanceOf(HandlerError);
        expect(inHandler!.message).toContain('periodMs 0 is not a finite number > 0');
        await a.flush();
        expect(
          a
            .reminders(Reminded)
            .list()
            .map((r) => r.key),
        ).toEqual([8]);
        expect((await rows.list()).map((r) => r.key).sort()).toEqual([7, 8]);
      } finally {
        await a.shutdown();
        await store.close();
      }
      const bare = c.fresh();
      expect(() => bare.register(Reminded, { placement: c.placement })).toThrow(ReminderStorageError);
    },
  },
];
