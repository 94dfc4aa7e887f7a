/**
 * A shutdown of a system with two stored grain classes on one thread reports no storage error, and every
 * state is stored. It once reported `WorkerDiedError: the kernel was disposed` (a flush of 0 rows) in most
 * runs: terminate's deactivation schedules a follow-up flush, which asked a stopped lane for its dirty
 * states; the kernel's release rejected that read, and the write-behind took it for a healthy kernel's
 * failure. Several rounds, as the follow-up flush races the release.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GrainSystem, type StorageErrorEvent } from '@ringgrain/core';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { afterAll, describe, expect, it } from 'vitest';
import { Stored } from '../fixtures/stored.ts';
import { Ticker } from '../fixtures/timers.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rg-shutdown-flush-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const make = () =>
  new GrainSystem({ backends: { cpu: new CpuBackend({ threads: 1 }) }, logLevel: 'silent', handleSignals: false });
const N = 2000;

describe('shutdown with two stored grain classes', () => {
  it('reports no storage error and stores every state (6 rounds)', async () => {
    for (let round = 0; round < 6; round++) {
      const dir = path.join(tmp, String(round));
      const store = new LmdbStore({ dataDir: dir });
      const a = make();
      const errors: StorageErrorEvent[] = [];
      a.on('storageError', (e) => errors.push(e));
      a.register(Stored, { placement: 'cpu', storage: store, flushIntervalMs: 3_600_000 });
      a.register(Ticker, { placement: 'cpu', storage: store, flushIntervalMs: 3_600_000 });
      await a.start();
      a.tellMany(Stored, 'bump', {
        key: Int32Array.from({ length: N }, (_, i) => i),
        n: new Float64Array(N).fill(1.5),
      });
      a.tellMany(Ticker, 'onManual', { key: Int32Array.from({ length: 3 }, (_, i) => i) });
      await a.idle();
      await a.shutdown();
      await store.close();
      expect(
        errors.map((e) => `${e.grain} ${e.op}: ${e.error.message}`),
        `round ${round}`,
      ).toEqual([]);

      const again = new LmdbStore({ dataDir: dir });
      const b = make();
      b.register(Stored, { placement: 'cpu', storage: again });
      b.register(Ticker, { placement: 'cpu', storage: again });
      await b.start();
      try {
        const s = await b.askMany(Stored, 'get', { key: Int32Array.from({ length: N }, (_, i) => i) });
        expect(
          Array.from(s.sum).every((x) => x === 1.5),
          `round ${round}: every Stored sum`,
        ).toBe(true);
        expect((await b.grain(Ticker, 2).get({})).manual, `round ${round}`).toBe(1);
      } finally {
        await b.shutdown();
        await again.close();
      }
    }
  }, 60_000);
});
