/**
 * The conformance suite's persistence and reminder cases through IsolatedCudaBackend on a machine without a GPU:
 * the application side, the shared ring arena in /dev/shm and the GPU host's channel and frame loop are the real
 * ones; the GPU host's kernels run on the CPU (test/fixtures/cpu-gpu-host.ts: the CPU backend's consumer over the
 * arena's rings). So load on first message, preload, flush, version conflicts, idle collection and reminders are
 * checked across the process boundary here; the cuda-isolated conformance lane runs them with the real kernels on
 * a GPU.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GrainSystem } from '@ringgrain/core';
import type { StateStore } from '@ringgrain/core/types';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { afterAll, describe, expect, it } from 'vitest';
import { persistenceCases, type StoreFixture } from '../conformance/persistence.ts';
import { reminderCases } from '../conformance/reminders.ts';
import { CpuHostedIsolated } from '../fixtures/isolated-cpu.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rg-isolated-host-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let dirs = 0;
const lmdb: StoreFixture = {
  name: 'lmdb',
  make: async () => new LmdbStore({ dataDir: path.join(tmp, String(dirs++)) }),
  reopen: async (store: StateStore) => new LmdbStore({ dataDir: store.location }),
};

/*
 * The cases that each take a different path across the boundary: load on first message and the deactivation at
 * shutdown (restart), readDirty (flush), deactivateIdle and the reload from what it wrote (idle collection),
 * preload, and reminders kept in the store across a restart. Left out for time (each system here starts a GPU host
 * process, seconds on a loaded machine): the version conflict and the reminders' bad arguments (core's own logic,
 * no path of their own across the boundary) and the make-room case (100,000 keys); the CPU lanes and the
 * cuda-isolated lane on a GPU run them.
 */
const PATHS = [
  'persistent state: written at shutdown',
  'persistent state: system.flush()',
  'idle collection: onDeactivate runs',
  'preload:',
  'reminders: set by a handler',
];
const cases = [...persistenceCases, ...reminderCases].filter((c) => PATHS.some((p) => c.name.startsWith(p)));

const title = 'persistence and reminders through the isolated GPU host (CPU kernels)';
describe.skipIf(process.platform !== 'linux')(title, () => {
  it('every path listed is a case of the suite', () => {
    expect(cases.length).toBe(PATHS.length);
  });
  for (const c of cases) {
    it(c.name, { timeout: 120_000 }, async () => {
      const clock = { now: 1_000_000 };
      const fresh = () =>
        new GrainSystem({
          backends: { cuda: new CpuHostedIsolated() },
          logLevel: 'silent',
          clock: () => clock.now,
          handleSignals: false,
        });
      await c.run({ fresh, placement: 'cuda', clock }, lmdb);
    });
  }
});
