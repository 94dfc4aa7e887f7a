/**
 * CPU kernel threads load an actor's stored state themselves on its first message (LmdbStore
 * laneReads, default on): no hop through the host. Checked here: they do (metrics' laneLoads), the
 * states and versions are the stored ones (a later flush of the actor writes at the right version, no
 * conflict), and while a row waits to be written (a deactivated actor's bytes not committed yet) a first
 * message still gets those bytes, never the store's older row.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GrainSystem, type StorageErrorEvent } from '@ringgrain/core';
import { StateVersionConflictError } from '@ringgrain/core/errors';
import { stateTableSpec } from '@ringgrain/core/store';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { openLaneReader } from '../../packages/lmdb-store/src/lane-reader.ts';
import { afterAll, describe, expect, it } from 'vitest';
import { Stored } from '../fixtures/stored.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rg-lane-loads-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let dirs = 0;

function system(store: LmdbStore, clock?: () => number): GrainSystem {
  const s = new GrainSystem({
    backends: { cpu: new CpuBackend({ threads: 2 }) },
    logLevel: 'silent',
    handleSignals: false,
    ...(clock ? { clock } : {}),
  });
  s.register(Stored, { placement: 'cpu', storage: store, flushIntervalMs: 3_600_000, idleMs: 1000 });
  return s;
}

async function seed(dir: string, n: number): Promise<void> {
  const store = new LmdbStore({ dataDir: dir });
  const s = system(store);
  await s.start();
  for (let k = 0; k < n; k++) await s.grain(Stored, k).add({ n: k });
  await s.shutdown();
  await store.close();
}

describe('lane loads (LMDB, CPU pool)', () => {
  for (const laneReads of [true, false]) {
    it(
      `laneReads ${laneReads}: first messages see the stored states; a flush after them writes at the ` +
        'stored versions',
      async () => {
        const dir = path.join(tmp, String(dirs++));
        await seed(dir, 40);
        const store = new LmdbStore({ dataDir: dir, laneReads });
        // A clock that stands still: no actor turns idle (idleMs 1000) while the case runs, so each flush writes all
        // 40 (on the real clock a loaded machine let idle collection write 11 of them first: the flush wrote 29).
        const s = system(store, () => 1_000);
        const errors: StorageErrorEvent[] = [];
        s.on('storageError', (e) => errors.push(e));
        await s.start();
        try {
          for (let k = 0; k < 40; k++) expect(await s.grain(Stored, k).add({ n: 1 })).toEqual({ count: 2, sum: k + 1 });
          const m = s.metrics()['Stored']!.storage!;
          expect(m.loads).toBe(40);
          expect(m.loadedFound).toBe(40);
          expect(m.laneLoads).toBe(laneReads ? 40 : 0);
          expect((await s.flush()).written).toBe(40);
          expect(errors).toEqual([]);
          // The stored versions moved on: a second flush round trip must not conflict either.
          for (let k = 0; k < 40; k++) await s.grain(Stored, k).bump({ n: 1 });
          await s.idle();
          expect((await s.flush()).written).toBe(40);
          expect(errors).toEqual([]);
        } finally {
          await s.shutdown();
          await store.close();
        }
        const reader = openLaneReader({ path: dir, maxDbs: 64, table: 'Stored', stateSize: 1 });
        expect(() => reader.get(3)).toThrow(/bytes/); // a row of another size: a decode error, never a silent row
      },
    );
  }

  it(
    'a deactivated actor whose bytes are not written yet ' + 'comes back with those bytes, not the stored row',
    async () => {
      const dir = path.join(tmp, String(dirs++));
      await seed(dir, 4);
      let now = 1_000_000;
      const store = new LmdbStore({ dataDir: dir });
      const s = system(store, () => now);
      const errors: StorageErrorEvent[] = [];
      s.on('storageError', (e) => errors.push(e));
      await s.start();
      const other = new LmdbStore({ dataDir: dir });
      try {
        const a = s.grain(Stored, 2);
        expect(await a.add({ n: 10 })).toEqual({ count: 2, sum: 12 });
        // Another writer changes the stored row: our flush of actor 2 conflicts and keeps its bytes unwritten.
        await other.open();
        const table = await other.table(stateTableSpec(Stored.grain, 'layout'));
        const row = (await table.get(2))!;
        await table.put(2, new Uint8Array(row.state.length), row.version);
        now += 5000;
        expect(await s.collectIdle()).toBeGreaterThanOrEqual(1);
        await s.flush();
        expect(errors.some((e) => e.error instanceof StateVersionConflictError)).toBe(true);
        expect(s.metrics()['Stored']!.storage!.unwritten).toBe(1);
        // Its first message now: the consumer must not read the store (the other writer's zeroed row).
        const lane0 = s.metrics()['Stored']!.storage!.laneLoads;
        expect(await a.add({ n: 100 })).toEqual({ count: 3, sum: 112 });
        expect(s.metrics()['Stored']!.storage!.laneLoads).toBe(lane0);
      } finally {
        await s.shutdown();
        await store.close();
        await other.close();
      }
    },
  );
});
