/**
 * Actor residency under load (issue 30): deactivations while messages for the same actors keep arriving.
 * Keys get `bump` tells in rounds while the system collects idle actors between and during the rounds
 * (idleMs 1 on an injected clock that moves 2 ms a round: every actor is idle at every collection), so
 * actors are deactivated (onDeactivate, state written), reactivated from what was just written (loaded
 * on their next message, parked meanwhile) and deactivated again, many times. At the end every actor's
 * count, sum, and activation/deactivation counts are checked against the model; exit 1 on any mismatch.
 * A compute-sanitizer workload (scripts/device-sanitize.sh `residency`) and a differential check: run it
 * with --backend cpu and --backend cuda and compare the printed figures.
 *
 *   node --import tsx scripts/residency-workload.ts [--backend cuda|cpu] [--keys 500] [--rounds 12]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GrainSystem, type Backend } from '../packages/core/src/index.ts';
import { CpuBackend } from '../packages/cpu-backend/src/index.ts';
import { LmdbStore } from '../packages/lmdb-store/src/index.ts';
import { Stored, events } from '../test/fixtures/stored.ts';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? def) : def;
}
const backendName = arg('backend', 'cuda');
const keys = Number(arg('keys', '500'));
const rounds = Number(arg('rounds', '12'));
if (!['cuda', 'cpu'].includes(backendName) || !(keys >= 1 && keys <= 100_000) || !(rounds >= 1 && rounds <= 1000)) {
  console.error('residency-workload: --backend cuda|cpu, --keys 1..100000, --rounds 1..1000');
  process.exit(2);
}

async function backend(): Promise<Backend> {
  if (backendName === 'cpu') return new CpuBackend({ threads: 2 });
  const { CudaBackend } = await import('../packages/cuda-backend/src/index.ts');
  return new CudaBackend({ partitions: 8, residency: true });
}

const dir = mkdtempSync(path.join(tmpdir(), 'rg-residency-'));
const clock = { now: 1_000_000 };
const store = new LmdbStore({ dataDir: dir });
const system = new GrainSystem({ backends: { [backendName]: await backend() }, logLevel: 'warn', handleSignals: false, clock: () => clock.now });
system.register(Stored, { placement: backendName, storage: store, idleMs: 1, flushIntervalMs: 3_600_000, maxActors: Math.max(1024, 2 * keys) });
const t0 = performance.now();
let collected = 0;
let failed = 0;
try {
  await system.start();
  const key = Int32Array.from({ length: keys }, (_, i) => i * 7 + 1);
  for (let r = 1; r <= rounds; r++) {
    clock.now += 2;
    // Half the round's messages, a collection racing the other half, then a collection after them.
    const half = Math.ceil(keys / 2);
    await system.tellMany(Stored, 'bump', { key: key.subarray(0, half), n: new Float64Array(half).fill(r) });
    const racing = system.collectIdle(Stored);
    await system.tellMany(Stored, 'bump', { key: key.subarray(half), n: new Float64Array(keys - half).fill(r) });
    collected += await racing;
    await system.idle();
    clock.now += 2;
    collected += await system.collectIdle(Stored);
  }
  await system.flush();
  const want = { count: rounds, sum: (rounds * (rounds + 1)) / 2 };
  for (const k of key) {
    const g = await system.grain(Stored, k).get({});
    const ev = events(g);
    // Every activation after the first follows a deactivation; the last event is this get.
    const ok = g.count === want.count && g.sum === want.sum && g.activations === g.deactivations + 1 && ev.at(-1) === 3;
    if (!ok && failed++ < 5) console.error(`key ${k}: count ${g.count} sum ${g.sum} activations ${g.activations} deactivations ${g.deactivations} (want count ${want.count} sum ${want.sum}, activations = deactivations + 1)`);
  }
} finally {
  await system.shutdown({ mode: 'drain', timeoutMs: 60_000 }).catch((e) => {
    console.error(`shutdown: ${(e as Error).message}`);
    failed++;
  });
  rmSync(dir, { recursive: true, force: true });
}
console.log(JSON.stringify({ backend: backendName, keys, rounds, collected, mismatches: failed, seconds: +((performance.now() - t0) / 1000).toFixed(2) }));
process.exit(failed === 0 && collected > 0 ? 0 : 1);
