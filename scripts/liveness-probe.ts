/**
 * Liveness under mixed load (issue "The GPU at its floors", the one-turn-at-a-time build): 200,000
 * pipelined asks, 1,000,000 tells, then tellMany of 4,000,000 rows over 4,096 Account actors, then one ask.
 * --partitions P (CudaBackend), --ring N (ringCapacity) and --trials T (the three phases T times) vary the
 * shape. Every phase must finish; a phase that makes no progress for --stall-s seconds prints the kernel's
 * counters and exits 1. Balances are checked against the rows sent. Run once per define set, e.g.
 *   RINGGRAIN_NVRTC_DEFINES=RG_TURN_LANES=1 node --import tsx scripts/liveness-probe.ts [--backend cuda|cpu]
 */
import { performance } from 'node:perf_hooks';
import { GrainSystem } from '../packages/core/src/index.ts';
import type { Backend } from '../packages/core/src/entries/types.ts';
import { CpuBackend } from '../packages/cpu-backend/src/index.ts';
import { CudaBackend } from '../packages/cuda-backend/src/index.ts';
import { Account } from '../examples/bank/grains.ts';

const argv = process.argv.slice(2);
const option = (n: string, d: string) => (argv.includes(n) ? (argv[argv.indexOf(n) + 1] ?? d) : d);
const name = option('--backend', 'cuda') as 'cuda' | 'cpu';
const ACTORS = Number(option('--actors', '4096'));
const ASKS = Number(option('--asks', '200000'));
const TELLS = Number(option('--tells', '1000000'));
const ROWS = Number(option('--rows', '4000000'));
const STALL_S = Number(option('--stall-s', '20'));
const PARTITIONS = option('--partitions', '');
const RING = option('--ring', '');
const TRIALS = Number(option('--trials', '1'));
const backend: Backend =
  name === 'cuda' ? new CudaBackend(PARTITIONS ? { partitions: Number(PARTITIONS) } : {}) : new CpuBackend();
const sys = new GrainSystem({
  backends: { [name]: backend },
  logLevel: 'warn',
  handleSignals: false,
  handshakeTimeoutMs: 60_000,
}).register(Account, {
  placement: name,
  maxActors: ACTORS * 2,
  ...(RING ? { ringCapacity: Number(RING) } : {}),
});
const defines = process.env['RINGGRAIN_NVRTC_DEFINES'] ?? '';
const t0 = performance.now();
await sys.start();
console.log(
  `liveness-probe: ${name}, defines [${defines}], started in ${((performance.now() - t0) / 1000).toFixed(2)} s`,
);

/** Waits until `processed` reaches `want`, failing when it stops moving for STALL_S seconds. */
async function until(phase: string, want: number): Promise<void> {
  let last = -1;
  let since = performance.now();
  for (;;) {
    const c = sys.counters(Account);
    if (c.processed >= want) return;
    if (c.processed !== last) {
      last = c.processed;
      since = performance.now();
    } else if (performance.now() - since > STALL_S * 1000) {
      console.log(`STALL in ${phase}: processed ${c.processed} of ${want}; counters ${JSON.stringify(c)}`);
      process.exit(1);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

const refs = Array.from({ length: ACTORS }, (_, k) => sys.grain(Account, k));
let want = sys.counters(Account).processed;
let ph = 0;
for (let trial = 0; trial < TRIALS; trial++) {
  ph = performance.now();
  const asks: Promise<unknown>[] = [];
  for (let i = 0; i < ASKS; i++) asks.push(refs[i % ACTORS]!.deposit({ amount: 1 }));
  want += ASKS;
  await until('asks', want);
  await Promise.all(asks);
  console.log(`asks ${ASKS}: ${((performance.now() - ph) / 1000).toFixed(2)} s`);
  ph = performance.now();
  for (let i = 0; i < TELLS; i++) {
    refs[i % ACTORS]!.tell.deposit({ amount: 1 });
    if ((i & 0xffff) === 0xffff) await new Promise((r) => setImmediate(r));
  }
  want += TELLS;
  await until('tells', want);
  console.log(`tells ${TELLS}: ${((performance.now() - ph) / 1000).toFixed(2)} s`);
  ph = performance.now();
  const key = new Int32Array(ROWS);
  for (let i = 0; i < ROWS; i++) key[i] = i % ACTORS;
  sys.tellMany(Account, 'deposit', { key, amount: new Float64Array(ROWS).fill(1) });
  want += ROWS;
  await until('tellMany', want);
  console.log(`tellMany ${ROWS}: ${((performance.now() - ph) / 1000).toFixed(2)} s`);
}
const per = (k: number) =>
  TRIALS * [ASKS, TELLS, ROWS].reduce((s, n) => s + Math.floor(n / ACTORS) + (k < n % ACTORS ? 1 : 0), 0);
let bad = 0;
for (let k = 0; k < ACTORS; k += 97) {
  const b = (await refs[k]!.balance({})).balance;
  if (b !== per(k)) bad++;
}
await sys.shutdown();
console.log(
  `liveness-probe: ${bad === 0 ? 'OK' : `${bad} balances wrong`} (${name}, defines [${defines}]) ` +
    `in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
);
process.exit(bad === 0 ? 0 : 1);
