/**
 * The two latency figures of docs/gpu-latency.md against their floors, in one process: a lone ask (one in
 * flight, Account.deposit, every balance checked) against the one-word host ↔ kernel ping-pong, and the K2K
 * hop (scripts/gpu-measure.ts relayHop: a 1,000-hop forward chain) against two blocks bouncing a word
 * through device memory. The kernels are built under this process's NVRTC defines: run it once per define
 * set in the same session and compare, e.g. RINGGRAIN_NVRTC_DEFINES=RG_LATENCY=0 (the polling and counter
 * publication from before the latency work) against the defaults.
 *
 *   [RINGGRAIN_NVRTC_DEFINES=...] node --import tsx scripts/latency-probe.ts [--asks 10000] [--ask-partitions 4,32]
 *       [--hop-partitions 1024,64] [--json file]
 */
import { writeFileSync } from 'node:fs';
import { CudaBackend, CudaContext, probeCuda } from '../packages/cuda-backend/src/index.ts';
import { runPingPong } from '../packages/cuda-backend/test/selftest.ts';
import { median, relayHop } from './gpu-measure.ts';
import { hopFloorRuns } from '../bench/lib/floors.ts';
import { loneAsks } from '../bench/lib/lone-ask.ts';
import { QUIET, accountSystem, relaySystem } from '../bench/lib/systems.ts';

const argv = process.argv.slice(2);
const option = (n: string, d: string) => (argv.includes(n) ? (argv[argv.indexOf(n) + 1] ?? d) : d);
const ASKS = Number(option('--asks', '10000'));
const askParts = option('--ask-partitions', '4,32').split(',').filter(Boolean).map(Number);
const hopParts = option('--hop-partitions', '1024,64').split(',').filter(Boolean).map(Number);
const jsonOut = option('--json', '');
const defines = process.env['RINGGRAIN_NVRTC_DEFINES'] ?? '(defaults)';

const probe = probeCuda();
if (!probe.ok) {
  console.log(`latency-probe: no CUDA device (${probe.reason})`);
  process.exit(0);
}
const out: Record<string, unknown> = { defines, date: new Date().toISOString(), device: probe.device.name };
const r1 = (x: number) => +x.toFixed(2);

// Floors first: they load modules, which must not meet a running persistent kernel.
const ctx = CudaContext.create();
const pp = await runPingPong(ctx, { count: 20_000, warmup: 2000 });
const hf = median((await hopFloorRuns(ctx, 3)).runs);
ctx.dispose();
out['pingPong'] = { p50Us: r1(pp.latency.p50Us), p99Us: r1(pp.latency.p99Us) };
out['hopFloorNs'] = Math.round(hf);
const ppText = `ping-pong p50 ${pp.latency.p50Us.toFixed(2)} µs p99 ${pp.latency.p99Us.toFixed(2)} µs`;
console.log(`latency-probe [${defines}] floors: ${ppText}; block → block hop ${hf.toFixed(0)} ns`);

const asks: Record<string, unknown>[] = [];
for (const partitions of askParts) {
  const sys = accountSystem(new CudaBackend({ partitions }), 'cuda', QUIET);
  await sys.start();
  try {
    const lat = await loneAsks(sys, ASKS);
    lat.sort();
    const q = (p: number) => lat[Math.min(ASKS - 1, Math.floor(p * ASKS))]!;
    const overFloor = r1(q(0.5) / pp.latency.p50Us);
    const row = { partitions, p50Us: r1(q(0.5)), p90Us: r1(q(0.9)), p99Us: r1(q(0.99)), overFloor };
    asks.push(row);
    const pcts = `p50 ${row.p50Us} µs p90 ${row.p90Us} p99 ${row.p99Us}`;
    console.log(`latency-probe [${defines}] ask, ${partitions} partitions: ${pcts} (${overFloor}× the ping-pong)`);
  } finally {
    await sys.shutdown();
  }
}
out['asks'] = asks;

const hops: Record<string, unknown>[] = [];
for (const partitions of hopParts) {
  const sys = relaySystem(new CudaBackend({ partitions, queueCapacity: 1024 }), QUIET);
  await sys.start();
  try {
    const h = await relayHop(sys, 1000);
    const row = { partitions, hopNs: Math.round(h.hopNs), chain0P50Us: r1(h.chain0P50Us), overFloor: r1(h.hopNs / hf) };
    hops.push(row);
    const vs = `${row.overFloor}× the block → block hop; chain of 0: ${row.chain0P50Us} µs`;
    console.log(`latency-probe [${defines}] hop, ${partitions} partitions: ${row.hopNs} ns (${vs})`);
  } finally {
    await sys.shutdown();
  }
}
out['hops'] = hops;
if (jsonOut) writeFileSync(jsonOut, `${JSON.stringify(out, null, 2)}\n`);
