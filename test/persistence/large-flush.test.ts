/**
 * A flush of more dirty actors than a function call can take as arguments (about 120K on V8): every row
 * reaches the store. It once lost them all: the CPU backend gathered the dirty keys with
 * `keys.push(...part)`, which throws RangeError past that size after the lane had cleared its marks, and
 * the write-behind logged the failure at debug level and wrote nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GrainSystem, type StorageErrorEvent } from '@ringgrain/core';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { afterAll, describe, expect, it } from 'vitest';
import { Stored } from '../fixtures/stored.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rg-large-flush-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const ACTORS = 200_000;

describe('a flush of 200,000 dirty actors on one lane', () => {
  it('writes every row, reports no storage error, and the states come back after a restart', async () => {
    const make = () =>
      new GrainSystem({ backends: { cpu: new CpuBackend({ threads: 1 }) }, logLevel: 'silent', handleSignals: false });
    const store = new LmdbStore({ dataDir: tmp });
    const a = make();
    const errors: StorageErrorEvent[] = [];
    a.on('storageError', (e) => errors.push(e));
    a.register(Stored, { placement: 'cpu', maxActors: ACTORS, storage: store, flushIntervalMs: 3_600_000 });
    await a.start();
    const key = Int32Array.from({ length: ACTORS }, (_, i) => i);
    const n = new Float64Array(ACTORS).fill(2.5);
    a.tellMany(Stored, 'bump', { key, n });
    await a.idle();
    const r = await a.flush();
    expect(errors).toEqual([]);
    expect(r.written).toBe(ACTORS);
    await a.shutdown();
    await store.close();

    const again = new LmdbStore({ dataDir: tmp });
    const b = make();
    b.register(Stored, { placement: 'cpu', maxActors: ACTORS, storage: again });
    await b.start();
    try {
      for (const k of [0, 1, 119_999, 150_000, ACTORS - 1]) {
        const s = await b.grain(Stored, k).get({});
        expect(s.count, `actor ${k}`).toBe(1);
        expect(s.sum, `actor ${k}`).toBe(2.5);
      }
    } finally {
      await b.shutdown();
      await again.close();
    }
  }, 120_000);
});
