/**
 * Where host→kernel tell throughput goes, measured through the public API on each backend:
 * for each configuration, `tellMany` of M rows (host encoding is cheap, so the drain rate shows the
 * consumer) and M plain tells (host cost per call shows in the send-loop time), each timed until the
 * kernel processed the last message, every balance checked. Varies the CUDA partition count (worker
 * warps) and the actor count, so a worker-bound drain (scales with partitions) is told apart from an
 * ingress-bound one (does not).
 *
 *   node --import tsx bench/probes/tell.ts [--rows 1000000] [--partitions 4,32,128] [--trials 3] [--ring 4096]
 *   [--host-lanes 4]
 * Writes $OUT/tell-probe.json (or .device/out/).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Backend } from '../../packages/core/src/entries/types.ts';
import { CpuBackend } from '../../packages/cpu-backend/src/index.ts';
import { CudaBackend, probeCuda } from '../../packages/cuda-backend/src/index.ts';
import { Account } from '../../examples/bank/grains.ts';
import { median } from '../../scripts/gpu-measure.ts';
import { QUIET, accountSystem } from '../lib/systems.ts';

const argv = process.argv.slice(2);
const option = (n: string, d: string) => (argv.includes(n) ? (argv[argv.indexOf(n) + 1] ?? d) : d);
if (argv.includes('--help')) {
  console.log('usage: node --import tsx bench/probes/tell.ts [--rows 1000000] [--partitions 4,32,128] [--trials 3]');
  process.exit(0);
}
const M = Number(option('--rows', '1000000'));
const TRIALS = Number(option('--trials', '3'));
const partitionsList = option('--partitions', '4,32,128').split(',').map(Number);
const RING = Number(option('--ring', '4096'));
const HOST_LANES = Number(option('--host-lanes', '4'));
const outDir = process.env['OUT'] ?? path.resolve('.device/out');
mkdirSync(outDir, { recursive: true });

interface Row {
  backend: string;
  partitions: number | null;
  actors: number;
  bulkPerS: number;
  tellsPerS: number;
  tellLoopNsPerCall: number;
  /** Host cost alone: rows/calls written into a ring with room while the kernel is paused (nothing drains). */
  pausedBulkNsPerRow: number;
  pausedTellNsPerCall: number;
}

async function measure(
  name: 'cpu' | 'cuda',
  backend: Backend,
  partitions: number | null,
  actors: number,
): Promise<Row> {
  const sys = accountSystem(backend, name, QUIET, { maxActors: Math.max(4096, actors * 2), ringCapacity: RING });
  await sys.start();
  try {
    const key = new Int32Array(M);
    for (let i = 0; i < M; i++) key[i] = i % actors;
    const amount = new Float64Array(M).fill(1);
    const bulk: number[] = [];
    const tells: number[] = [];
    const loops: number[] = [];
    const refs = Array.from({ length: actors }, (_, k) => sys.grain(Account, k));
    for (let t = 0; t < TRIALS; t++) {
      let t0 = performance.now();
      await sys.tellMany(Account, 'deposit', { key, amount });
      await sys.idle({ timeoutMs: 120_000 });
      bulk.push(M / ((performance.now() - t0) / 1000));
      t0 = performance.now();
      for (let i = 0; i < M; i++) void refs[i % actors]!.tell.deposit({ amount: 1 });
      loops.push(((performance.now() - t0) * 1e6) / M);
      await sys.idle({ timeoutMs: 120_000 });
      tells.push(M / ((performance.now() - t0) / 1000));
    }
    // Host cost alone: the kernel paused, RING - 64 rows written into a ring with room, then drained.
    const kernel = sys.kernel(Account);
    const room = Math.min(M, RING - 64);
    const pk = key.subarray(0, room);
    const pa = amount.subarray(0, room);
    const pausedBulk: number[] = [];
    const pausedTell: number[] = [];
    for (let t = 0; t < 5; t++) {
      await kernel.deactivate();
      let t0 = performance.now();
      sys.tellMany(Account, 'deposit', { key: pk, amount: pa });
      pausedBulk.push(((performance.now() - t0) * 1e6) / room);
      await kernel.activate();
      await sys.idle({ timeoutMs: 120_000 });
      await kernel.deactivate();
      t0 = performance.now();
      for (let i = 0; i < room; i++) void refs[i % actors]!.tell.deposit({ amount: 1 });
      pausedTell.push(((performance.now() - t0) * 1e6) / room);
      await kernel.activate();
      await sys.idle({ timeoutMs: 120_000 });
    }
    const extra = (k: number) => 10 * (Math.floor(room / actors) + (k < room % actors ? 1 : 0));
    const want = (k: number) => extra(k) + 2 * TRIALS * (Math.floor(M / actors) + (k < M % actors ? 1 : 0));
    for (let k = 0; k < actors; k += Math.max(1, Math.floor(actors / 17))) {
      const b = (await refs[k]!.balance({})).balance;
      if (b !== want(k)) throw new Error(`${name} p${partitions}: actor ${k} balance ${b}, want ${want(k)}`);
    }
    return {
      backend: name,
      partitions,
      actors,
      bulkPerS: Math.round(median(bulk)),
      tellsPerS: Math.round(median(tells)),
      tellLoopNsPerCall: Math.round(median(loops)),
      pausedBulkNsPerRow: Math.round(median(pausedBulk.slice(1))),
      pausedTellNsPerCall: Math.round(median(pausedTell.slice(1))),
    };
  } finally {
    await sys.shutdown();
  }
}

const rows: Row[] = [];
const show = (r: Row) =>
  console.log(
    `${r.backend.padEnd(4)} partitions ${String(r.partitions ?? '-').padStart(4)} ` +
      `actors ${String(r.actors).padStart(6)}: tellMany ${(r.bulkPerS / 1e6).toFixed(2)} M/s, ` +
      `tell ${(r.tellsPerS / 1e6).toFixed(2)} M/s (send loop ${r.tellLoopNsPerCall} ns/call; paused: ` +
      `tellMany ${r.pausedBulkNsPerRow} ns/row, tell ${r.pausedTellNsPerCall} ns/call)`,
  );
for (const actors of [1024, 65536]) {
  rows.push(await measure('cpu', new CpuBackend(), null, actors));
  show(rows.at(-1)!);
  if (probeCuda().ok) {
    for (const p of partitionsList) {
      rows.push(await measure('cuda', new CudaBackend({ partitions: p, hostLanes: HOST_LANES }), p, actors));
      show(rows.at(-1)!);
    }
  }
}
writeFileSync(
  path.join(outDir, 'tell-probe.json'),
  JSON.stringify(
    {
      rows: M,
      trials: TRIALS,
      ringCapacity: RING,
      hostLanes: HOST_LANES,
      date: new Date().toISOString(),
      results: rows,
    },
    null,
    2,
  ) + '\n',
);
