/**
 * Actor residency under load (issue 30): deactivations while messages for the same actors keep arriving.
 * Keys get `bump` tells in rounds while the system collects idle actors between and during the rounds
 * (idleMs 1 on an injected clock that moves 2 ms a round: every actor is idle at every collection), so
 * actors are deactivated (onDeactivate, state written), reactivated from what was just written (loaded
 * on their next message, parked meanwhile) and deactivated again, many times. At the end every actor's
 * count, sum, and activation/deactivation counts are checked against the model; exit 1 on any mismatch.
 * A compute-sanitizer workload (scripts/device/sanitize.sh `residency`) and a differential check: run it
 * with --backend cpu and --backend cuda and compare the printed figures.
 *
 * With --max-actors below --keys (workload `residency-room`), the table is full most of the time: each
 * round tells the keys in batches of maxActors / 4, the clock moving 2 ms before each batch and the host
 * waiting for idle only every second batch, so new keys meet a full table and deactivate the actors of
 * earlier batches (making room: onDeactivate, state out through the evict ring) while messages for those
 * actors are still arriving (they park and reload from what was just written). No message may be
 * rejected: the actors of earlier batches are always idle for idleMs.
 *
 *   node --import tsx scripts/residency-workload.ts [--backend cuda|cpu] [--keys 500] [--rounds 12] [--max-actors N]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GrainSystem } from '../packages/core/src/index.ts';
import type { Backend } from '../packages/core/src/entries/types.ts';
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
const maxActors = Number(arg('max-actors', String(Math.max(1024, 2 * keys))));
if (
  !['cuda', 'cpu'].includes(backendName) ||
  !(keys >= 1 && keys <= 100_000) ||
  !(rounds >= 1 && rounds <= 1000) ||
  !(Number.isInteger(maxActors) && maxActors >= 16)
) {
  console.error('residency-workload: --backend cuda|cpu, --keys 1..100000, --rounds 1..1000, --max-actors ≥ 16');
  process.exit(2);
}
/** Making room: fewer slots than keys (per CPU lane: the CPU backend's maxActors is per lane). */
const room = maxActors < keys;

async function backend(): Promise<Backend> {
  if (backendName === 'cpu') return new CpuBackend({ threads: 2 });
  const { CudaBackend } = await import('../packages/cuda-backend/src/index.ts');
  return new CudaBackend({ partitions: 8 });
}

const dir = mkdtempSync(path.join(tmpdir(), 'rg-residency-'));
const clock = { now: 1_000_000 };
const store = new LmdbStore({ dataDir: dir });
const system = new GrainSystem({
  backends: { [backendName]: await backend() },
  logLevel: 'warn',
  handleSignals: false,
  clock: () => clock.now,
});
let tellErrors = 0;
system.on('tellError', (e) => {
  if (tellErrors++ < 5) console.error(`tellError: ${e.error.message.split('\n')[0]} (clock ${clock.now})`);
});
system.register(Stored, { placement: backendName, storage: store, idleMs: 1, flushIntervalMs: 3_600_000, maxActors });
const t0 = performance.now();
let collected = 0;
let failed = 0;
try {
  await system.start();
  const key = Int32Array.from({ length: keys }, (_, i) => i * 7 + 1);
  for (let r = 1; room && r <= rounds; r++) {
    const batch = Math.max(1, Math.floor(maxActors / 4));
    for (let from = 0, b = 0; from < keys; from += batch, b++) {
      clock.now += 2;
      const part = key.subarray(from, Math.min(keys, from + batch));
      await system.tellMany(Stored, 'bump', { key: part, n: new Float64Array(part.length).fill(r) });
      if (b % 2 === 1) await system.idle();
    }
    // A collection racing the round's last messages, as below.
    collected += await system.collectIdle(Stored);
    await system.idle();
  }
  for (let r = 1; !room && r <= rounds; r++) {
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
  const m = system.metrics()['Stored']!;
  if (m.rejected + m.handlerErrors !== 0) {
    console.error(`rejected ${m.rejected}, handler errors ${m.handlerErrors} (want 0)`);
    failed++;
  }
  collected += room ? m.storage!.deactivated : 0;
  const want = { count: rounds, sum: (rounds * (rounds + 1)) / 2 };
  for (const k of key) {
    if (room) clock.now += 2; // the actors read before are idle: a full table makes room for this one
    const g = await system.grain(Stored, k).get({});
    const ev = events(g);
    // Every activation after the first follows a deactivation; the last event is this get.
    const ok = g.count === want.count && g.sum === want.sum && g.activations === g.deactivations + 1 && ev.at(-1) === 3;
    if (!ok && failed++ < 5)
      console.error(
        `key ${k}: count ${g.count} sum ${g.sum} activations ${g.activations} ` +
          `deactivations ${g.deactivations} (want count ${want.count} sum ${want.sum}, activations = ` +
          'deactivations + 1)',
      );
  }
} finally {
  await system.shutdown({ mode: 'drain', timeoutMs: 60_000 }).catch((e) => {
    console.error(`shutdown: ${(e as Error).message}`);
    failed++;
  });
  rmSync(dir, { recursive: true, force: true });
}
console.log(
  JSON.stringify({
    backend: backendName,
    keys,
    rounds,
    maxActors,
    collected,
    mismatches: failed,
    seconds: +((performance.now() - t0) / 1000).toFixed(2),
  }),
);
process.exit(failed === 0 && collected > 0 ? 0 : 1);
