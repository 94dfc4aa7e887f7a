/**
 * An explicit collectIdle() that overlaps another idle collection of the same class (the sweep's own, every
 * idleMs / 2) counts every actor deactivated, and a flush() after it writes every one of them. Before, the
 * two ran side by side: the later call resolved with only what it took itself (the suite saw 462 of 483
 * under load), and a flush() right after it could miss the rows the other collection had not handed over
 * yet (a state stored without its onDeactivate). Two explicit calls at once stand in for the sweep here, so
 * the overlap happens on every run, not only under load.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GrainSystem } from '@ringgrain/core';
import { viewAt } from '@ringgrain/core/backend';
import { stateTableSpec } from '@ringgrain/core/store';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { InlineBackend } from '@ringgrain/inline-backend';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { afterAll, describe, expect, it } from 'vitest';
import { Stored } from '../fixtures/stored.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rg-collect-overlap-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const N = 3000;
const backends = {
  'cpu (2 threads)': () => ({ cpu: new CpuBackend({ threads: 2 }) }),
  inline: () => ({ cpu: new InlineBackend() }),
};

describe('collectIdle() overlapping another collection', () => {
  for (const [name, make] of Object.entries(backends)) {
    it(`${name}: both calls count all ${N} actors; flush() then writes every deactivated state`, async () => {
      const store = new LmdbStore({ dataDir: path.join(tmp, name.replace(/\W+/g, '-')) });
      const clock = { now: 1_000_000 };
      const s = new GrainSystem({ backends: make(), clock: () => clock.now, logLevel: 'silent', handleSignals: false });
      s.register(Stored, { placement: 'cpu', storage: store, flushIntervalMs: 3_600_000, idleMs: 1_000_000 });
      await s.start();
      try {
        s.tellMany(Stored, 'bump', {
          key: Float64Array.from({ length: N }, (_, i) => i),
          n: new Float64Array(N).fill(2),
        });
        await s.idle();
        clock.now += 2_000_000;
        const [a, b] = await Promise.all([s.collectIdle(Stored), s.collectIdle(Stored)]);
        expect([a, b]).toEqual([N, N]);
        expect(s.metrics()['Stored']!.storage!.resident).toBe(0);
        await s.flush();
        const table = await store.table(stateTableSpec(Stored.grain, 'layout'));
        expect(await table.count()).toBe(N);
        const rows = await table.getMany(Float64Array.from({ length: N }, (_, i) => i) as never);
        const buf = rows.bytes.slice().buffer;
        let deactivated = 0;
        for (let i = 0; i < N; i++) {
          const st = viewAt(Stored.grain.state, buf, rows.offsets[i]!) as { sum: number; deactivations: number };
          if (st.sum === 2 && st.deactivations === 1) deactivated++;
        }
        expect(deactivated, 'rows stored with their bump and their onDeactivate').toBe(N);
      } finally {
        await s.shutdown();
        await store.close();
      }
    }, 60_000);
  }
});
