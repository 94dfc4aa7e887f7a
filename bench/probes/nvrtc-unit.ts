/**
 * Where one grain class's NVRTC compile goes: each unit compiled on this thread, one after the other, per option set,
 * with NVRTC's own phase timer (`--time`: front end, NVVM optimizer, PTX → SASS); median of the trials. Reports wall
 * and CPU milliseconds (CPU is the figure to compare on a machine shared with other work), the phases, and the image
 * size. NVRTC only, no GPU: RINGGRAIN_NVRTC=/path/to/libnvrtc.so.13.
 *
 *   node --import tsx bench/probes/nvrtc-unit.ts [--units sir-Person,sir-Ward] [--trials 3] [--arch sm_90]
 *        [--opts ",-Ofc=min"]      option sets, comma-separated, each one or more options joined by spaces
 *                                  (the empty set is the default build: the options the backend uses)
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { GrainDef } from '@ringgrain/core/backend';
import { generateKernel } from '../../packages/codegen/src/index.ts';
import { loadNvrtc } from '../../packages/cuda-backend/src/index.ts';
import { unitCompileOptions } from '../../packages/cuda-backend/src/nvrtc-unit.ts';
import { Account } from '../../examples/bank/grains.ts';
import { Person, Ward } from '../../examples/sir/grains.ts';
import { CONFORMANCE_GRAINS } from '../../packages/codegen/test/fixtures/conformance.ts';
import { median } from '../trials.ts';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? (process.argv[i + 1] as string) : dflt;
}

const g = (c: { grain: unknown }): GrainDef => c.grain as GrainDef;
const sir = [g(Person), g(Ward)];
const conformance = CONFORMANCE_GRAINS.map((c) => c.grain as GrainDef);
/** The units this probe knows: each class with the grain list of its program. */
const UNITS: Record<string, { def: GrainDef; grains: GrainDef[] }> = {
  'sir-Person': { def: g(Person), grains: sir },
  'sir-Ward': { def: g(Ward), grains: sir },
  Account: { def: g(Account), grains: [g(Account)] },
  ...Object.fromEntries(conformance.map((def) => [`conformance-${def.name}`, { def, grains: conformance }])),
};

const names = arg('units', 'sir-Person,sir-Ward').split(',');
const trials = Number(arg('trials', '3'));
const arch = arg('arch', 'sm_90');
const optionSets = arg('opts', ',-Ofc=min')
  .split(',')
  .map((s) => s.split(' ').filter(Boolean));
for (const n of names) {
  if (!UNITS[n]) throw new Error(`--units: no unit ${n} (known: ${Object.keys(UNITS).join(', ')})`);
}

const nvrtc = loadNvrtc();
const dir = mkdtempSync(join(tmpdir(), 'rg-nvrtc-unit-'));
/** NVRTC's --time file: "name, phase, ms, unit" rows; the phases of the last compile. */
function phases(file: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
    const [, phase, ms] = line.split(',').map((s) => s.trim());
    if (phase && ms) out[phase] = (out[phase] ?? 0) + Number(ms);
  }
  return out;
}

console.log(
  `NVRTC ${nvrtc.versionString} (${nvrtc.libPath}), ${arch}, ${trials} trials each, one thread; ` +
    `load average ${(await import('node:os')).loadavg().map((l) => l.toFixed(1)).join(' ')}`,
);
console.log('| unit | lines | KB | options | wall ms | CPU ms | front end | NVVM | PTX → SASS | image KB |');
console.log('|---|---:|---:|---|---:|---:|---:|---:|---:|---:|');
try {
  for (const name of names) {
    const u = UNITS[name] as { def: GrainDef; grains: GrainDef[] };
    const source = generateKernel(u.def, { grains: u.grains }).source;
    const base = unitCompileOptions(u.def, arch).extraOpts ?? [];
    for (const extra of optionSets) {
      const wall: number[] = [];
      const cpu: number[] = [];
      const ph: Record<string, number>[] = [];
      let size = 0;
      for (let t = 0; t < trials; t++) {
        const file = join(dir, `${name}-${t}.csv`);
        rmSync(file, { force: true }); // NVRTC appends to a --time file
        const t0 = performance.now();
        const c0 = process.cpuUsage();
        const extraOpts = [...base, ...extra, `--time=${file}`];
        const out = nvrtc.compile(source, { arch, name: `${u.def.name}.cu`, extraOpts });
        const c = process.cpuUsage(c0);
        wall.push(performance.now() - t0);
        cpu.push((c.user + c.system) / 1000);
        ph.push(phases(file));
        size = out.image.length;
      }
      const phase = (k: string) => median(ph.map((p) => p[k] ?? 0)).toFixed(0);
      console.log(
        `| ${name} | ${source.split('\n').length} | ${Math.round(source.length / 1024)} | ` +
          `${extra.join(' ') || '(default)'} | ` +
          `${median(wall).toFixed(0)} | ${median(cpu).toFixed(0)} | ${phase('CUDA C++ Frontend')} | ` +
          `${phase('NVVM Optimizer')} | ${phase('PTX Translation')} | ${Math.round(size / 1024)} |`,
      );
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
