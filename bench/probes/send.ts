/**
 * The host's send path on the CPU backend, four measures in one process (what the burst publication in
 * core system.ts tryWrite / ring.ts claimHeld was tuned with):
 *   - tell cost into a paused kernel (ns a tell; the ring written over once first, so no page is new);
 *   - tells into a running kernel (first send until the kernel processed the last; M/s);
 *   - ask round trip, one in flight (p50 / p90 µs);
 *   - asks with 256 in flight over 64 actors (M/s).
 * Each is the median of --trials runs, with its spread and the load average before and after: on a
 * 2-vCPU VM the figures move a lot with the neighbours, so compare builds back to back.
 *
 *   node --import tsx bench/probes/send.ts [--trials 5]
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { GrainSystem } from '../../packages/core/src/index.ts';
import { CpuBackend } from '../../packages/cpu-backend/src/index.ts';
import { Echo } from '../grains.ts';

const argv = process.argv.slice(2);
const TRIALS = Number(argv.includes('--trials') ? argv[argv.indexOf('--trials') + 1] : 5);
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[(xs.length - 1) >> 1]!;
const show = (name: string, xs: number[], unit: string, digits = 2) =>
  console.log(
    `${name}: ${med(xs).toFixed(digits)} ${unit} ` +
      `(${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}, ${xs.length} trials)`,
  );

const load0 = loadavg()[0]!;
const system = new GrainSystem({
  backends: { cpu: new CpuBackend({ threads: 1 }) },
  logLevel: 'warn',
  handleSignals: false,
});
system.register(Echo, { placement: 'cpu', ringCapacity: 1 << 19, maxActors: 4096 });
await system.start();
const k = system.kernel(Echo);
const refs = Array.from({ length: 1024 }, (_, i) => system.grain(Echo, i));
const processed = () => system.counters(Echo).processed;
const until = async (n: number) => {
  while (processed() < n) await new Promise((r) => setImmediate(r));
};
try {
  // 1. Tell cost, kernel paused: two warm-up runs write the whole ring once.
  const N = 200_000;
  const cost: number[] = [];
  for (let t = 0; t < TRIALS + 3; t++) {
    await k.deactivate();
    const t0 = performance.now();
    for (let i = 0; i < N; i++) refs[i & 1023]!.tell.hit({ x: 7 });
    if (t >= 3) cost.push(((performance.now() - t0) * 1e6) / N);
    await k.activate();
    await system.idle();
  }
  show('tell into a paused kernel', cost, 'ns', 1);

  // 2. Tells into a running kernel, one actor.
  const T = 300_000;
  const rate: number[] = [];
  for (let t = 0; t < TRIALS + 1; t++) {
    const base = processed();
    const t0 = performance.now();
    for (let i = 0; i < T; i++) {
      const p = refs[1]!.tell.hit({ x: i });
      if (p) await p;
    }
    await until(base + T);
    if (t > 0) rate.push(T / ((performance.now() - t0) * 1e3));
  }
  show('tells into a running kernel', rate, 'M/s');

  // 3. Ask round trip.
  const p50: number[] = [];
  const p90: number[] = [];
  for (let t = 0; t < TRIALS; t++) {
    const ns = new Float64Array(20_000);
    for (let i = 0; i < 2_000; i++) await refs[1]!.ping({ x: i });
    for (let i = 0; i < ns.length; i++) {
      const t0 = process.hrtime.bigint();
      await refs[1]!.ping({ x: i });
      ns[i] = Number(process.hrtime.bigint() - t0);
    }
    ns.sort();
    p50.push(ns[ns.length >> 1]! / 1000);
    p90.push(ns[Math.floor(ns.length * 0.9)]! / 1000);
  }
  show('ask round trip p50', p50, 'µs');
  show('ask round trip p90', p90, 'µs');

  // 4. Asks with 256 in flight over 64 actors.
  const A = 200_000;
  const piped: number[] = [];
  for (let t = 0; t < TRIALS + 1; t++) {
    let next = 0;
    const caller = async () => {
      while (next < A) {
        const i = next++;
        await refs[i & 63]!.ping({ x: i });
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: 256 }, caller));
    if (t > 0) piped.push(A / ((performance.now() - t0) * 1e3));
  }
  show('asks, 256 in flight over 64 actors', piped, 'M/s');
} finally {
  await system.shutdown();
}
console.log(`load average ${load0.toFixed(2)} before, ${loadavg()[0]!.toFixed(2)} after`);
