/**
 * Activation of a stored actor on its first message (issue 15 §2): an ask to an actor this process has
 * never seen, whose state is in LMDB — the lane parks the message, the host reads the state and uploads
 * it, onActivate and the turn run, the reply comes back. Against the same ask to the actor once it is
 * held (the ordinary ask round trip). Target: first-message p50 ≤ 50 µs on the CPU backend with LMDB.
 *
 *   node --import tsx bench/activation.ts [--actors 2000] [--trials 5] [--threads 1]
 *
 * Each trial starts a new system on the stored states, asks every actor once (first message, timed) and
 * then once more (held, timed); the p50 of each trial is printed, then the median of the trials.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GrainSystem } from '@ringgrain/core';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { Stored } from '../test/fixtures/stored.ts';
import { median } from './trials.ts';
import { commitOf, machineOf } from './record.ts';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const ACTORS = arg('actors', 2000);
const TRIALS = arg('trials', 5);
const THREADS = arg('threads', 1);

const dir = mkdtempSync(path.join(os.tmpdir(), 'rg-activation-'));
function system(store: LmdbStore): GrainSystem {
  const s = new GrainSystem({ backends: { cpu: new CpuBackend({ threads: THREADS }) }, logLevel: 'warn', handleSignals: false });
  s.register(Stored, { placement: 'cpu', storage: store, flushIntervalMs: 3_600_000 });
  return s;
}

const store = new LmdbStore({ dataDir: dir });
{
  const s = system(store);
  await s.start();
  const key = Float64Array.from({ length: ACTORS }, (_, i) => i);
  await s.askMany(Stored, 'add', { key, n: new Float64Array(ACTORS).fill(1) });
  await s.shutdown();
}

/** One trial: a new system on the stored states; every actor asked once (first message), then again (held). */
async function trial(laneReads: boolean): Promise<{ first: number; held: number; laneLoads: number }> {
  const st = new LmdbStore({ dataDir: dir, laneReads });
  const s = system(st);
  await s.start();
  // Warm the path (JIT, the lane's first load) on keys outside the measured range.
  for (let i = 0; i < 200; i++) await s.grain(Stored, ACTORS + i).get({});
  const first: number[] = [];
  const held: number[] = [];
  for (let k = 0; k < ACTORS; k++) {
    const ref = s.grain(Stored, k);
    let t0 = performance.now();
    const r = await ref.get({});
    first.push(performance.now() - t0);
    if (r.count !== 1) throw new Error(`actor ${k}: stored count 1 expected, got ${r.count}`);
    t0 = performance.now();
    await ref.get({});
    held.push(performance.now() - t0);
  }
  const laneLoads = s.metrics()['Stored']?.storage?.laneLoads ?? 0;
  await s.shutdown();
  await st.close();
  return { first: median(first) * 1000, held: median(held) * 1000, laneLoads };
}

await store.close();
// The two load paths alternate, trial by trial: the consumer thread reads LMDB itself (laneReads, the
// default), or the host loads and uploads the state (two thread hops and a host event-loop turn).
const runs = { lane: [] as Array<{ first: number; held: number }>, host: [] as Array<{ first: number; held: number }> };
for (let t = 0; t < TRIALS; t++) {
  for (const mode of ['lane', 'host'] as const) {
    const p = await trial(mode === 'lane');
    if (mode === 'lane' && p.laneLoads < ACTORS) throw new Error(`lane loads: ${p.laneLoads} of ${ACTORS} first messages were loaded by the lane`);
    if (mode === 'host' && p.laneLoads !== 0) throw new Error(`host loads: the lane loaded ${p.laneLoads}`);
    runs[mode].push(p);
    console.log(`trial ${t} ${mode} loads: first message p50 ${p.first.toFixed(1)} µs, held p50 ${p.held.toFixed(1)} µs (${(p.first / p.held).toFixed(2)}×)`);
  }
}
rmSync(dir, { recursive: true, force: true });
console.log(`${commitOf()} ${machineOf()}`);
const f = median(runs.lane.map((r) => r.first));
const h = median(runs.lane.map((r) => r.held));
const fh = median(runs.host.map((r) => r.first));
console.log(`activation of a stored actor on its first message (LMDB, ${THREADS} thread(s), ${ACTORS} actors, median of ${TRIALS} trials' p50):`);
console.log(`| loads by | first message p50 | held actor ask p50 |\n|---|---:|---:|\n| the consumer thread (laneReads, default) | ${f.toFixed(1)} µs | ${h.toFixed(1)} µs |\n| the host (laneReads: false) | ${fh.toFixed(1)} µs | ${median(runs.host.map((r) => r.held)).toFixed(1)} µs |`);
console.log(`host path / lane path: ${(fh / f).toFixed(2)}×; target first message ≤ 50 µs: ${f <= 50 ? 'met' : 'not met'} (${f.toFixed(1)} µs)`);
