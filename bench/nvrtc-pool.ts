/**
 * NVRTC compiles of grain-class units one after the other on this thread against the NVRTC pool's worker threads
 * (packages/cuda-backend/src/driver/nvrtc-pool.ts), side by side in each trial, in alternating order; median of the
 * trials and the ratio sequential / pool. Each pool trial starts a fresh pool, so its time includes starting the
 * workers (a first run's cost). The pool's images are checked byte for byte against the sequential ones.
 *
 * NVRTC runs without a GPU: RINGGRAIN_NVRTC=/path/to/libnvrtc.so.13 (e.g. unzipped from the nvidia-cuda-nvrtc wheel).
 *   node --import tsx bench/nvrtc-pool.ts [--classes 8] [--trials 3] [--threads n] [--arch sm_90]
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { generateKernel } from '../packages/codegen/src/index.ts';
import { loadNvrtc, NvrtcPool } from '../packages/cuda-backend/src/index.ts';
import type { GrainDef } from '@ringgrain/core/backend';
import { Account } from '../examples/bank/grains.ts';
import { Alerts, Device } from '../examples/sensor-fleet/grains.ts';
import { Person, Ward } from '../examples/sir/grains.ts';
import { VectorAdd } from '../examples/vector-add/grains.ts';
import { Numbers, Seq } from '../test/fixtures/grains.ts';
import { median } from './trials.ts';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? (process.argv[i + 1] as string) : dflt;
}

const classes = Number(arg('classes', '8'));
const trialCount = Number(arg('trials', '3'));
const threads = Number(arg('threads', String(os.availableParallelism())));
const arch = arg('arch', 'sm_90');

/** Each class with the grain list of its program (a unit that sends to another class needs it in the list). */
const g = (c: { grain: unknown }): GrainDef => c.grain as GrainDef;
const PROGRAMS: GrainDef[][] = [
  [g(Account)],
  [g(Device), g(Alerts)],
  [g(Person), g(Ward)],
  [g(VectorAdd)],
  [g(Numbers)],
  [g(Seq)],
];
const all = PROGRAMS.flatMap((grains) => grains.map((def) => ({ def, grains })));
if (classes > all.length) throw new Error(`--classes ${classes}: this bench has ${all.length} classes`);

const nvrtc = loadNvrtc();
const units = all
  .slice(0, classes)
  .map(({ def, grains }) => ({ name: `${def.name}.cu`, source: generateKernel(def, { grains }).source }));
const opts = (name: string) => ({ arch, name, extraOpts: ['--std=c++17'] });
console.log(
  `NVRTC ${nvrtc.versionString} (${nvrtc.libPath}); ${units.length} units ` +
    `(${units.map((u) => `${u.name} ${Math.round(u.source.length / 1024)} KB`).join(', ')}); ` +
    `${arch}; pool of ${threads} threads; ${os.availableParallelism()} cores, load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
);

/** CPU seconds of every thread of this process (the pool's workers included) since `from`. */
const cpuSince = (from: NodeJS.CpuUsage): number => {
  const d = process.cpuUsage(from);
  return (d.user + d.system) / 1e6;
};

async function sequential(): Promise<{ ms: number; cpu: number; images: Uint8Array[] }> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const images = units.map((u) => nvrtc.compile(u.source, opts(u.name)).image);
  return { ms: performance.now() - t0, cpu: cpuSince(c0), images };
}

async function pooled(): Promise<{ ms: number; cpu: number; images: Uint8Array[]; compileMs: number[] }> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const pool = new NvrtcPool({ threads, libPath: nvrtc.libPath });
  try {
    const out = await Promise.all(units.map((u) => pool.compile(u.source, opts(u.name))));
    const ms = performance.now() - t0;
    return { ms, cpu: cpuSince(c0), images: out.map((o) => o.image), compileMs: out.map((o) => o.compileMs) };
  } finally {
    await pool.close();
  }
}

const seqMs: number[] = [];
const poolMs: number[] = [];
let identical = 0;
let compared = 0;
for (let t = 0; t < trialCount; t++) {
  const order = t % 2 === 0 ? (['seq', 'pool'] as const) : (['pool', 'seq'] as const);
  let seq: Awaited<ReturnType<typeof sequential>> | undefined;
  let pool: Awaited<ReturnType<typeof pooled>> | undefined;
  for (const which of order) {
    if (which === 'seq') seq = await sequential();
    else pool = await pooled();
  }
  if (!seq || !pool) throw new Error('a trial ran only one side');
  seqMs.push(seq.ms);
  poolMs.push(pool.ms);
  for (let i = 0; i < units.length; i++) {
    compared++;
    if (Buffer.from(seq.images[i]!).equals(Buffer.from(pool.images[i]!))) identical++;
    else
      console.log(
        `  ${units[i]!.name}: the pool's image differs from the sequential one ` +
          `(${pool.images[i]!.byteLength} vs ${seq.images[i]!.byteLength} bytes)`,
      );
  }
  console.log(
    `trial ${t + 1} (${order.join(' then ')}): ` +
      `sequential ${(seq.ms / 1000).toFixed(1)} s (CPU ${seq.cpu.toFixed(1)} s), ` +
      `pool ${(pool.ms / 1000).toFixed(1)} s (CPU ${pool.cpu.toFixed(1)} s) ` +
      `(per unit on its worker ${pool.compileMs.map((m) => (m / 1000).toFixed(1)).join(', ')} s)`,
  );
}
const s = median(seqMs);
const p = median(poolMs);
// Each trial's two sides ran back to back, so a trial's ratio is less exposed to the machine's other load.
const ratios = seqMs.map((x, i) => x / poolMs[i]!);
const perTrial = ratios.map((r) => r.toFixed(2)).join(', ');
console.log(`per-trial sequential/pool: ${perTrial}; median ${median(ratios).toFixed(2)}x`);
console.log(
  `median of ${trialCount}: sequential ${(s / 1000).toFixed(1)} s, pool ${(p / 1000).toFixed(1)} s, ` +
    `sequential/pool ${(s / p).toFixed(2)}x; ` +
    `images identical ${identical}/${compared}; load average after ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
);
