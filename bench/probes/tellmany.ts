/**
 * Profiling aid for the host path on the CPU backend: tellMany of --rows rows (default 1,000,000) to
 * 1,024 Account actors, --trials times, each timed until the kernel processed the last row, balances
 * checked. `--tells` times plain ref.tell calls instead. Run under `node --cpu-prof --import tsx` to see
 * where host and worker time goes (each thread writes its own profile).
 *
 * `--compare` alternates the row path and the column-image path (system.tellManyImages) trial by trial
 * in the same system and prints each path's median and spread, with the load average before and after.
 *
 *   node --import tsx bench/probes/tellmany.ts [--rows 1000000] [--trials 5] [--tells | --compare]
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { GrainSystem } from '../../packages/core/src/index.ts';
import { CpuBackend } from '../../packages/cpu-backend/src/index.ts';
import { Account } from '../../examples/bank/grains.ts';

const argv = process.argv.slice(2);
const option = (n: string, d: string) => (argv.includes(n) ? (argv[argv.indexOf(n) + 1] ?? d) : d);
const M = Number(option('--rows', '1000000'));
const TRIALS = Number(option('--trials', '5'));
const TELLS = argv.includes('--tells');
const COMPARE = argv.includes('--compare');
const load0 = loadavg();

const sys = new GrainSystem({ backends: { cpu: new CpuBackend() }, logLevel: 'warn', handleSignals: false }).register(
  Account,
  { placement: 'cpu', maxActors: 4096 },
);
await sys.start();
const key = new Int32Array(M);
for (let i = 0; i < M; i++) key[i] = 20_000 + (i & 1023);
const amount = new Float64Array(M).fill(1);
const refs = Array.from({ length: 1024 }, (_, k) => sys.grain(Account, 20_000 + k));
const runs: number[] = [];
const sendNs: number[] = [];
const byPath: Record<'rows' | 'images', number[]> = { rows: [], images: [] };
const trials = COMPARE ? 2 * TRIALS : TRIALS;
for (let t = 0; t < trials; t++) {
  const path = t % 2 === 0 ? 'rows' : 'images';
  if (COMPARE) sys.tellManyImages = path === 'images';
  const c0 = sys.counters(Account).processed;
  const t0 = performance.now();
  if (TELLS) for (let i = 0; i < M; i++) refs[i & 1023]!.tell.deposit({ amount: 1 });
  else sys.tellMany(Account, 'deposit', { key, amount });
  sendNs.push(((performance.now() - t0) * 1e6) / M);
  while (sys.counters(Account).processed - c0 < M) await new Promise((r) => setImmediate(r));
  runs.push(M / ((performance.now() - t0) / 1000));
  byPath[path].push(runs[runs.length - 1]!);
}
const share = (k: number) => Math.floor(M / 1024) + (k < M % 1024 ? 1 : 0);
for (let k = 0; k < 1024; k += 101) {
  const b = (await refs[k]!.balance({})).balance;
  if (b !== trials * share(k)) throw new Error(`actor ${20_000 + k} balance ${b}, want ${TRIALS * share(k)}`);
}
await sys.shutdown();
const sorted = [...runs].sort((a, b) => a - b);
console.log(
  `${TELLS ? 'tells' : 'tellMany'} ${M} rows: median ${(sorted[sorted.length >> 1]! / 1e6).toFixed(2)} ` +
    `M/s (${runs.map((r) => (r / 1e6).toFixed(2)).join(', ')}); host ` +
    `call ${sendNs.map((n) => n.toFixed(0)).join(', ')} ns/row`,
);
if (COMPARE) {
  const m = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  for (const p of ['rows', 'images'] as const) {
    const xs = byPath[p];
    console.log(
      `${p}: median ${(m(xs) / 1e6).toFixed(2)} M rows/s, min ${(Math.min(...xs) / 1e6).toFixed(2)}, ` +
        `max ${(Math.max(...xs) / 1e6).toFixed(2)} (${xs.map((r) => (r / 1e6).toFixed(2)).join(', ')})`,
    );
  }
  console.log(
    `images / rows (medians): ${(m(byPath.images) / m(byPath.rows)).toFixed(2)}x; load average ` +
      `before ${load0.map((l) => l.toFixed(2)).join(' ')}, after ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );
}
