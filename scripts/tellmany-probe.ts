/**
 * Profiling aid for the host path on the CPU backend: tellMany of --rows rows (default 1,000,000) to
 * 1,024 Account actors, --trials times, each timed until the kernel processed the last row, balances
 * checked. `--tells` times plain ref.tell calls instead. Run under `node --cpu-prof --import tsx` to see
 * where host and worker time goes (each thread writes its own profile).
 *
 *   node --import tsx scripts/tellmany-probe.ts [--rows 1000000] [--trials 5] [--tells]
 */
import { performance } from 'node:perf_hooks';
import { GrainSystem } from '../packages/core/src/index.ts';
import { CpuBackend } from '../packages/cpu-backend/src/index.ts';
import { Account } from '../examples/bank/grains.ts';

const argv = process.argv.slice(2);
const option = (n: string, d: string) => (argv.includes(n) ? (argv[argv.indexOf(n) + 1] ?? d) : d);
const M = Number(option('--rows', '1000000'));
const TRIALS = Number(option('--trials', '5'));
const TELLS = argv.includes('--tells');

const sys = new GrainSystem({ backends: { cpu: new CpuBackend() }, logLevel: 'warn', handleSignals: false }).register(Account, { placement: 'cpu', maxActors: 4096 });
await sys.start();
const key = new Int32Array(M);
for (let i = 0; i < M; i++) key[i] = 20_000 + (i & 1023);
const amount = new Float64Array(M).fill(1);
const refs = Array.from({ length: 1024 }, (_, k) => sys.grain(Account, 20_000 + k));
const runs: number[] = [];
const sendNs: number[] = [];
for (let t = 0; t < TRIALS; t++) {
  const c0 = sys.counters(Account).processed;
  const t0 = performance.now();
  if (TELLS) for (let i = 0; i < M; i++) refs[i & 1023]!.tell.deposit({ amount: 1 });
  else sys.tellMany(Account, 'deposit', { key, amount });
  sendNs.push(((performance.now() - t0) * 1e6) / M);
  while (sys.counters(Account).processed - c0 < M) await new Promise((r) => setImmediate(r));
  runs.push(M / ((performance.now() - t0) / 1000));
}
const share = (k: number) => Math.floor(M / 1024) + (k < M % 1024 ? 1 : 0);
for (let k = 0; k < 1024; k += 101) {
  const b = (await refs[k]!.balance({})).balance;
  if (b !== TRIALS * share(k)) throw new Error(`actor ${20_000 + k} balance ${b}, want ${TRIALS * share(k)}`);
}
await sys.shutdown();
const sorted = [...runs].sort((a, b) => a - b);
console.log(`${TELLS ? 'tells' : 'tellMany'} ${M} rows: median ${(sorted[sorted.length >> 1]! / 1e6).toFixed(2)} M/s (${runs.map((r) => (r / 1e6).toFixed(2)).join(', ')}); host call ${sendNs.map((n) => n.toFixed(0)).join(', ')} ns/row`);
