/**
 * Where askMany throughput goes on each backend, through the public API: `askMany(Account, 'deposit')`
 * of R rows (one row per actor, so every balance is known), median of trials, for inbound/reply ring
 * sizes and CUDA host lanes, so a ring-bound run (rises with the rings) is told apart from a
 * consumer-bound one. Every row's balance is checked.
 *
 *   node --import tsx bench/probes/askmany.ts [--rows 10000,100000] [--rings 1024,16384] [--trials 7] [--backends
 *   cuda,cpu]
 * Writes $OUT/askmany-probe.json (or .device/out/).
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
const rowsList = option('--rows', '10000,100000').split(',').map(Number);
const rings = option('--rings', '1024,16384').split(',').map(Number);
const TRIALS = Number(option('--trials', '7'));
const backends = option('--backends', 'cuda,cpu').split(',');
const outDir = process.env['OUT'] ?? path.resolve('.device/out');
mkdirSync(outDir, { recursive: true });

interface Row {
  backend: string;
  rows: number;
  ring: number;
  rowsPerS: number;
  msPerCall: number;
  trials: number[];
}
const out: Row[] = [];
const cuda = backends.includes('cuda') && probeCuda().ok;
for (const name of backends) {
  if (name === 'cuda' && !cuda) {
    console.log('askmany-probe: no CUDA device, cuda skipped');
    continue;
  }
  for (const ring of rings) {
    for (const R of rowsList) {
      const backend: Backend = name === 'cuda' ? new CudaBackend() : new CpuBackend({ threads: 1 });
      const ringSizes = { ringCapacity: ring, replyCapacity: ring };
      const sys = accountSystem(backend, name, QUIET, { maxActors: Math.max(4096, R), ...ringSizes });
      await sys.start();
      try {
        const key = Int32Array.from({ length: R }, (_, i) => i);
        const amount = new Float64Array(R).fill(1);
        const rates: number[] = [];
        for (let t = 0; t < TRIALS + 1; t++) {
          const t0 = performance.now();
          const r = await sys.askMany(Account, 'deposit', { key, amount });
          const dt = performance.now() - t0;
          for (let i = 0; i < R; i++)
            if (r.balance[i] !== t + 1) throw new Error(`${name}: row ${i} balance ${r.balance[i]}, want ${t + 1}`);
          if (t > 0) rates.push(R / (dt / 1000)); // the first call warms up (activations, JIT)
        }
        const m = median(rates);
        out.push({ backend: name, rows: R, ring, rowsPerS: m, msPerCall: (R / m) * 1000, trials: rates });
        console.log(
          `${name.padEnd(4)} ring ${String(ring).padStart(5)}  ` +
            `rows ${String(R).padStart(7)}: ${(m / 1e6).toFixed(2)} M rows/s, ${((R / m) * 1000).toFixed(2)} ` +
            'ms a call',
        );
      } finally {
        await sys.shutdown();
      }
    }
  }
}
writeFileSync(
  path.join(outDir, 'askmany-probe.json'),
  JSON.stringify(
    {
      date: new Date().toISOString(),
      command: `node --import tsx bench/probes/askmany.ts ${argv.join(' ')}`,
      results: out,
    },
    null,
    1,
  ) + '\n',
);
