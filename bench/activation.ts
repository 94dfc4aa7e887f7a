/**
 * Activation of a stored actor on its first message (issue 15 §2): an ask to an actor this process has
 * never seen, whose state is in LMDB — the lane parks the message, the host reads the state and uploads
 * it, onActivate and the turn run, the reply comes back. Against the same ask to the actor once it is
 * held (the ordinary ask round trip). Target: first-message p50 ≤ 50 µs on the CPU backend with LMDB.
 *
 *   node --import tsx bench/activation.ts [--actors 2000] [--trials 5] [--threads 1] [--backend cpu|cuda]
 *
 * Each trial starts a new system on the stored states, asks every actor once (first message, timed) and
 * then once more (held, timed); the p50 of each trial is printed, then the median of the trials.
 *
 * `--backend cuda` (a GPU): the same with the class on the CUDA backend where it accepts storage (loads
 * through the host: the GPU has no lane reads). While it refuses storage (StorageUnsupportedError: no
 * writeStates/deactivateIdle yet) it says so and times what the GPU does without a load: the first
 * message to an actor the kernel never held (activation, the translated onActivate, the turn; the
 * backend's testing option activationHooks) against a held actor's ask — the floor of a miss that the
 * host serves, which adds the host's load and upload to it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GrainSystem } from '@ringgrain/core';
import { StorageUnsupportedError } from '@ringgrain/core/errors';
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
const BACKEND = process.argv.includes('--backend') ? process.argv[process.argv.indexOf('--backend') + 1] : 'cpu';
if (BACKEND !== 'cpu' && BACKEND !== 'cuda') throw new Error(`--backend cpu|cuda, got ${BACKEND}`);
if (BACKEND === 'cuda') {
  await cudaBench();
  process.exit(0);
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'rg-activation-'));
function system(store: LmdbStore): GrainSystem {
  const s = new GrainSystem({
    backends: { cpu: new CpuBackend({ threads: THREADS }) },
    logLevel: 'warn',
    handleSignals: false,
  });
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
    if (mode === 'lane' && p.laneLoads < ACTORS)
      throw new Error(`lane loads: ${p.laneLoads} of ${ACTORS} first messages were loaded by the lane`);
    if (mode === 'host' && p.laneLoads !== 0) throw new Error(`host loads: the lane loaded ${p.laneLoads}`);
    runs[mode].push(p);
    console.log(
      `trial ${t} ${mode} loads: first message p50 ${p.first.toFixed(1)} µs, held ` +
        `p50 ${p.held.toFixed(1)} µs (${(p.first / p.held).toFixed(2)}×)`,
    );
  }
}
rmSync(dir, { recursive: true, force: true });
console.log(`${commitOf()} ${machineOf()}`);
const f = median(runs.lane.map((r) => r.first));
const h = median(runs.lane.map((r) => r.held));
const fh = median(runs.host.map((r) => r.first));
console.log(
  `activation of a stored actor on its first message (LMDB, ${THREADS} thread(s), ${ACTORS} actors, ` +
    `median of ${TRIALS} trials' p50):`,
);
console.log(
  `| loads by | first message p50 | held actor ask p50 |\n|---|---:|---:|\n| the consumer thread ` +
    `(laneReads, default) | ${f.toFixed(1)} µs | ${h.toFixed(1)} µs |\n| the host (laneReads: false) ` +
    `| ${fh.toFixed(1)} µs | ${median(runs.host.map((r) => r.held)).toFixed(1)} µs |`,
);
console.log(
  `host path / lane path: ${(fh / f).toFixed(2)}×; target first message ≤ 50 ` +
    `µs: ${f <= 50 ? 'met' : 'not met'} (${f.toFixed(1)} µs)`,
);

/** Asks every key once (first message, checked by `check`) and again (held); p50s in µs. */
async function firstAndHeld(
  s: GrainSystem,
  keys: number,
  check: (k: number, r: { count: number; activations: number; logLen: number; log: ArrayLike<number> }) => void,
): Promise<{ first: number; held: number }> {
  for (let i = 0; i < 200; i++) await s.grain(Stored, keys + i).get({});
  const first: number[] = [];
  const held: number[] = [];
  for (let k = 0; k < keys; k++) {
    const ref = s.grain(Stored, k);
    let t0 = performance.now();
    const r = await ref.get({});
    first.push(performance.now() - t0);
    check(k, r);
    t0 = performance.now();
    await ref.get({});
    held.push(performance.now() - t0);
  }
  return { first: median(first) * 1000, held: median(held) * 1000 };
}

async function cudaBench(): Promise<void> {
  const { CudaBackend, probeCuda } = await import('@ringgrain/cuda-backend');
  const probe = probeCuda();
  if (!probe.ok) throw new Error(`--backend cuda: no CUDA driver/device (${probe.reason})`);
  const cdir = mkdtempSync(path.join(os.tmpdir(), 'rg-activation-cuda-'));
  const seed = new LmdbStore({ dataDir: cdir });
  {
    const s = system(seed);
    await s.start();
    await s.askMany(Stored, 'add', {
      key: Float64Array.from({ length: ACTORS }, (_, i) => i),
      n: new Float64Array(ACTORS).fill(1),
    });
    await s.shutdown();
  }
  await seed.close();
  const opts = {
    placement: 'cuda',
    maxActors: Math.max(16384, 2 * (ACTORS + 200)),
    ringCapacity: 1024,
    replyCapacity: 1024,
  } as const;
  const rows: string[] = [];
  // Stored states loaded on the first message, where the CUDA backend accepts storage.
  const loads: Array<{ first: number; held: number }> = [];
  let refused: string | undefined;
  for (let t = 0; t < TRIALS && refused === undefined; t++) {
    const st = new LmdbStore({ dataDir: cdir, laneReads: false });
    const s = new GrainSystem({
      backends: { cuda: new CudaBackend({ hostLanes: 1 }) },
      logLevel: 'warn',
      handleSignals: false,
    });
    s.register(Stored, { ...opts, storage: st, flushIntervalMs: 3_600_000 });
    try {
      await s.start();
    } catch (e) {
      if (!(e instanceof StorageUnsupportedError)) throw e;
      refused = e.message.split('\n')[0];
      await st.close();
      break;
    }
    const p = await firstAndHeld(s, ACTORS, (k, r) => {
      if (r.count !== 1) throw new Error(`actor ${k}: stored count 1 expected, got ${r.count}`);
    });
    await s.shutdown();
    await st.close();
    loads.push(p);
    console.log(
      `trial ${t} cuda, stored state loaded through the host: first message p50 ${p.first.toFixed(1)} µs, ` +
        `held p50 ${p.held.toFixed(1)} µs`,
    );
  }
  if (refused !== undefined) console.log(`storage on CUDA: refused (${refused})`);
  else
    rows.push(
      `| stored actor, loaded through the host | ${median(loads.map((r) => r.first)).toFixed(1)} µs ` +
        `| ${median(loads.map((r) => r.held)).toFixed(1)} µs |`,
    );
  // No load: an actor the kernel never held is activated, runs the translated onActivate, then the turn.
  const fresh: Array<{ first: number; held: number }> = [];
  for (let t = 0; t < TRIALS; t++) {
    const s = new GrainSystem({
      backends: { cuda: new CudaBackend({ hostLanes: 1, activationHooks: true }) },
      logLevel: 'warn',
      handleSignals: false,
    });
    s.register(Stored, opts);
    await s.start();
    const p = await firstAndHeld(s, ACTORS, (k, r) => {
      if (r.activations !== 1 || r.logLen !== 2 || r.log[0] !== 1 || r.log[1] !== 3)
        throw new Error(
          `actor ${k}: onActivate then get expected, got activations ${r.activations}, ` +
            `log ${Array.from(r.log).slice(0, r.logLen).join(',')}`,
        );
    });
    await s.shutdown();
    fresh.push(p);
    console.log(
      `trial ${t} cuda, new actor with onActivate (no load): first message p50 ${p.first.toFixed(1)} µs, ` +
        `held p50 ${p.held.toFixed(1)} µs`,
    );
  }
  rows.push(
    '| new actor: activation + onActivate on the GPU, no load ' +
      `| ${median(fresh.map((r) => r.first)).toFixed(1)} µs ` +
      `| ${median(fresh.map((r) => r.held)).toFixed(1)} µs |`,
  );
  rmSync(cdir, { recursive: true, force: true });
  console.log(`${commitOf()} ${machineOf()} ${probe.device.name}`);
  console.log(`first message on CUDA (${ACTORS} actors, median of ${TRIALS} trials' p50):`);
  console.log(`| first message to | first message p50 | held actor ask p50 |\n|---|---:|---:|\n${rows.join('\n')}`);
}
