/**
 * What SIMT divergence costs GPU grains (issue 18 §1): a worker warp runs up to 32 actors' turns at once, one
 * per lane; lanes whose handlers take different branches run them one after the other. `Branchy.work` has
 * four structurally different loops; `tellMany` sends R messages to A actors (every turn checked through the
 * actors' turn counts), in these mixes:
 *   - uniform p (p = 0..3): every message takes path p (each path's cost alone);
 *   - mixed 2 / mixed 4: a message's path is key mod 2 / mod 4 (a warp's lanes hold 2 / 4 paths);
 *   - imbalance: path 0, iterations uniform in [0, 2·I] instead of I (the warp waits for its longest turn).
 * Prints turns/s per mix (median of trials) and the ratios the SIMT model predicts against those measured.
 * The CPU backend runs the same mixes beside it (it has no lanes: its ratios show the work itself).
 *
 *   node --import tsx bench/divergence.ts [--backend cuda|cpu|both] [--rows 200000] [--iters 4000] [--trials 3]
 *   [--partitions 4]
 * Writes $OUT/divergence.json (or bench/results/divergence.json).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { GrainSystem } from '../packages/core/src/index.ts';
import type { Backend } from '../packages/core/src/entries/types.ts';
import { CpuBackend } from '../packages/cpu-backend/src/index.ts';
import { CudaBackend, probeCuda } from '../packages/cuda-backend/src/index.ts';
import { Branchy } from './grains.ts';
import { trials } from './trials.ts';

const argv = process.argv.slice(2);
const option = (n: string, d: string) => (argv.includes(n) ? (argv[argv.indexOf(n) + 1] ?? d) : d);
if (argv.includes('--help')) {
  console.log(
    'usage: node --import tsx bench/divergence.ts [--backend cuda|cpu|both] [--rows 200000] [--iters 4000] ' +
      '[--trials 3] [--partitions 4]',
  );
  process.exit(0);
}
const ACTORS = 4096;
/** Whole rounds over the actors, so every actor's turn count is known. */
const ROWS = Math.ceil(Number(option('--rows', '200000')) / ACTORS) * ACTORS;
const ITERS = Number(option('--iters', '4000'));
const TRIALS = Number(option('--trials', '3'));
const PARTITIONS = Number(option('--partitions', '4'));
const which = option('--backend', 'both');

interface Mix {
  name: string;
  path: (key: number, row: number) => number;
  iters: (row: number) => number;
}
const MIXES: Mix[] = [
  ...[0, 1, 2, 3].map((p) => ({ name: `uniform ${p}`, path: () => p, iters: () => ITERS })),
  { name: 'mixed 2', path: (k: number) => k % 2, iters: () => ITERS },
  { name: 'mixed 4', path: (k: number) => k % 4, iters: () => ITERS },
  // A fixed pseudo-random spread with mean ITERS (the same rows every trial and backend).
  {
    name: 'imbalance',
    path: () => 0,
    iters: (r: number) => Math.floor(((Math.imul(r + 1, 2654435761) >>> 0) / 2 ** 32) * 2 * ITERS),
  },
];

async function run(
  name: 'cpu' | 'cuda',
  backend: Backend,
): Promise<Record<string, { turnsPerS: number; all: number[] }>> {
  const sys = new GrainSystem({
    backends: { [name]: backend },
    logLevel: 'warn',
    handleSignals: false,
    askTimeoutMs: 120_000,
  });
  sys.register(Branchy, { placement: name, maxActors: ACTORS * 2, ringCapacity: 65536 });
  await sys.start();
  const out: Record<string, { turnsPerS: number; all: number[] }> = {};
  let expected = 0;
  try {
    const key = new Int32Array(ROWS).map((_, i) => i % ACTORS);
    // Warm-up, not timed (JIT on the CPU, activation of every actor): every path once.
    sys.tellMany(Branchy, 'work', {
      key,
      path: new Int32Array(ROWS).map((_, i) => i % 4),
      iters: new Int32Array(ROWS).fill(ITERS),
    });
    await sys.idle();
    expected += ROWS / ACTORS;
    for (const mix of MIXES) {
      const p = new Int32Array(ROWS).map((_, i) => mix.path(key[i]!, i));
      const iters = new Int32Array(ROWS).map((_, i) => mix.iters(i));
      const rates: number[] = [];
      for (let t = 0; t < TRIALS; t++) {
        const t0 = performance.now();
        sys.tellMany(Branchy, 'work', { key, path: p, iters });
        await sys.idle();
        rates.push(ROWS / ((performance.now() - t0) / 1000));
        expected += ROWS / ACTORS;
      }
      // Every turn ran: each actor counted its share.
      for (const k of [0, 1, 2, 3, ACTORS - 1]) {
        const got = (await sys.grain(Branchy, k).turns({})).turns;
        if (got !== expected)
          throw new Error(`${name} ${mix.name}: actor ${k} counted ${got} turns, expected ${expected}`);
      }
      const st = trials(rates);
      out[mix.name] = { turnsPerS: st.median, all: st.all };
      console.log(
        `${name.padEnd(4)} ${mix.name.padEnd(10)} ${(st.median / 1e6).toFixed(3)} M turns/s ` +
          `(trials ${st.all.map((x) => (x / 1e6).toFixed(3)).join(', ')})`,
      );
    }
  } finally {
    await sys.shutdown();
  }
  return out;
}

const results: Record<string, unknown> = {
  rows: ROWS,
  iters: ITERS,
  trials: TRIALS,
  partitions: PARTITIONS,
  actors: ACTORS,
  date: new Date().toISOString(),
};
const probe = probeCuda();
const backends: ['cpu' | 'cuda', () => Backend][] = [];
if (which !== 'cpu') {
  if (probe.ok) backends.push(['cuda', () => new CudaBackend({ partitions: PARTITIONS })]);
  else console.log(`cuda: skipped (${probe.reason})`);
}
if (which !== 'cuda') backends.push(['cpu', () => new CpuBackend()]);
for (const [name, make] of backends) {
  const r = await run(name, make());
  // SIMT model: a warp holding k paths takes the sum of their times; one path alone takes its own time.
  const time = (m: string) => 1 / (r[m]?.turnsPerS ?? NaN);
  const u = [0, 1, 2, 3].map((p) => time(`uniform ${p}`));
  const mean2 = (u[0]! + u[1]!) / 2;
  const mean4 = u.reduce((a, b) => a + b, 0) / 4;
  const ratios = {
    mixed2VsMeanUniform: time('mixed 2') / mean2,
    mixed2SimtModel: (u[0]! + u[1]!) / mean2,
    mixed4VsMeanUniform: time('mixed 4') / mean4,
    mixed4SimtModel: u.reduce((a, b) => a + b, 0) / mean4,
    imbalanceVsUniform0: time('imbalance') / u[0]!,
  };
  console.log(
    `${name}: time per turn, mixed 2 / mean of its two paths ` +
      `alone ${ratios.mixed2VsMeanUniform.toFixed(2)}x (all-serial SIMT ` +
      `model ${ratios.mixed2SimtModel.toFixed(2)}x); ` +
      (`mixed 4 ${ratios.mixed4VsMeanUniform.toFixed(2)}x (model ${ratios.mixed4SimtModel.toFixed(2)}x); ` +
        `imbalance / uniform ${ratios.imbalanceVsUniform0.toFixed(2)}x`),
  );
  results[name] = { mixes: r, ratios };
}
const outDir = process.env['OUT'] ?? path.resolve('bench/results');
mkdirSync(outDir, { recursive: true });
writeFileSync(path.join(outDir, 'divergence.json'), `${JSON.stringify(results, null, 2)}\n`);
