/**
 * The GPU-machine run for the CUDA backend, and its record.
 *
 *   RG_COMMIT=<sha> bash scripts/device/run.sh node --import tsx scripts/device/cuda-record.ts [--tests <paths…>]
 *   [--sanitize] [--asks 10000] [--only-k2k 1024,2048] [--k2k-walks 16384] [--k2k-steps 1000]
 *
 * 1. runs vitest over packages/cuda-backend and test/conformance (child process, JSON report);
 * 2. measures in this process, every answer checked: cold vs cached launch of the Account kernel,
 *    ask round trips host → GPU actor → host through core (typed refs, promises), tells throughput,
 *    and in the same run the launch-per-message baseline (cuLaunchKernel + cuStreamSynchronize);
 * 3. with --sanitize runs a small bank workload (asks, tells, K2K) under compute-sanitizer memcheck and
 *    racecheck;
 * 4. writes $OUT/cuda-record.json (copy it to bench/results/gpu/ and commit it).
 * Nothing is simulated; a failing step is recorded as failing and the exit code is non-zero.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { GrainSystem } from '../../packages/core/src/index.ts';
import { emptyCounts, runVitestPath, type TestCounts } from './vitest-run.ts';
import { relayHop, relayWalks, tellsWithFlowControl } from '../gpu-measure.ts';
import { Account } from '../../examples/bank/grains.ts';
import { RELAY_ACTORS } from '../../bench/grains.ts';
import { PATIENT, accountSystem, relaySystem } from '../../bench/lib/systems.ts';
import { CudaBackend, CudaContext, IsolatedCudaBackend, probeCuda } from '../../packages/cuda-backend/src/index.ts';
import { runLaunchSync, summarize } from '../../packages/cuda-backend/test/selftest.ts';

const argv = process.argv.slice(2);
const flag = (n: string) => argv.includes(n);
const option = (n: string, d: string) => (argv.includes(n) ? (argv[argv.indexOf(n) + 1] ?? d) : d);
const outDir = process.env['OUT'] ?? path.resolve('.device/out');
mkdirSync(outDir, { recursive: true });
const ASKS = Number(option('--asks', '10000'));

function newSystem(backend: CudaBackend | IsolatedCudaBackend, extra: Record<string, unknown> = {}): GrainSystem {
  return accountSystem(backend, 'cuda', { ...PATIENT, ...extra }, { ringCapacity: 1024, replyCapacity: 1024 });
}

/** The workload compute-sanitizer wraps: asks, tells and K2K transfers, every answer checked. */
async function sanitizeTarget(): Promise<void> {
  const backend = new CudaBackend({ partitions: 4 });
  const sys = newSystem(backend);
  await sys.start();
  let ok = true;
  for (let i = 1; i <= 40; i++) {
    const r = await sys.grain(Account, i % 5).deposit({ amount: 1 });
    ok &&= r.balance === Math.ceil(i / 5) || r.balance === Math.floor((i - 1) / 5) + 1;
  }
  for (let k = 0; k < 5; k++) sys.grain(Account, k).tell.transfer({ to: (k + 1) % 5, amount: 1 });
  const t0 = performance.now();
  while (sys.counters(Account).k2kReceived < 5 && performance.now() - t0 < 60_000)
    await new Promise((r) => setTimeout(r, 5));
  let total = 0;
  for (let k = 0; k < 5; k++) total += (await sys.grain(Account, k).balance({})).balance;
  ok &&= total === 40;
  await sys.shutdown();
  console.log(`sanitize-target: ${ok ? 'all answers correct' : 'WRONG ANSWERS'} (total ${total})`);
  process.exit(ok ? 0 : 1);
}

if (flag('--sanitize-target')) await sanitizeTarget();
process.on('unhandledRejection', (e) => console.error('unhandled rejection:', e));

/**
 * One vitest process per path, one after another: files run in parallel would put persistent kernels
 * of two processes (two CUDA contexts) on the GPU at once, which time-slices them by milliseconds.
 * A path that runs past RG_VITEST_TIMEOUT_MS is killed and recorded as such, and the next one runs.
 */
function runVitest(paths: string[]): TestCounts {
  const counts = emptyCounts();
  for (const [i, p] of paths.entries()) {
    console.log(`== vitest ${p}`);
    runVitestPath(
      p,
      path.join(outDir, `vitest-${i}.json`),
      Number(process.env['RG_VITEST_TIMEOUT_MS'] ?? 300_000),
      ['--no-file-parallelism'],
      counts,
    );
    // A killed vitest leaves its fork alive, and with it a persistent kernel in another CUDA context
    // that time-slices the GPU with everything after it: kill every leftover vitest process.
    spawnSync('pkill', ['-9', '-f', 'node_modules/vitest'], { stdio: 'ignore' });
  }
  return counts;
}

function runSanitizer(tool: 'memcheck' | 'racecheck'): Record<string, unknown> {
  const bin = ['compute-sanitizer', '/usr/local/cuda/bin/compute-sanitizer'].find(
    (c) => spawnSync(c, ['--version'], { stdio: 'ignore' }).status === 0,
  );
  if (!bin) return { ran: false, reason: 'compute-sanitizer not found' };
  const t0 = performance.now();
  const r = spawnSync(
    bin,
    [
      '--tool',
      tool,
      '--error-exitcode',
      '99',
      process.execPath,
      '--import',
      'tsx',
      'scripts/device/cuda-record.ts',
      '--sanitize-target',
    ],
    {
      encoding: 'utf8',
      timeout: 200_000,
      env: { ...process.env, RINGGRAIN_CACHE_DIR: mkdtempSync(path.join(os.tmpdir(), `rg-san-${tool}-`)) },
    },
  );
  const text = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  writeFileSync(path.join(outDir, `sanitizer-${tool}.log`), text);
  const summary = /ERROR SUMMARY: (\d+) error/.exec(text);
  const hazards = /RACECHECK SUMMARY: (\d+) hazard/.exec(text);
  return {
    ran: true,
    tool,
    workload: 'Account kernel, 4 worker warps: 40 asks, 5 K2K transfers, 5 balance asks, STOP',
    exitCode: r.status,
    timedOut: r.error !== undefined && /ETIMEDOUT/.test(String(r.error)),
    errors: summary ? Number(summary[1]) : null,
    hazards: hazards ? Number(hazards[1]) : null,
    targetSaid: /sanitize-target: .*/.exec(text)?.[0] ?? null,
    seconds: Math.round((performance.now() - t0) / 100) / 10,
  };
}

const round = (o: Record<string, number>) =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Math.round(v * 1000) / 1000]));

async function measureLaunches(): Promise<Record<string, unknown>> {
  const cacheDir = mkdtempSync(path.join(os.tmpdir(), 'rg-cuda-cache-'));
  const backend = new CudaBackend({ cacheDir });
  const sys = newSystem(backend);
  const t0 = performance.now();
  await sys.start();
  const coldMs = performance.now() - t0;
  const k = sys.kernel(Account);
  const cachedMs: number[] = [];
  for (let i = 0; i < 20; i++) {
    await k.terminate();
    const t = performance.now();
    await sys.launch(Account);
    cachedMs.push(performance.now() - t);
    const r = await sys.grain(Account, i).deposit({ amount: 1 });
    if (r.balance !== 1) throw new Error(`launch ${i}: wrong balance ${r.balance}`);
  }
  await sys.shutdown();
  cachedMs.sort((a, b) => a - b);
  console.log(
    `launch: cold ${coldMs.toFixed(1)} ms, cached p50 ${cachedMs[10]?.toFixed(1)} ms, ` +
      `max ${cachedMs[cachedMs.length - 1]?.toFixed(1)} ms`,
  );
  const [first, ...rest] = backend.launches;
  return {
    what:
      'GrainSystem.start / launch(Account) = createKernel (generate, compile or cache, load, allocate) + ' +
      'kernel launch + IDLE and ACTIVE handshakes',
    coldStartMs: coldMs,
    coldCompile: first
      ? { cached: first.cached, compileMs: first.compileMs, generateMs: first.generateMs, loadMs: first.loadMs }
      : null,
    cachedLaunchMs: { p50: cachedMs[10], max: cachedMs[cachedMs.length - 1], min: cachedMs[0], n: cachedMs.length },
    cachedAllHit: rest.every((l) => l.cached),
    cachedCreateKernelMsP50: rest.map((l) => l.createMs).sort((a, b) => a - b)[10],
  };
}

async function measureAsks(partitions: number, isolated = false): Promise<Record<string, unknown>> {
  const backend = isolated ? new IsolatedCudaBackend({ partitions }) : new CudaBackend({ partitions });
  const sys = newSystem(backend);
  await sys.start();
  const a = sys.grain(Account, 42);
  let expected = 0;
  const warm = 1000;
  const samples = new Float64Array(ASKS);
  for (let i = 0; i < warm + ASKS; i++) {
    const t = process.hrtime.bigint();
    const r = await a.deposit({ amount: 1 });
    const dt = Number(process.hrtime.bigint() - t) / 1000;
    expected += 1;
    if (r.balance !== expected) throw new Error(`ask ${i}: balance ${r.balance}, expected ${expected}`);
    if (i >= warm) samples[i - warm] = dt;
  }
  console.log(
    `asks (partitions ${partitions}${isolated ? ', GPU host process' : ''}): ${JSON.stringify(round(summarize(samples) as unknown as Record<string, number>))}`,
  );
  // Tells: pipelined to 1,000 actors with flow control on the inbound ring (a producer that never
  // overfills it), then a balance ask to check them.
  const tells = 200_000;
  const kernel = sys.kernel(Account);
  const refs = Array.from({ length: 1000 }, (_, k) => sys.grain(Account, 1000 + k));
  const t0 = performance.now();
  const c0 = sys.counters(Account).processed;
  await tellsWithFlowControl(kernel, tells, (i) => refs[i % 1000]!.tell.deposit({ amount: 1 }), 60_000);
  while (sys.counters(Account).processed - c0 < tells) {
    await new Promise((r) => setImmediate(r));
    if (performance.now() - t0 > 90_000)
      throw new Error(`tells: ${sys.counters(Account).processed - c0} of ${tells} processed in 90 s`);
  }
  const tellS = (performance.now() - t0) / 1000;
  for (let k = 1000; k < 2000; k += 97) {
    const b = await sys.grain(Account, k).balance({});
    if (b.balance !== tells / 1000) throw new Error(`tells: key ${k} balance ${b.balance}`);
  }
  const launch = backend.launches[0]!;
  await sys.shutdown();
  return {
    partitions,
    ...(isolated ? { backend: 'IsolatedCudaBackend (GPU host process, rings in a shared mapping)' } : {}),
    blocks: launch.blocks,
    asks: {
      what:
        'await ref.deposit({amount:1}) one at a time: host ring → GPU ingress warp → partition queue → ' +
        'worker warp runs the translated handler → reply ring → core resolves the promise',
      count: ASKS,
      warmup: warm,
      allAnswersChecked: true,
      ...round(summarize(samples) as unknown as Record<string, number>),
    },
    tells: {
      count: tells,
      seconds: tellS,
      perSecond: Math.round(tells / tellS),
      checked: 'balance of every 97th actor equals tells/1000',
    },
  };
}

/**
 * On-device K2K: (1) hop latency = (chain of H forwards − chain of 0) / H, every hop a device-queue
 * message between actors of different partitions; (2) throughput: S seed tells each start a walk of T
 * K2K sends over 1,048,576 actors; counted by the kernel's own counters, and sampled actors' counts
 * checked against the same walk computed in JS.
 */
async function measureK2K(partitions: number): Promise<Record<string, unknown>> {
  const backend = new CudaBackend({ partitions, queueCapacity: 1024 });
  const sys = relaySystem(backend);
  await sys.start();
  const hop = await relayHop(sys);
  console.log(
    `k2k hop (partitions ${partitions}): chain(0) p50 ${hop.chain0P50Us.toFixed(2)} µs, ` +
      `chain(${hop.hops}) p50 ${hop.chainHP50Us.toFixed(1)} µs → ${hop.hopNs.toFixed(0)} ns/hop`,
  );
  // Walks in flight bound the parallelism: each walk is one message at a time.
  const S = Number(option('--k2k-walks', '16384'));
  const T = Number(option('--k2k-steps', '1000'));
  // Sampled actors (from 4099 up) lie above the chain's keys (0..H), which chain() also counts.
  const model = new Uint32Array(RELAY_ACTORS);
  const w = await relayWalks(sys, S, T, model);
  await sys.shutdown();
  console.log(
    `k2k throughput (partitions ${partitions}): ${w.k2kMessages} K2K messages in ${w.seconds.toFixed(3)} ` +
      `s = ${(w.perSecond / 1e6).toFixed(2)} M/s`,
  );
  return {
    partitions,
    hop: {
      what:
        `(p50 of ask chain(${hop.hops}) − p50 of ask chain(0)) / ${hop.hops}: one K2K forward between ` +
        'actors, on the device',
      ...hop,
    },
    throughput: {
      what:
        `${S} walks of ${T} K2K sends over ${RELAY_ACTORS} actors, timed until every turn was counted; ` +
        'sampled actors checked against the JS walks',
      walks: S,
      steps: T,
      ...w,
    },
  };
}

const started = new Date();
const probe = probeCuda();
const record: Record<string, unknown> = {
  kind: 'ringgrain-cuda-backend-run',
  date: started.toISOString(),
  commit: process.env['RG_COMMIT'] ?? null,
  host: {
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    cpus: os.cpus()[0]?.model ?? null,
  },
};
let ok = probe.ok;
if (!probe.ok) record['error'] = `CUDA unavailable: ${probe.reason}`;
else {
  record['device'] = {
    name: probe.device.name,
    arch: probe.device.arch,
    sms: probe.device.multiprocessorCount,
    pciBusId: probe.device.pciBusId,
  };
  record['driver'] = {
    version: probe.driverVersion,
    versionString: probe.driverVersionString,
    nvrtc: probe.nvrtc?.version ?? null,
  };
  const steps: Record<string, unknown> = {};
  const tryStep = async (name: string, f: () => Promise<unknown> | unknown) => {
    console.log(`== ${name}`);
    try {
      steps[name] = await f();
    } catch (e) {
      ok = false;
      steps[name] = { error: String((e as Error)?.stack ?? e).slice(0, 1500) };
      console.error(e);
    }
  };
  const others = spawnSync('nvidia-smi', ['--query-compute-apps=pid,process_name', '--format=csv,noheader'], {
    encoding: 'utf8',
  });
  record['otherGpuProcessesBeforeBench'] = (others.stdout ?? '')
    .trim()
    .split('\n')
    .filter((l) => l && !l.startsWith(String(process.pid)));
  const onlyK2K = option('--only-k2k', '');
  if (onlyK2K) {
    // Just the on-device K2K benchmark at these partition counts (comma-separated).
    for (const p of onlyK2K.split(',').map(Number)) await tryStep(`k2kPartitions${p}`, () => measureK2K(p));
  } else if (!flag('--no-bench')) {
    // --steps a,b: only these steps (names as below).
    const only = option('--steps', '').split(',').filter(Boolean);
    const step = (name: string, f: () => Promise<unknown> | unknown) =>
      only.length === 0 || only.includes(name) ? tryStep(name, f) : Promise.resolve();
    await step('launch', measureLaunches);
    await step('asksPartitions32', () => measureAsks(32));
    await step('asksPartitions4', () => measureAsks(4));
    await step('asksPartitions4Isolated', () => measureAsks(4, true));
    await step('k2kPartitions32', () => measureK2K(32));
    await step('k2kPartitions256', () => measureK2K(256));
    await step('k2kPartitions1024', () => measureK2K(1024));
    await step('launchPerMessage', () => {
      const ctx = CudaContext.create();
      try {
        const r = runLaunchSync(ctx, { count: ASKS });
        return { what: 'cuLaunchKernel(empty kernel) + cuStreamSynchronize per message, same process and run', ...r };
      } finally {
        ctx.dispose();
      }
    });
  }
  // Saved now too: if the tests below outrun the run's time limit, the figures still come back.
  record['figures'] = steps;
  writeFileSync(path.join(outDir, 'cuda-record.json'), `${JSON.stringify(record, null, 2)}\n`);
  if (flag('--sanitize')) {
    await tryStep('memcheck', () => runSanitizer('memcheck'));
    await tryStep('racecheck', () => runSanitizer('racecheck'));
  }
  // Tests after the benchmarks: a test process that hangs and is killed cannot slow the figures.
  const testsArg = argv.includes('--tests')
    ? argv.slice(argv.indexOf('--tests') + 1).filter((a) => !a.startsWith('--'))
    : [];
  if (testsArg.length) {
    console.log(`== vitest ${testsArg.join(' ')}`);
    const tests = runVitest(testsArg);
    record['tests'] = { paths: testsArg, ...tests };
    ok &&= tests.exitCode === 0 && tests.failed === 0;
  }
  record['figures'] = steps;
}
record['ok'] = ok;
writeFileSync(path.join(outDir, 'cuda-record.json'), `${JSON.stringify(record, null, 2)}\n`);
console.log(JSON.stringify(record.figures ?? record, null, 1).slice(0, 6000));
process.exit(ok ? 0 : 1);
