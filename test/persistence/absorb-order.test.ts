/**
 * A flush reads every lane's dirty states and absorbs them once all lanes answered; a lane that deactivates
 * an actor after its own answer sends the deactivated bytes (newer) before the batch is absorbed. The batch
 * must not overwrite them: the store ends with the deactivated state. Before, it did (a state stored without
 * its onDeactivate: the postgres-store persistence test's "deactivations: 0" under load, cpu-pool backend).
 * Driven here through WriteBehind with a stand-in kernel whose readDirty the test resolves, so the order is
 * the same on every run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { layoutOf, type BackendKernel, type StateBatch } from '@ringgrain/core/backend';
import { stateTableSpec } from '@ringgrain/core/store';
import { WriteBehind } from '../../packages/core/src/persist/write-behind.ts';
import { LmdbStore } from '@ringgrain/lmdb-store';
import pino from 'pino';
import { afterAll, expect, it } from 'vitest';
import { Stored } from '../fixtures/stored.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rg-absorb-order-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

it('a dirty batch read before a deactivation does not overwrite the deactivated bytes', async () => {
  const store = new LmdbStore({ dataDir: tmp });
  await store.open();
  const table = await store.table(stateTableSpec(Stored.grain, 'layout'));
  const stride = layoutOf(Stored.grain.state).size;
  const state = (mark: number) => new Uint8Array(stride).fill(mark);
  let answer: (b: StateBatch) => void = () => {};
  let reads = 0;
  // The first read waits for the test; later ones (the flush a deactivation schedules, the last flush) find nothing
  // dirty.
  const readDirty = () =>
    reads++ === 0
      ? new Promise<StateBatch>((r) => (answer = r))
      : Promise.resolve({ keys: [], bytes: new Uint8Array(0), stride });
  const kernel = { readDirty, health: () => ({}) } as unknown as BackendKernel;
  const errors: unknown[] = [];
  const wb = new WriteBehind(
    Stored.grain,
    store,
    table,
    () => kernel,
    (e) => errors.push(e),
    pino({ level: 'silent' }),
  );
  try {
    wb.laneLoaded([5, 6], Float64Array.of(0, 0)); // the lanes hold actors 5 and 6, never stored
    const flushed = wb.flush(); // reads the dirty states: the lanes answer...
    await new Promise((r) => setImmediate(r));
    // ...lane of 5 answered with its dirty bytes (1), then deactivated 5 (bytes 2) before the other lanes answered;
    // 6 was deactivated clean after its lane's answer (its bytes in the batch are its last).
    wb.evicted({ keys: [5, 6], bytes: new Uint8Array([...state(2), ...state(9)]), stride, dirty: Uint8Array.of(1, 0) });
    answer({ keys: [5, 6], bytes: new Uint8Array([...state(1), ...state(3)]), stride });
    await flushed;
    await wb.flush();
    const read = await table.getMany(Float64Array.of(5, 6) as never);
    expect(
      Array.from(read.bytes.subarray(read.offsets[0]!, read.offsets[0]! + 1)),
      'actor 5: the deactivated bytes',
    ).toEqual([2]);
    expect(Array.from(read.bytes.subarray(read.offsets[1]!, read.offsets[1]! + 1)), 'actor 6: the batch bytes').toEqual(
      [3],
    );
    expect(wb.metrics().resident).toBe(0);
    expect(wb.metrics().unwritten).toBe(0);
    expect(errors).toEqual([]);
  } finally {
    await store.close();
  }
});
