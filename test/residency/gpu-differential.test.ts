/**
 * Actor residency on CUDA against the CPU backend (issue 30): one script of asks, tells, idle collections
 * (deactivation with onDeactivate, reactivation loading what was just written), a flush and a restart on
 * the same LMDB store, run on the CPU backend and on the CUDA backend with `residency: true`; every reply,
 * every collection count and every state read back after the restart must be identical. Needs a GPU: the
 * CUDA half is skipped without one (the device code is built and run on the host by codegen
 * test/residency-device.test.ts); the CPU half runs everywhere, so the script itself is checked here.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GrainSystem } from '@ringgrain/core';
import type { Backend } from '@ringgrain/core/types';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { CudaBackend, probeCuda } from '@ringgrain/cuda-backend';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { afterAll, describe, expect, it } from 'vitest';
import { Stored } from '../fixtures/stored.ts';

const probe = probeCuda();
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const KEYS = Array.from({ length: 20 }, (_, i) => i * 13 - 100);

/** The script; what it observed, in order. */
async function script(make: () => Backend, placement: string): Promise<unknown[]> {
  const dir = mkdtempSync(path.join(tmpdir(), 'rg-residency-diff-'));
  dirs.push(dir);
  const out: unknown[] = [];
  const clock = { now: 10_000 };
  const system = (store: LmdbStore) => {
    const s = new GrainSystem({
      backends: { [placement]: make() },
      logLevel: 'warn',
      handleSignals: false,
      clock: () => clock.now,
      askTimeoutMs: 60_000,
    });
    s.register(Stored, { placement, storage: store, idleMs: 10, flushIntervalMs: 3_600_000, maxActors: 1024 });
    return s;
  };
  let store = new LmdbStore({ dataDir: dir });
  let sys = system(store);
  await sys.start();
  try {
    for (const k of KEYS) out.push(await sys.grain(Stored, k).add({ n: k }));
    clock.now += 5;
    // Half the actors take another turn: only the other half are idle at the next collection.
    for (const k of KEYS.filter((_, i) => i % 2 === 0)) out.push(await sys.grain(Stored, k).add({ n: 1 }));
    clock.now += 6;
    out.push(['collected', await sys.collectIdle(Stored)]);
    // Messages for deactivated actors: loaded from what was just written, then run in order.
    await sys.tellMany(Stored, 'bump', { key: Int32Array.from(KEYS), n: new Float64Array(KEYS.length).fill(0.5) });
    for (const k of KEYS) out.push(await sys.grain(Stored, k).get({}));
    clock.now += 20;
    out.push(['collected', await sys.collectIdle(Stored)]);
    out.push(['flushed', (await sys.flush()).written >= 0]);
  } finally {
    await sys.shutdown({ mode: 'drain', timeoutMs: 60_000 });
  }
  // A restart on the same store: every actor comes back as the first run left it.
  store = new LmdbStore({ dataDir: dir });
  sys = system(store);
  await sys.start();
  try {
    out.push(['preloaded', await sys.preload(Stored, KEYS.slice(0, 10))]);
    for (const k of KEYS) out.push(await sys.grain(Stored, k).get({}));
  } finally {
    await sys.shutdown({ mode: 'drain', timeoutMs: 60_000 });
  }
  return out.map((x) =>
    JSON.parse(JSON.stringify(x, (_, v) => (ArrayBuffer.isView(v) ? Array.from(v as Uint8Array) : v))),
  );
}

describe('actor residency: CUDA against the CPU backend', () => {
  let cpu: unknown[] | undefined;

  it('the script on the CPU backend (the reference)', async () => {
    cpu = await script(() => new CpuBackend({ threads: 2 }), 'cpu');
    // The first collection takes the half without a second turn; the second, every reloaded actor.
    expect(cpu.filter((x) => Array.isArray(x) && x[0] === 'collected')).toEqual([
      ['collected', KEYS.length / 2],
      ['collected', KEYS.length],
    ]);
    expect(cpu.length).toBe(KEYS.length * 3 + KEYS.length / 2 + 4);
  }, 120_000);

  it.skipIf(!probe.ok)(
    'the same script on CUDA with residency: identical replies, collections and ' +
      `states${probe.ok ? '' : ` (skipped: no CUDA driver/device — ${probe.reason})`}`,
    async () => {
      const cuda = await script(() => new CudaBackend({ hostLanes: 1, residency: true }), 'cuda');
      expect(cuda).toEqual(cpu);
    },
    300_000,
  );
});
