/**
 * Persistent-state conformance cases (write-behind, load on first activation, hooks, idle collection),
 * parametrized by a store fixture: the conformance suite runs them on LMDB in a temp directory on every
 * lane; packages/postgres-store/test runs them on PostgreSQL.
 */
import type { GrainSystem, StorageErrorEvent } from '@ringgrain/core';
import { StateVersionConflictError } from '@ringgrain/core/errors';
import type { StateStore } from '@ringgrain/core/types';
import { layoutOf, snapshot } from '@ringgrain/core/backend';
import { stateTableSpec } from '@ringgrain/core/store';
import { expect } from 'vitest';
import { EV, Stored, events } from '../fixtures/stored.ts';

/** A store at a fresh location, and a second handle on the same location (a restart). */
export interface StoreFixture {
  readonly name: string;
  make(): Promise<StateStore>;
  reopen(store: StateStore): Promise<StateStore>;
}

export interface PersistenceContext {
  /** A new system on this lane's backend (a fresh backend instance) with the case's injected clock. */
  fresh(): GrainSystem;
  readonly placement: string;
  readonly clock: { now: number };
}

export interface PersistenceCase {
  readonly name: string;
  run(c: PersistenceContext, stores: StoreFixture): Promise<void>;
}

const NEVER = 3_600_000;
type StoredState = {
  count: number;
  sum: number;
  activations: number;
  deactivations: number;
  logLen: number;
  log: Uint8Array;
};

/** What the store holds for `key` (decoded with the state layout), or undefined. */
async function stored(store: StateStore, key: number): Promise<{ version: number; state: StoredState } | undefined> {
  const table = await store.table(stateTableSpec(Stored.grain, 'layout'));
  const e = await table.get(key);
  if (!e) return undefined;
  const copy = e.state.slice();
  return { version: e.version, state: snapshot(Stored.grain.state, copy.buffer, 0) as StoredState };
}

async function started(
  c: PersistenceContext,
  store: StateStore,
  opts: { flushIntervalMs?: number; idleMs?: number; maxActors?: number } = {},
): Promise<GrainSystem> {
  const system = c.fresh();
  system.register(Stored, { placement: c.placement, storage: store, flushIntervalMs: NEVER, ...opts });
  await system.start();
  return system;
}

export const persistenceCases: PersistenceCase[] = [
  {
    name:
      'persistent state: written at shutdown, loaded before the first turn after a restart; onActivate / ' +
      'onDeactivate run in order',
    async run(c, stores) {
      const store = await stores.make();
      const a = await started(c, store);
      for (let k = 0; k < 50; k++) expect(await a.grain(Stored, k).add({ n: k })).toEqual({ count: 1, sum: k });
      for (let k = 0; k < 50; k += 7) a.grain(Stored, k).tell.bump({ n: 0.5 });
      await a.shutdown();
      await store.close();
      const again = await stores.reopen(store);
      const b = await started(c, again);
      try {
        for (let k = 0; k < 50; k++) {
          const r = await b.grain(Stored, k).get({});
          const bumped = k % 7 === 0;
          expect({ count: r.count, sum: r.sum, activations: r.activations, deactivations: r.deactivations }).toEqual({
            count: bumped ? 2 : 1,
            sum: k + (bumped ? 0.5 : 0),
            activations: 2,
            deactivations: 1,
          });
          expect(events(r)).toEqual([
            EV.activate,
            EV.add,
            ...(bumped ? [EV.add] : []),
            EV.deactivate,
            EV.activate,
            EV.get,
          ]);
        }
        // A key never stored starts zeroed (onActivate still runs first).
        const fresh = await b.grain(Stored, 10_000).get({});
        expect(events(fresh)).toEqual([EV.activate, EV.get]);
        expect(b.metrics()['Stored']?.storage?.loads).toBe(51);
        expect(b.metrics()['Stored']?.storage?.loadedFound).toBe(50);
      } finally {
        await b.shutdown();
        await again.close();
      }
    },
  },
  {
    name:
      'persistent state: system.flush() writes exactly the dirty actors; an update landing during a flush ' +
      'stays dirty and goes out with the next',
    async run(c, stores) {
      const store = await stores.make();
      const s = await started(c, store);
      try {
        for (let k = 0; k < 20; k++) await s.grain(Stored, k).add({ n: 1 });
        expect(await s.flush()).toEqual({ written: 20, kept: 0 });
        expect((await stored(store, 3))?.version).toBe(1);
        expect(await s.flush()).toEqual({ written: 0, kept: 0 });
        // Reads change the log too (a turn that changes state dirties it): only key 3 changes here.
        await s.grain(Stored, 3).add({ n: 2 });
        expect(await s.flush(Stored)).toEqual({ written: 1, kept: 0 });
        expect((await stored(store, 3))?.state.count).toBe(2);
        expect((await stored(store, 4))?.version).toBe(1);
        // Updates racing a flush: none lost, the last one is what the store ends with.
        const flushes: Array<Promise<unknown>> = [];
        for (let i = 0; i < 200; i++) {
          s.grain(Stored, 5).tell.bump({ n: 1 });
          if (i % 20 === 0) flushes.push(s.flush());
        }
        await Promise.all(flushes);
        await s.idle();
        await s.flush();
        expect((await stored(store, 5))?.state.count).toBe(201);
        expect(s.metrics()['Stored']?.storage?.unwritten).toBe(0);
      } finally {
        await s.shutdown();
        await store.close();
      }
    },
  },
  {
    name:
      'persistent state: a version conflict (another writer) is a storageError event, counted, and the actor ' +
      'stays dirty',
    async run(c, stores) {
      const store = await stores.make();
      const s = await started(c, store);
      const errors: StorageErrorEvent[] = [];
      s.on('storageError', (e) => errors.push(e));
      try {
        await s.grain(Stored, 7).add({ n: 1 });
        await s.grain(Stored, 8).add({ n: 1 });
        await s.flush();
        // Another writer moves key 7 to version 2 behind the system's back.
        const table = await store.table(stateTableSpec(Stored.grain, 'layout'));
        await table.put(7, new Uint8Array(layoutOf(Stored.grain.state).size), 1);
        await s.grain(Stored, 7).add({ n: 1 });
        await s.grain(Stored, 8).add({ n: 1 });
        expect(await s.flush()).toEqual({ written: 1, kept: 1 });
        expect(errors).toHaveLength(1);
        expect(errors[0]!.error).toBeInstanceOf(StateVersionConflictError);
        expect(errors[0]).toMatchObject({ grain: 'Stored', op: 'flush', keys: [7] });
        expect((await stored(store, 8))?.state.count).toBe(2);
        expect(s.metrics()['Stored']?.storage).toMatchObject({ conflicts: 1, unwritten: 1 });
        // Not dropped: the next flush tries it again (and reports again).
        expect(await s.flush()).toEqual({ written: 0, kept: 1 });
        expect(errors).toHaveLength(2);
        expect((await stored(store, 7))?.version).toBe(2);
      } finally {
        await s.shutdown();
        await store.close();
      }
    },
  },
  {
    name:
      'idle collection: onDeactivate runs, the state is written and the slot freed; the actor comes back ' +
      'from its written state',
    async run(c, stores) {
      const store = await stores.make();
      const s = await started(c, store, { idleMs: 1000 });
      try {
        await s.grain(Stored, 1).add({ n: 1 });
        c.clock.now += 500;
        await s.grain(Stored, 2).add({ n: 1 });
        c.clock.now += 700;
        expect(await s.collectIdle(Stored)).toBe(1); // key 1 only: key 2 ran 700 ms ago
        await s.flush();
        const one = await stored(store, 1);
        expect(one && events(one.state)).toEqual([EV.activate, EV.add, EV.deactivate]);
        const r = await s.grain(Stored, 1).get({});
        expect(events(r)).toEqual([EV.activate, EV.add, EV.deactivate, EV.activate, EV.get]);
        expect(s.metrics()['Stored']?.storage?.deactivated).toBe(1);
      } finally {
        await s.shutdown();
        await store.close();
      }
    },
  },
  {
    name:
      'idle collection: maxActors 1024 per lane serves 100,000 keys over time with bounded slots; every ' +
      'state written once deactivated',
    async run(c, stores) {
      const store = await stores.make();
      const s = await started(c, store, { idleMs: 1000, maxActors: 1024 });
      const KEYS = 100_000;
      const BATCH = 500;
      try {
        for (let from = 0; from < KEYS; from += BATCH) {
          const key = new Float64Array(BATCH).map((_, i) => from + i);
          s.tellMany(Stored, 'bump', { key, n: new Float64Array(BATCH).fill(1) });
          await s.idle();
          c.clock.now += 2000;
          const m = s.metrics()['Stored']!;
          expect(m.storage!.resident).toBeLessThanOrEqual(1024 * 3);
          expect(m.rejected + m.handlerErrors).toBe(0);
        }
        await s.collectIdle(Stored);
        await s.flush();
        const table = await store.table(stateTableSpec(Stored.grain, 'layout'));
        expect(await table.count()).toBe(KEYS);
        const some = await stored(store, 12_345);
        expect(some && { count: some.state.count, deactivations: some.state.deactivations }).toEqual({
          count: 1,
          deactivations: 1,
        });
        expect(s.metrics()['Stored']!.activations).toBe(KEYS);
      } finally {
        await s.shutdown();
        await store.close();
      }
    },
  },
  {
    name: 'preload: system.preload uploads stored states before any message (no load on first message)',
    async run(c, stores) {
      const store = await stores.make();
      const a = await started(c, store);
      for (let k = 0; k < 10; k++) await a.grain(Stored, k).add({ n: k });
      await a.shutdown();
      const b = await started(c, store);
      try {
        expect(await b.preload(Stored)).toBe(10);
        expect(await b.preload(Stored, [3, 4, 99])).toBe(0); // 3 and 4 are held already; 99 has no state
        const r = await b.grain(Stored, 4).get({});
        expect(r.count).toBe(1);
        expect(b.metrics()['Stored']?.storage).toMatchObject({ loads: 0, preloaded: 10 });
      } finally {
        await b.shutdown();
        await store.close();
      }
    },
  },
];
