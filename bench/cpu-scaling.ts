/**
 * `pnpm bench:cpu-scaling` — the CPU backend over its worker pool: K2K walks over 1,048,576 actors (the
 * GPU record's K2K benchmark, bench/grains.ts Relay.spread) at each thread count, in one run, each the
 * median of --trials (default 5), every actor count checked against a JS model; then, with --sir N, the
 * SIR example at N people on cpu with the default pool (epidemic seconds, answers checked by the example).
 *
 *   node --import tsx bench/cpu-scaling.ts [--threads 1,2,4,8,15] [--walks 4096] [--steps 200]
 *       [--trials 5] [--sir 1000000] [--record] [--out NAME]
 *
 * Writes bench/results/local/cpu-scaling.json and .svg (--record: bench/results/cpu-scaling.{json,svg};
 * --out NAME: bench/results/local/NAME.{json,svg}):
 * { commit, machine, cores, threads: [...], k2kPerS: [...], k2kPerSTrials, speedup, efficiency, sir1MEpidemicS,
 *   cpu }. On Linux, `cpu` gives per trial where the CPU went (cores busy: main thread, pool threads, the
 * process's other threads, and the machine's other work), and K2K messages per pool CPU-second.
 */
process.env['RINGGRAIN_LOG'] ??= 'warn';

import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { GrainSystem } from '@ringgrain/core';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { RELAY_ACTORS, Relay } from './grains.ts';
import { lineChart } from './svg.ts';
import { trials } from './trials.ts';
import { commitOf, machineOf } from './record.ts';
import { baseline, section, type CpuShare } from './proc-cpu.ts';

const argv = process.argv.slice(2).filter((a) => a !== '--');
if (argv.includes('--help') || argv.includes('-h')) {
  console.log(
    readFileSync(new URL(import.meta.url), 'utf8')
      .split('\n')
      .slice(1, 15)
      .join('\n'),
  );
  process.exit(0);
}
const option = (n: string, d: string) => (argv.includes(`--${n}`) ? (argv[argv.indexOf(`--${n}`) + 1] ?? d) : d);
const cores = os.availableParallelism();
const defaultThreads = [
  ...new Set([1, 2, 4, 8, 16, cores - 1].filter((t) => t >= 1 && t <= Math.max(1, cores - 1))),
].sort((a, b) => a - b);
const THREADS = option('threads', defaultThreads.join(',')).split(',').map(Number);
const WALKS = Number(option('walks', '4096'));
const STEPS = Number(option('steps', '200'));
const TRIALS = Math.max(1, Number(option('trials', '5')));
const SIR = Number(option('sir', '0'));
const RECORD = argv.includes('--record');
const OUT = option('out', '');
if (RECORD && OUT) throw new Error('--record and --out: pick one');
if (OUT && !/^[\w.-]+$/.test(OUT)) throw new Error(`--out takes a file name without a folder, got ${OUT}`);
const log = (s: string) => process.stderr.write(`${s}\n`);
if (THREADS.some((t) => !Number.isInteger(t) || t < 1))
  throw new Error(`--threads takes positive integers, got ${option('threads', '')}`);

const next = (k: number) => (k * 7919 + 13) % RELAY_ACTORS;
const seed = (i: number) => (1 + i * 255) % RELAY_ACTORS;

/** One trial: WALKS walks of STEPS K2K hops each, timed from the first tell until every turn is counted. */
async function walkTrial(
  sys: GrainSystem,
  model: Uint32Array,
  pool: Set<number>,
  cpu?: Array<CpuShare & { k2kPerPoolCpuS: number }>,
): Promise<number> {
  const before = sys.counters(Relay);
  const end = section(pool);
  const t0 = performance.now();
  for (let i = 0; i < WALKS; i++) {
    const p = sys.grain(Relay, seed(i)).tell.spread({ ttl: STEPS });
    if (p) await p;
  }
  const want = WALKS * (STEPS + 1);
  for (;;) {
    const c = sys.counters(Relay);
    if (c.processed - before.processed >= want) break;
    if (performance.now() - t0 > 300_000)
      throw new Error(`walks: ${c.processed - before.processed} of ${want} turns after 300 s`);
    await new Promise((r) => setTimeout(r, 1));
  }
  const seconds = (performance.now() - t0) / 1000;
  const share = end();
  const k2k = sys.counters(Relay).k2kReceived - before.k2kReceived;
  if (share && cpu) {
    cpu.push({ ...share, k2kPerPoolCpuS: Math.round(k2k / seconds / Math.max(0.01, share.pool)) });
    log(
      `   trial ${cpu.length}: ${(k2k / seconds / 1e6).toFixed(2)} M/s; cores busy: pool ${share.pool}, ` +
        `main ${share.main}, other threads ${share.other}, other work on the machine ${share.foreign}`,
    );
  }
  if (k2k !== WALKS * STEPS) throw new Error(`walks: ${k2k} K2K messages received, expected ${WALKS * STEPS}`);
  for (let i = 0; i < WALKS; i++) {
    for (let s = 0, k = seed(i); s <= STEPS; s++, k = next(k)) model[k]!++;
  }
  return k2k / seconds;
}

async function atThreads(
  threads: number,
): Promise<{ k2kPerS: ReturnType<typeof trials>; cpu: Array<CpuShare & { k2kPerPoolCpuS: number }> }> {
  const pool = baseline();
  const cpu: Array<CpuShare & { k2kPerPoolCpuS: number }> = [];
  const sys = new GrainSystem({ backends: { cpu: new CpuBackend({ threads }) }, handleSignals: false });
  sys.register(Relay, { placement: 'cpu', maxActors: RELAY_ACTORS, ringCapacity: 1 << 14 });
  await sys.start();
  try {
    const model = new Uint32Array(RELAY_ACTORS);
    await walkTrial(sys, model, pool); // warm-up (JIT, state tables grow)
    const xs: number[] = [];
    for (let t = 0; t < TRIALS; t++) xs.push(await walkTrial(sys, model, pool, cpu));
    // Every 4099th actor's count against the model (all trials and the warm-up together).
    for (let k = 4099; k < RELAY_ACTORS; k += 4099) {
      const got = (await sys.grain(Relay, k).count({})).n;
      if (got !== model[k])
        throw new Error(`threads ${threads}: actor ${k} counted ${got}, the JS walks say ${model[k]}`);
    }
    return { k2kPerS: trials(xs), cpu };
  } finally {
    await sys.shutdown();
  }
}

const rows: Array<{
  threads: number;
  k2kPerS: ReturnType<typeof trials>;
  cpu: Array<CpuShare & { k2kPerPoolCpuS: number }>;
}> = [];
for (const threads of THREADS) {
  log(
    `== K2K walks, ${threads} thread${threads === 1 ? '' : 's'}: ${WALKS} walks × ${STEPS} hops ` +
      `over ${RELAY_ACTORS.toLocaleString('en-US')} actors, ${TRIALS} trials`,
  );
  const { k2kPerS: r, cpu } = await atThreads(threads);
  rows.push({ threads, k2kPerS: r, cpu });
  log(
    `   median ${(r.median / 1e6).toFixed(2)} M K2K msgs/s (min ${(r.min / 1e6).toFixed(2)}, ` +
      `max ${(r.max / 1e6).toFixed(2)})`,
  );
}
const base = rows.find((r) => r.threads === 1)?.k2kPerS.median;

let sir1MEpidemicS: number | null = null;
let sir: Record<string, unknown> | null = null;
if (SIR > 0) {
  log(`== SIR ${SIR.toLocaleString('en-US')} people on cpu (default pool: ${Math.max(1, cores - 1)} threads)`);
  const example = fileURLToPath(new URL('../examples/sir/main.ts', import.meta.url));
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--import', 'tsx', example, '--backend', 'cpu', '--people', String(SIR)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 600_000,
  });
  const out = r.stdout ?? '';
  const epidemic = /epidemic ([\d.]+) (ms|s)\b/.exec(out);
  const seconds = epidemic ? Number(epidemic[1]) / (epidemic[2] === 'ms' ? 1000 : 1) : null;
  sir = {
    people: SIR,
    exit: r.status,
    exact: r.status === 0 && /\bOK\b/.test(out),
    epidemicS: seconds,
    wallS: (performance.now() - t0) / 1000,
    tail: out.split('\n').slice(-8).join('\n'),
  };
  if (SIR === 1_000_000 && r.status === 0) sir1MEpidemicS = seconds;
  log(`   exit ${r.status}, epidemic ${seconds ?? '?'} s`);
}

const commit = commitOf();
const record = {
  commit,
  date: new Date().toISOString(),
  command: `node --import tsx bench/cpu-scaling.ts ${argv.join(' ')}`.trim(),
  machine: machineOf(),
  cores,
  walks: WALKS,
  steps: STEPS,
  actors: RELAY_ACTORS,
  threads: rows.map((r) => r.threads),
  k2kPerS: rows.map((r) => Math.round(r.k2kPerS.median)),
  k2kPerSTrials: rows.map((r) => r.k2kPerS),
  speedup: base ? rows.map((r) => Number((r.k2kPerS.median / base).toFixed(2))) : null,
  /** k2kPerS(T) / (T × k2kPerS(1)): the target is ≥ 0.6 at 16 threads. */
  efficiency: base ? rows.map((r) => Number((r.k2kPerS.median / (r.threads * base)).toFixed(2))) : null,
  sir1MEpidemicS,
  sir,
  /** Per thread count, per trial (Linux): cores busy with this process's threads and with other work. */
  cpu: rows.map((r) => r.cpu),
};
console.log('\n threads | K2K msgs/s (median) | × 1 thread | efficiency');
for (const [i, r] of rows.entries()) {
  console.log(
    ` ${String(r.threads).padStart(7)} | ${(r.k2kPerS.median / 1e6).toFixed(2).padStart(15)} M ` +
      `| ${String(record.speedup?.[i] ?? '-').padStart(10)} | ${record.efficiency?.[i] ?? '-'}`,
  );
}
if (sir)
  console.log(
    `\n SIR ${SIR.toLocaleString('en-US')} on cpu: epidemic ${sir['epidemicS'] ?? '?'} s, exact ${sir['exact']}`,
  );
const dir = fileURLToPath(new URL(RECORD ? './results/' : './results/local/', import.meta.url));
const name = OUT || 'cpu-scaling';
mkdirSync(dir, { recursive: true });
writeFileSync(`${dir}${name}.json`, `${JSON.stringify(record, null, 2)}\n`);
writeFileSync(
  `${dir}${name}.svg`,
  lineChart({
    title: `CPU backend: K2K over ${RELAY_ACTORS.toLocaleString('en-US')} actors (${cores} cores)`,
    xLabel: 'worker threads',
    yLabel: 'M K2K msgs/s',
    series: [
      { name: 'measured (median)', points: rows.map((r) => [r.threads, r.k2kPerS.median / 1e6] as const) },
      ...(base
        ? [{ name: 'linear from 1 thread', points: rows.map((r) => [r.threads, (r.threads * base) / 1e6] as const) }]
        : []),
    ],
  }),
);
log(`wrote ${dir}${name}.json and .svg`);
