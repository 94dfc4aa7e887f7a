/**
 * PTX identity of the generated CUDA units: proves a change to the code generator or the CUDA runtime files is a
 * pure move (the device code nvcc makes of every unit is byte-identical) without a GPU.
 *
 *   npx tsx scripts/ptx-identity.ts gen <dir>          every unit the tests and examples produce → <dir>/<name>.cu
 *                                                      (and <name>.grain.cu: the unit with #include lines for the
 *                                                      runtime files)
 *   npx tsx scripts/ptx-identity.ts ptx <dir> [jobs]   nvcc -ptx -arch=sm_90 --std=c++17 of each .cu → .ptx
 *   npx tsx scripts/ptx-identity.ts compare <a> <b>    byte comparison of a/*.ptx with b/*.ptx (exit 1 on a difference)
 *
 * The units are those of packages/codegen/test/compile.test.ts (the examples', benchmarks', fixtures' and
 * conformance suite's grains, with the NVRTC defines the GPU runs pass): the text the CUDA backend hands to NVRTC
 * and the tests build (offset asserts are RG_OFFSET_ASSERT, a no-op under NVRTC).
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { generateKernel } from '../packages/codegen/src/index.ts';
import { RUNTIME_DIR } from '../packages/codegen/src/cuda/runtime.ts';
import { Account } from '../examples/bank/grains.ts';
import { VectorAdd } from '../examples/vector-add/grains.ts';
import { Person, Ward } from '../examples/sir/grains.ts';
import { Alerts, Device } from '../examples/sensor-fleet/grains.ts';
import { Echo, Relay as BenchRelay } from '../bench/grains.ts';
import { Counter, Relay } from '../packages/codegen/test/fixtures/k2k.ts';
import { Stats } from '../packages/codegen/test/fixtures/stats.ts';
import { CONFORMANCE_GRAINS } from '../packages/codegen/test/fixtures/conformance.ts';
import { Guard } from '../packages/codegen/test/fixtures/throws.ts';
import { Par } from '../packages/codegen/test/fixtures/parallel.ts';
import { Beacon } from '../packages/codegen/test/fixtures/timers.ts';
import { Props, Shapes, Views } from '../packages/codegen/test/fixtures/audit.ts';
import { Pulse, Ticker } from '../test/fixtures/timers.ts';

type Unit = readonly [name: string, source: string, grainSource: string | undefined];

/**
 * A unit as the tests build it, and its #include form (the runtime files from RUNTIME_DIR) where the generator has one.
 */
function unit(name: string, k: { source: string; grainSource?: string }, prefix = ''): Unit {
  return [name, prefix + k.source, k.grainSource === undefined ? undefined : prefix + k.grainSource];
}

function units(): Unit[] {
  const conformance = CONFORMANCE_GRAINS.map((c) => c.grain);
  const sir = [Person.grain, Ward.grain];
  return [
    unit('Account', generateKernel(Account.grain)),
    unit('Stats', generateKernel(Stats.grain)),
    unit('k2k-Counter', generateKernel(Counter.grain, { grains: [Counter.grain, Relay.grain] })),
    unit('k2k-Relay', generateKernel(Relay.grain, { grains: [Counter.grain, Relay.grain] })),
    unit('Guard', generateKernel(Guard.grain)),
    unit('Par', generateKernel(Par.grain)),
    unit('Ticker', generateKernel(Ticker.grain)),
    unit('Beacon', generateKernel(Beacon.grain)),
    unit('Pulse', generateKernel(Pulse.grain)),
    unit('Ticker-TURN_LANES1', generateKernel(Ticker.grain), '#define RG_TURN_LANES 1u\n'),
    unit('VectorAdd', generateKernel(VectorAdd.grain)),
    unit('VectorAdd-BULK0', generateKernel(VectorAdd.grain), '#define RG_BULK 0\n'),
    unit(
      'VectorAdd-tinybulk',
      generateKernel(VectorAdd.grain),
      '#define RG_BULK_MIN_BYTES 1024u\n#define RG_BULK_CHUNK_BYTES 256u\n#define RG_BULK_MIN_ITERS ' +
        '64u\n#define RG_BULK_CHUNK_ITERS 32u\n',
    ),
    unit('VectorAdd-COOP0-LANES1', generateKernel(VectorAdd.grain), '#define RG_COOP 0\n#define RG_TURN_LANES 1u\n'),
    unit('sir-Person', generateKernel(Person.grain, { grains: sir })),
    unit('sir-Ward', generateKernel(Ward.grain, { grains: sir })),
    unit('audit-Props', generateKernel(Props.grain)),
    unit('audit-Shapes', generateKernel(Shapes.grain)),
    unit('audit-Views', generateKernel(Views.grain)),
    unit('fleet-Device', generateKernel(Device.grain, { grains: [Device.grain, Alerts.grain] })),
    unit('fleet-Alerts', generateKernel(Alerts.grain, { grains: [Device.grain, Alerts.grain] })),
    unit('bench-Echo', generateKernel(Echo.grain)),
    unit('bench-Relay', generateKernel(BenchRelay.grain)),
    ...conformance.map((g) => unit(`conformance-${g.name}`, generateKernel(g, { grains: conformance }))),
  ];
}

/*
 * nvcc names a unit's internal-linkage symbols after a hash of the source file's path
 * (_INTERNAL_<hash>_<n>_<name>_cu_...), not its content: each unit is compiled from one fixed path so that
 * the PTX of two trees can be compared byte for byte.
 */
const FIXED = join(tmpdir(), 'rg-ptx-identity');
/**
 * The runtime files the #include forms compile against: RUNTIME_DIR, or a copy of one commit's (RG_PTX_RUNTIME_DIR).
 */
const INCLUDE_DIR = process.env['RG_PTX_RUNTIME_DIR'] ?? RUNTIME_DIR;

function nvccPtx(cu: string, ptx: string): Promise<{ ok: boolean; log: string }> {
  const dir = join(FIXED, basename(cu, '.cu').replace(/\.grain$/, ''));
  mkdirSync(dir, { recursive: true });
  const src = join(dir, 'unit.cu');
  copyFileSync(cu, src);
  return new Promise((resolve) => {
    const p = spawn('nvcc', ['-ptx', '-arch=sm_90', '--std=c++17', `-I${INCLUDE_DIR}`, '-x', 'cu', src, '-o', ptx]);
    let log = '';
    p.stdout.on('data', (d) => (log += d));
    p.stderr.on('data', (d) => (log += d));
    p.on('close', (code) => resolve({ ok: code === 0, log }));
  });
}

async function main(): Promise<void> {
  const [cmd, a, b] = process.argv.slice(2);
  if (cmd === 'gen' && a) {
    mkdirSync(a, { recursive: true });
    const all = units();
    for (const [name, src, grain] of all) {
      writeFileSync(join(a, `${name}.cu`), src);
      if (grain !== undefined) writeFileSync(join(a, `${name}.grain.cu`), grain);
    }
    console.log(`${all.length} units written to ${a}`);
  } else if (cmd === 'ptx' && a) {
    // A unit's two forms one after the other (they are compiled from the same fixed path).
    const files = readdirSync(a)
      .filter((f) => f.endsWith('.cu') && !f.endsWith('.grain.cu'))
      .sort();
    const grains = new Set(readdirSync(a).filter((f) => f.endsWith('.grain.cu')));
    const width = Number(b ?? 2);
    let next = 0;
    let failed = 0;
    await Promise.all(
      Array.from({ length: width }, async () => {
        while (next < files.length) {
          const main = files[next++] as string;
          for (const f of [
            main,
            ...(grains.has(main.replace(/\.cu$/, '.grain.cu')) ? [main.replace(/\.cu$/, '.grain.cu')] : []),
          ]) {
            if (existsSync(join(a, f.replace(/\.cu$/, '.ptx')))) continue; // done by an earlier run
            const t0 = Date.now();
            const r = await nvccPtx(join(a, f), join(a, f.replace(/\.cu$/, '.ptx')));
            console.log(
              `${r.ok ? 'ok  ' : 'FAIL'} ${f} ${((Date.now() - t0) / 1000).toFixed(1)} s${r.log ? `\n${r.log}` : ''}`,
            );
            if (!r.ok) failed++;
          }
        }
      }),
    );
    if (failed) process.exit(1);
  } else if (cmd === 'compare' && a && b) {
    const names = readdirSync(a)
      .filter((f) => f.endsWith('.ptx') && !f.endsWith('.grain.ptx'))
      .sort();
    const other = new Set(readdirSync(b).filter((f) => f.endsWith('.ptx') && !f.endsWith('.grain.ptx')));
    const grainForms = new Set(readdirSync(b).filter((f) => f.endsWith('.grain.ptx')));
    let diff = 0;
    for (const f of names) {
      if (!other.has(f)) {
        console.log(`MISSING ${f} in ${b}`);
        diff++;
        continue;
      }
      other.delete(f);
      const ref = readFileSync(join(a, f));
      const same = ref.equals(readFileSync(join(b, f)));
      const g = f.replace(/\.ptx$/, '.grain.ptx');
      // The #include form (grainSource, compiled with -I RUNTIME_DIR) must give the same PTX too.
      const grainSame = grainForms.has(g) ? ref.equals(readFileSync(join(b, g))) : undefined;
      console.log(
        `${same ? 'identical' : 'DIFFERENT'} ${f}${grainSame === undefined ? '' : grainSame ? ' (and its #include form)' : ' (#include form DIFFERENT)'}`,
      );
      if (!same || grainSame === false) diff++;
    }
    for (const f of other) {
      console.log(`MISSING ${f} in ${a}`);
      diff++;
    }
    console.log(diff ? `${diff} of ${names.length} differ` : `all ${names.length} PTX files identical`);
    if (diff) process.exit(1);
  } else {
    console.error('usage: ptx-identity.ts gen <dir> | ptx <dir> [jobs] | compare <a> <b>');
    process.exit(2);
  }
}

await main();
