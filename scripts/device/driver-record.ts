/**
 * The GPU-machine run for the CUDA driver layer, and its record.
 *
 *   bash scripts/device/run.sh node --import tsx scripts/device/driver-record.ts [--pings 10000] [--sanitize]
 *
 * 1. runs packages/cuda-backend/test/driver.test.ts with vitest (child process, JSON report);
 * 2. measures, in this process: NVRTC compile cold vs cached, module load, 10,000 host ↔ persistent
 *    kernel ping-pongs over pinned mapped memory (every answer checked) and launch + synchronize;
 * 3. with --sanitize, runs a short ping-pong under compute-sanitizer memcheck;
 * 4. writes $OUT/driver-record.json (copy it to bench/results/gpu/ and commit it).
 *
 * The commit is taken from RG_COMMIT (the GPU machine has no .git). Nothing here is simulated: if a
 * step fails, the record says so and the script exits non-zero.
 */
import { spawnSync } from 'node:child_process';
import { emptyCounts, runVitestPath, type TestCounts } from './vitest-run.ts';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { compileCached, CudaContext, probeCuda } from '../../packages/cuda-backend/src/driver/index.ts';
import {
  EMPTY_KERNEL_SOURCE,
  PINGPONG_EXIT,
  runLaunchSync,
  runPingPong,
} from '../../packages/cuda-backend/test/selftest.ts';

const argv = process.argv.slice(2);
const flag = (name: string): boolean => argv.includes(name);
const option = (name: string, fallback: string): string => {
  const i = argv.indexOf(name);
  return i >= 0 ? (argv[i + 1] ?? fallback) : fallback;
};

const outDir = process.env['OUT'] ?? path.resolve('.device/out');
mkdirSync(outDir, { recursive: true });
const pings = Number(option('--pings', '10000'));

/** --selftest-only: the short ping-pong that compute-sanitizer wraps (no vitest, no record). */
if (flag('--selftest-only')) {
  const ctx = CudaContext.create();
  const r = await runPingPong(ctx, { count: pings, warmup: 0 });
  ctx.dispose();
  console.log(`selftest: ${r.answered} answers checked, exit code ${r.exitCode}`);
  process.exit(r.answered === pings && r.exitCode === PINGPONG_EXIT.stopFlag ? 0 : 1);
}

function runVitest(): TestCounts {
  return runVitestPath(
    'packages/cuda-backend/test/driver.test.ts',
    path.join(outDir, 'vitest-driver.json'),
    240_000,
    [],
    emptyCounts(),
  );
}

function runSanitizer(): Record<string, unknown> {
  const candidates = ['compute-sanitizer', '/usr/local/cuda/bin/compute-sanitizer'];
  const tool = candidates.find((c) => spawnSync(c, ['--version'], { stdio: 'ignore' }).status === 0);
  if (!tool) return { ran: false, reason: 'compute-sanitizer not found' };
  const t0 = performance.now();
  const r = spawnSync(
    tool,
    [
      '--tool',
      'memcheck',
      '--error-exitcode',
      '99',
      process.execPath,
      '--import',
      'tsx',
      'scripts/device/driver-record.ts',
      '--selftest-only',
      '--pings',
      '200',
    ],
    { encoding: 'utf8', timeout: 120_000 },
  );
  const text = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  writeFileSync(path.join(outDir, 'sanitizer-memcheck.log'), text);
  const summary = /ERROR SUMMARY: (\d+) error/.exec(text);
  return {
    ran: true,
    tool: 'memcheck',
    kernel: 'rg_pingpong (200 pings)',
    exitCode: r.status,
    timedOut: r.error !== undefined && /ETIMEDOUT/.test(String(r.error)),
    errors: summary ? Number(summary[1]) : null,
    seconds: Math.round((performance.now() - t0) / 100) / 10,
  };
}

function nvidiaSmi(): string | null {
  const r = spawnSync(
    'nvidia-smi',
    ['--query-gpu=name,driver_version,memory.total,pci.bus_id', '--format=csv,noheader'],
    { encoding: 'utf8' },
  );
  return r.status === 0 ? r.stdout.trim() : null;
}

const started = new Date();
const probe = probeCuda();
const record: Record<string, unknown> = {
  kind: 'ringgrain-driver-run',
  date: started.toISOString(),
  commit: process.env['RG_COMMIT'] ?? null,
  host: {
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    cpus: os.cpus()[0]?.model ?? null,
    nvidiaSmi: nvidiaSmi(),
  },
};
let ok = probe.ok;

if (!probe.ok) {
  record['error'] = `CUDA unavailable: ${probe.reason}`;
} else {
  record['device'] = probe.device;
  record['driver'] = {
    version: probe.driverVersion,
    versionString: probe.driverVersionString,
    libcuda: probe.libcudaPath,
  };
  record['nvrtc'] = probe.nvrtc;

  console.log('== vitest: packages/cuda-backend/test/driver.test.ts');
  const tests = runVitest();
  record['tests'] = { file: 'packages/cuda-backend/test/driver.test.ts', ...tests };
  ok &&= tests.exitCode === 0 && tests.failed === 0 && tests.passed > 0;

  console.log(`== measurements (${pings} ping-pongs)`);
  const cacheDir = mkdtempSync(path.join(os.tmpdir(), 'rg-record-cache-'));
  const ctx = CudaContext.create();
  try {
    const cold = compileCached(EMPTY_KERNEL_SOURCE, { arch: ctx.device.arch, name: 'rg_empty.cu', cacheDir });
    const warm = compileCached(EMPTY_KERNEL_SOURCE, { arch: ctx.device.arch, name: 'rg_empty.cu', cacheDir });
    const l0 = performance.now();
    const mod = ctx.loadModule(warm.cubin);
    const loadMs = performance.now() - l0;
    ctx.unloadModule(mod);
    record['compile'] = {
      kernel: 'rg_empty (empty extern "C" kernel)',
      nvrtcColdMs: cold.compileMs,
      cachedLookupMs: warm.elapsedMs,
      cachedHit: warm.cached,
      cubinBytes: warm.cubin.byteLength,
      moduleLoadCubinMs: loadMs,
    };

    const pp = await runPingPong(ctx, { count: pings, warmup: 1000, cacheDir });
    const pingOk = pp.answered === pings + 1000 && pp.exitCode === PINGPONG_EXIT.stopFlag;
    ok &&= pingOk;
    record['pingPong'] = {
      what:
        'host Atomics.store ping → persistent kernel (1 thread, ld.acquire.sys poll of pinned mapped host ' +
        'memory) → st.release.sys pong = ping + 1 → host Atomics.load spin',
      count: pings,
      warmup: 1000,
      answersChecked: pp.answered,
      allAnswersCorrect: pp.answered === pings + 1000,
      kernelExit: pp.exitCode === PINGPONG_EXIT.stopFlag ? 'stop flag' : `exit code ${pp.exitCode}`,
      ...round(pp.latency),
      roundTripsPerSecond: Math.round(1e6 / pp.latency.meanUs),
    };

    const ls = runLaunchSync(ctx, { count: 2000, cacheDir });
    record['launchSync'] = { what: 'cuLaunchKernel(empty) + cuStreamSynchronize per message', ...round(ls.latency) };
    record['memory'] = ctx.memInfo();
  } catch (e) {
    ok = false;
    record['error'] = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  } finally {
    try {
      ctx.dispose();
    } catch (e) {
      ok = false;
      record['disposeError'] = String(e);
    }
    rmSync(cacheDir, { recursive: true, force: true });
  }

  if (flag('--sanitize')) {
    console.log('== compute-sanitizer memcheck on rg_pingpong');
    const s = runSanitizer();
    record['sanitizer'] = s;
    if (s['ran'] === true && s['errors'] !== 0) ok = false;
  }
}

record['ok'] = ok;
record['seconds'] = Math.round((Date.now() - started.getTime()) / 100) / 10;
const file = path.join(outDir, 'driver-record.json');
writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
console.log(JSON.stringify(record, null, 2));
console.log(`record written to ${file}`);
process.exit(ok ? 0 : 1);

function round<T extends object>(o: T): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(o)) if (typeof v === 'number') out[k] = Math.round(v * 1000) / 1000;
  return out;
}
