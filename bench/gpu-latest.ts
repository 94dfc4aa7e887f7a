/**
 * The GPU record a reader checks first: bench/results/gpu-latest.json. Runs ON the GPU machine
 * (through scripts/device/run.sh) and measures, in one process and one run, GPU grains against CPU
 * grains on the same machine and against the floors a GPU path cannot beat. Every figure is checked
 * (answers, counters, a JS model); a step that fails is recorded with its error and fails the run.
 *
 *   RG_COMMIT=<sha> node --import tsx bench/gpu-latest.ts [--trials 5] [--skip vectorAdd,k2k,...]
 *       [--sanitizer $OUT/sanitizer.json] [--tests $OUT/vitest.json] [--sir $OUT/sir1M.json]
 *       [--chains bench/results/chains.json]   (bench/chains.ts's record: cpuChainHopsPerS, cudaChainHopsPerS)
 *       [--persistence $OUT/persistence.json]   (bench/gpu-persistence.ts's record, under persistence)
 *
 * Writes $OUT/gpu-latest.json; copy it to bench/results/ and commit it with the change it measures.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { GrainSystem } from '../packages/core/src/index.ts';
import { CpuBackend } from '../packages/cpu-backend/src/index.ts';
import { CudaBackend, CudaContext, probeCuda } from '../packages/cuda-backend/src/index.ts';
import { runLaunchSync, runPingPong } from '../packages/cuda-backend/test/selftest.ts';
import { Account } from '../examples/bank/grains.ts';
import { RELAY_ACTORS } from './grains.ts';
import { hopFloorRuns } from './lib/floors.ts';
import { loneAsks } from './lib/lone-ask.ts';
import { accountSystem, relaySystem } from './lib/systems.ts';
import { median, relayHop, relayWalks, trials, until } from '../scripts/gpu-measure.ts';
import { lineChart } from './svg.ts';

const argv = process.argv.slice(2);
const option = (n: string, d: string) => (argv.includes(n) ? (argv[argv.indexOf(n) + 1] ?? d) : d);
if (argv.includes('--help') || argv.includes('-h')) {
  console.log(
    readFileSync(new URL(import.meta.url), 'utf8')
      .split('\n')
      .slice(1, 11)
      .join('\n'),
  );
  process.exit(0);
}
const TRIALS = Number(option('--trials', '5'));
const skip = new Set(option('--skip', '').split(',').filter(Boolean));
const outDir = process.env['OUT'] ?? path.resolve('.device/out');
mkdirSync(outDir, { recursive: true });

const record: Record<string, unknown> = {
  commit:
    process.env['RG_COMMIT'] ??
    (spawnSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim() || 'unknown'),
  date: new Date().toISOString(),
  command: `node --import tsx bench/gpu-latest.ts ${argv.join(' ')}`.trim(),
};
const details: Record<string, unknown> = {};
let ok = true;
async function step(name: string, f: () => Promise<unknown> | unknown): Promise<void> {
  if (skip.has(name)) {
    details[name] = { skipped: 'named in --skip' };
    return;
  }
  console.log(`== ${name}`);
  const t0 = performance.now();
  try {
    details[name] = await f();
    console.log(
      `   ${JSON.stringify(details[name]).slice(0, 400)} (${((performance.now() - t0) / 1000).toFixed(1)} s)`,
    );
  } catch (e) {
    ok = false;
    details[name] = { error: String((e as Error)?.stack ?? e).slice(0, 2000) };
    console.error(e);
  }
}
const num = (name: string, key: string): number | null => {
  const d = details[name] as Record<string, unknown> | undefined;
  const v = d?.[key];
  return typeof v === 'number' && Number.isFinite(v) ? +v.toFixed(3) : null;
};

/** Two blocks bounce a word through device memory (release/acquire at gpu scope): the floor of a K2K hop. */
async function hopFloor(ctx: CudaContext): Promise<Record<string, unknown>> {
  const { hops, runs } = await hopFloorRuns(ctx, TRIALS);
  return {
    what:
      'one hop of a word between two blocks through device memory (st.release.gpu / ld.acquire.gpu spin), ' +
      'half a round trip, globaltimer',
    hops,
    hopNs: trials(runs),
  };
}

/** Asks one at a time, then 256 in flight over 64 actors, then host tells and bulk tells; all checked. */
async function hostPath(name: 'cpu' | 'cuda'): Promise<Record<string, unknown>> {
  const sys = accountSystem(name === 'cuda' ? new CudaBackend({ partitions: 4 }) : new CpuBackend(), name);
  await sys.start();
  try {
    const N = 10_000;
    const lat = await loneAsks(sys, N);
    const sorted = [...lat].sort((x, y) => x - y);
    const pct = (p: number) => sorted[Math.min(N - 1, Math.floor(p * N))]!;

    // 256 in flight over 64 actors (keys 1000..1063), every reply checked against a per-actor count.
    const pipelined: number[] = [];
    const perActor = new Float64Array(64);
    for (let t = 0; t < TRIALS; t++) {
      const total = 100_000;
      let sent = 0;
      let done = 0;
      const t0 = performance.now();
      await new Promise<void>((resolve, reject) => {
        const next = (): void => {
          if (sent >= total) return;
          const k = sent++ % 64;
          sys
            .grain(Account, 1000 + k)
            .deposit({ amount: 1 })
            .then((r) => {
              perActor[k]! += 1;
              if (r.balance > perActor[k]! + 256 || r.balance < 1)
                throw new Error(`pipelined: actor ${1000 + k} balance ${r.balance}`);
              if (++done === total) resolve();
              else next();
            })
            .catch(reject);
        };
        for (let i = 0; i < 256; i++) next();
      });
      pipelined.push(total / ((performance.now() - t0) / 1000));
    }
    for (let k = 0; k < 64; k++) {
      const b = (await sys.grain(Account, 1000 + k).balance({})).balance;
      if (b !== perActor[k]) throw new Error(`pipelined: actor ${1000 + k} balance ${b}, ${perActor[k]} deposits`);
    }

    // 1,000,000 tells to 1,024 actors through the public API, timed until the kernel processed the last.
    const tells: number[] = [];
    const refs = Array.from({ length: 1024 }, (_, k) => sys.grain(Account, 10_000 + k));
    for (let t = 0; t < TRIALS; t++) {
      const M = 1_000_000;
      const c0 = sys.counters(Account).processed;
      const t0 = performance.now();
      for (let i = 0; i < M; i++) refs[i & 1023]!.tell.deposit({ amount: 1 });
      await until(
        () => sys.counters(Account).processed - c0 >= M,
        60_000,
        () => `${sys.counters(Account).processed - c0} of ${M} tells processed`,
      );
      tells.push(M / ((performance.now() - t0) / 1000));
    }
    // Row i went to key (i & 1023): keys below M % 1024 got one more than the others.
    const share = (M: number, k: number) => Math.floor(M / 1024) + (k < M % 1024 ? 1 : 0);
    for (let k = 0; k < 1024; k += 101) {
      const b = (await refs[k]!.balance({})).balance;
      if (b !== TRIALS * share(1_000_000, k))
        throw new Error(`tells: actor ${10_000 + k} balance ${b}, want ${TRIALS * share(1_000_000, k)}`);
    }

    // Bulk tells (columns), where the system offers them.
    let bulk: Record<string, unknown> = { skipped: 'GrainSystem has no tellMany at this commit' };
    const tellMany = (sys as unknown as Record<string, unknown>)['tellMany'];
    if (typeof tellMany === 'function') {
      bulk = {
        what:
          'system.tellMany(Account, deposit, { key: Int32Array, amount: Float64Array }) of 1,000,000 rows to ' +
          '1,024 actors, timed until processed',
        perSecond: trials(await tellManyTrials(sys, 'tellMany')),
      };
    }
    // Bulk asks (columns, replies as columns): 100,000 rows over 1,024 actors, every balance checked.
    const bulkAsks: number[] = [];
    {
      const M = 100_000;
      const key = new Int32Array(M);
      for (let i = 0; i < M; i++) key[i] = 30_000 + (i & 1023);
      const amount = new Float64Array(M).fill(1);
      for (let t = 0; t < TRIALS; t++) {
        const t0 = performance.now();
        const r = await sys.askMany(Account, 'deposit', { key, amount });
        bulkAsks.push(M / ((performance.now() - t0) / 1000));
        // Row i is the (t * M/1024 + floor(i / 1024) + 1)-th deposit of 1 to its actor (M is a multiple of 1024 plus
        // 672).
        for (let i = 0; i < M; i += 997) {
          const want = t * share(M, i & 1023) + Math.floor(i / 1024) + 1;
          if (r.balance[i] !== want) throw new Error(`askMany: row ${i} balance ${r.balance[i]}, want ${want}`);
        }
      }
    }
    return {
      askManyPerS: {
        what:
          'await system.askMany(Account, deposit, { key: Int32Array, amount: Float64Array }) of 100,000 rows ' +
          'to 1,024 actors, replies as columns (sampled rows checked)',
        perSecond: trials(bulkAsks),
      },
      bulkAsks: median(bulkAsks),
      askUs: {
        p50: pct(0.5),
        p90: pct(0.9),
        p99: pct(0.99),
        min: sorted[0],
        n: N,
        what: 'await ref.deposit({amount:1}), one in flight, each balance checked',
      },
      pipelinedAsksPerS: trials(pipelined),
      hostTellsPerS: trials(tells),
      bulkTells: bulk,
      askP50Us: pct(0.5),
      askP99Us: pct(0.99),
      pipelined: median(pipelined),
      tells: median(tells),
      bulk: bulk['perSecond'] ? (bulk['perSecond'] as { median: number }).median : null,
    };
  } finally {
    await sys.shutdown();
  }
}

async function k2k(): Promise<Record<string, unknown>> {
  // 1024: with the batched ingress the kernel takes 122 registers a thread, so 3 blocks fit an SM and
  // 2048 partitions (513 blocks) no longer fit beside the SMs left free (CoResidencyError, measured).
  const partitions = 1024;
  const sys = relaySystem(new CudaBackend({ partitions, queueCapacity: 1024 }));
  await sys.start();
  try {
    const hop = await relayHop(sys);
    const model = new Uint32Array(RELAY_ACTORS);
    const runs: number[] = [];
    for (let t = 0; t < TRIALS; t++) runs.push((await relayWalks(sys, 16_384, 1000, model)).perSecond);
    // Throughput against concurrency: walks in flight (about walks/partitions messages a partition queue
    // holds at once; a worker warp runs up to 32 turns a round). Seeds through tellMany; 3 trials a point.
    const curve: Array<{ walks: number; perSecond: number; trials: ReturnType<typeof trials> }> = [];
    for (const walks of [4096, 16_384, 65_536, 262_144]) {
      const pts: number[] = [];
      for (let t = 0; t < 3; t++) pts.push((await relayWalks(sys, walks, 1000, model, 'tellMany')).perSecond);
      curve.push({ walks, perSecond: median(pts), trials: trials(pts) });
      console.log(`k2k curve: ${walks} walks: ${(median(pts) / 1e6).toFixed(0)} M msgs/s`);
    }
    return {
      partitions,
      hop,
      hopNs: hop.hopNs,
      walks: 16_384,
      steps: 1000,
      actors: RELAY_ACTORS,
      k2kPerS: trials(runs),
      perSecond: median(runs),
      curve,
    };
  } finally {
    await sys.shutdown();
  }
}

/**
 * tellMany of 1,000,000 rows to 1,024 actors against the kernel's host lanes (each an inbound ring with its
 * own ingress warp; 32 partitions): where the ingress, not the host's row writing, bounds bulk tells.
 */
async function bulkLanes(): Promise<Record<string, unknown>> {
  const points: Array<{ hostLanes: number; perSecond: number; trials: ReturnType<typeof trials> }> = [];
  for (const hostLanes of [4, 8, 16]) {
    const sys = accountSystem(new CudaBackend({ partitions: 32, hostLanes }), 'cuda');
    await sys.start();
    try {
      const runs = await tellManyTrials(sys, `bulkLanes ${hostLanes}`);
      points.push({ hostLanes, perSecond: median(runs), trials: trials(runs) });
      console.log(`tellMany with ${hostLanes} host lanes: ${(median(runs) / 1e6).toFixed(2)} M rows/s`);
    } finally {
      await sys.shutdown();
    }
  }
  return {
    what:
      'tellMany of 1,000,000 rows to 1,024 actors, CudaBackend({ partitions: 32, hostLanes }), timed until ' +
      'processed, balances checked',
    points,
  };
}

/**
 * TRIALS tellMany calls of 1,000,000 deposits of 1 to the 1,024 actors from key 20,000 (row i to
 * 20,000 + (i & 1023)) on a fresh system, each timed until the kernel processed the last row; then
 * sampled balances checked. Rows per second, one per trial.
 */
async function tellManyTrials(sys: GrainSystem, what: string): Promise<number[]> {
  const M = 1_000_000;
  const key = new Int32Array(M);
  for (let i = 0; i < M; i++) key[i] = 20_000 + (i & 1023);
  const amount = new Float64Array(M).fill(1);
  const runs: number[] = [];
  for (let t = 0; t < TRIALS; t++) {
    const c0 = sys.counters(Account).processed;
    const t0 = performance.now();
    await sys.tellMany(Account, 'deposit', { key, amount });
    await until(
      () => sys.counters(Account).processed - c0 >= M,
      60_000,
      () => `${what}: ${sys.counters(Account).processed - c0} of ${M} bulk tells processed`,
    );
    runs.push(M / ((performance.now() - t0) / 1000));
  }
  for (let k = 0; k < 1024; k += 101) {
    const b = (await sys.grain(Account, 20_000 + k).balance({})).balance;
    const want = TRIALS * (Math.floor(M / 1024) + (k < M % 1024 ? 1 : 0));
    if (b !== want) throw new Error(`${what}: actor ${20_000 + k} balance ${b}, want ${want}`);
  }
  return runs;
}

function vectorAdd(): Record<string, unknown> {
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'examples/vector-add/main.ts', '--backend', 'cuda', '--sizes', '10,1000000'],
    { encoding: 'utf8', timeout: 300_000 },
  );
  const rows = [
    ...(r.stdout ?? '').matchAll(
      new RegExp(
        String.raw`^\| ([\d,]+) \| [\d,]+ \| (\d+) \| [^|]+ \| ([\d.]+) µs \| ([\d.]+) \| ([\d.]+) µs \| ` +
          String.raw`([\d.]+) \| ([\d.]+) µs \| ([\d.]+) \| ([\d.]+) \| (\d+) \|$`,
        'gm',
      ),
    ),
  ].map((m) => ({
    elements: Number(m[1]!.replace(/,/g, '')),
    asks: Number(m[2]),
    perAskUs: Number(m[3]),
    mElementsPerS: Number(m[4]),
    serialPerAskUs: Number(m[5]),
    serialMElementsPerS: Number(m[6]),
    intoPerAskUs: Number(m[7]),
    intoMElementsPerS: Number(m[8]),
    intoSerialMElementsPerS: Number(m[9]),
    mismatches: Number(m[10]),
  }));
  if (r.status !== 0 || rows.length !== 2)
    throw new Error(
      `vector-add example: exit ${r.status}, ${rows.length} ` +
        `rows\n${(r.stdout ?? '').slice(-1500)}\n${(r.stderr ?? '').slice(-1500)}`,
    );
  return {
    command: 'node --import tsx examples/vector-add/main.ts --backend cuda --sizes 10,1000000',
    rows,
    vectorAdd10AskUs: rows[0]!.perAskUs,
    vectorAdd1MElementsPerS: rows[1]!.mElementsPerS * 1e6,
    vectorAdd1MOneAtATimeElementsPerS: rows[1]!.serialMElementsPerS * 1e6,
    vectorAdd1MIntoElementsPerS: rows[1]!.intoMElementsPerS * 1e6,
    vectorAdd1MIntoOneAtATimeElementsPerS: rows[1]!.intoSerialMElementsPerS * 1e6,
  };
}

const probe = await probeCuda();
if (!probe.ok) {
  record['error'] = `CUDA unavailable: ${probe.reason}`;
  ok = false;
} else {
  record['device'] =
    `${probe.device.name} (${probe.device.arch}, ${probe.device.multiprocessorCount} SMs), ` +
    `driver ${probe.driverVersionString}`;
  // Floors first: they load modules, which must not meet a running persistent kernel.
  const ctx = CudaContext.create();
  await step('pingPong', async () => {
    const r = await runPingPong(ctx, { count: 20_000, warmup: 2000 });
    return {
      what: 'one 32-bit word host → persistent kernel → host through pinned mapped memory',
      ...r.latency,
      p50Us: r.latency.p50Us,
    };
  });
  await step('launchSync', () => {
    const r = runLaunchSync(ctx, { count: 10_000 });
    return { what: 'cuLaunchKernel(empty) + cuStreamSynchronize per message', ...r.latency, p50Us: r.latency.p50Us };
  });
  await step('hopFloor', async () => {
    const r = await hopFloor(ctx);
    return { ...r, hopNs: (r.hopNs as { median: number }).median };
  });
  ctx.dispose();
  await step('cuda', () => hostPath('cuda'));
}
// The CPU backend on the same machine, in the same run (also where no GPU is found).
await step('cpu', () => hostPath('cpu'));
if (probe.ok) {
  await step('bulkLanes', bulkLanes);
  await step('k2k', k2k);
  await step('vectorAdd', vectorAdd);
}

/** bench/timers.ts's record (--backend cuda) as the figures the README table reads. */
function timersFigures(j: unknown): Record<string, unknown> | null {
  const t = j as {
    actors?: number;
    hz?: number;
    commit?: string;
    kernelGenerated?: { median?: { ticksPerS?: number; processCpuPct?: number } };
    hostSent?: { median?: { ticksPerS?: number } };
  } | null;
  const m = t?.kernelGenerated?.median;
  if (!t || !m || typeof m.ticksPerS !== 'number' || !t.actors || !t.hz) return j === null ? null : { unreadable: j };
  return {
    what:
      `${t.actors.toLocaleString('en-US')} actors × ${t.hz} Hz timers, ticks generated by the kernel ` +
      `(\`bench/timers.ts\`, at ${String(t.commit)})`,
    ticksPerS: m.ticksPerS,
    offeredPerS: t.actors * t.hz,
    hostCorePct: m.processCpuPct,
    ...(typeof t.hostSent?.median?.ticksPerS === 'number' ? { hostSentTicksPerS: t.hostSent.median.ticksPerS } : {}),
  };
}

/** bench/gpu-state.ts's record as the figures the README table reads. */
function gpuStateFigures(j: unknown): Record<string, unknown> | null {
  const g = j as {
    rows?: number;
    commit?: string;
    copyMs?: { median?: number };
    readDirtyMs?: { median?: number };
  } | null;
  if (!g || typeof g.copyMs?.median !== 'number') return j === null ? null : { unreadable: j };
  return {
    what:
      `device → host copy of ${(g.rows ?? 0).toLocaleString('en-US')} dirty 32-byte states ` +
      `(\`bench/gpu-state.ts\`, at ${String(g.commit)}; whole ` +
      `readDirty ${g.readDirtyMs?.median?.toFixed(2)} ms)`,
    copyMs: g.copyMs.median,
  };
}

/**
 * bench/gpu-persistence.ts's record (--persistence): each figure as { cuda, cpu } (issue 30's targets name the cuda
 * one).
 */
function persistenceFigures(r: unknown): unknown {
  if (!r || typeof r !== 'object') return null;
  const rec = r as Record<string, Record<string, number> | undefined>;
  const pair = (f: string) => ({ cuda: rec['cuda']?.[f] ?? null, cpu: rec['cpu']?.[f] ?? null });
  return {
    keys: (r as { keys?: number }).keys ?? null,
    firstMessageUs: { p50: pair('firstMessageUsP50'), p90: pair('firstMessageUsP90') },
    coldActivationsPerS: pair('coldActivationsPerS'),
    preloadPerS: pair('preloadPerS'),
    flush1MS: pair('flushS'),
    idle10M: (r as { idle10M?: unknown }).idle10M ?? null,
    errors: {
      cuda: (rec['cuda'] as { error?: string } | undefined)?.error ?? null,
      cpu: (rec['cpu'] as { error?: string } | undefined)?.error ?? null,
    },
  };
}

/** bench/chains.ts's record (--chains): one-token chain hops/s by ring size for one backend (issue 37). */
function chainFigures(j: unknown, backend: 'cpu' | 'cuda'): Record<string, number | string> | null {
  const c = j as {
    byBackend?: Record<string, Record<string, { one?: { hopsPerS?: number }; skipped?: string }>>;
    commit?: string;
    threads?: number;
  } | null;
  const by = c?.byBackend?.[backend];
  if (!c || !by) return j === null ? null : { unreadable: JSON.stringify(j).slice(0, 200) };
  const out: Record<string, number | string> = {
    at: String(c.commit),
    ...(backend === 'cpu' ? { threads: Number(c.threads) } : {}),
  };
  for (const [actors, f] of Object.entries(by)) out[actors] = f.one?.hopsPerS ?? `skipped: ${f.skipped}`;
  return out;
}

const readJson = (flag: string): unknown => {
  const f = option(flag, '');
  if (!f) return null;
  if (!existsSync(f)) return { missing: f };
  return JSON.parse(readFileSync(f, 'utf8'));
};
Object.assign(record, {
  askP50Us: num('cuda', 'askP50Us'),
  askP99Us: num('cuda', 'askP99Us'),
  pingPongFloorP50Us: num('pingPong', 'p50Us'),
  launchSyncP50Us: num('launchSync', 'p50Us'),
  pipelinedAsksPerS: num('cuda', 'pipelined'),
  hostTellsPerS: num('cuda', 'tells'),
  bulkTellsPerS: num('cuda', 'bulk'),
  askManyPerS: num('cuda', 'bulkAsks'),
  cpuAskManyPerS: num('cpu', 'bulkAsks'),
  cpuAskP50Us: num('cpu', 'askP50Us'),
  cpuPipelinedAsksPerS: num('cpu', 'pipelined'),
  cpuHostTellsPerS: num('cpu', 'tells'),
  cpuBulkTellsPerS: num('cpu', 'bulk'),
  k2kHopNs: num('k2k', 'hopNs'),
  k2kHopFloorNs: num('hopFloor', 'hopNs'),
  k2kPerS: num('k2k', 'perSecond'),
  bulkTellsPerSByHostLanes:
    (
      (details['bulkLanes'] as { points?: Array<{ hostLanes: number; perSecond: number }> } | undefined)?.points ?? null
    )?.map((p) => ({ hostLanes: p.hostLanes, perSecond: p.perSecond })) ?? null,
  k2kCurve:
    ((details['k2k'] as { curve?: Array<{ walks: number; perSecond: number }> } | undefined)?.curve ?? null)?.map(
      (c) => ({ walks: c.walks, perSecond: c.perSecond }),
    ) ?? null,
  vectorAdd1MElementsPerS: num('vectorAdd', 'vectorAdd1MElementsPerS'),
  vectorAdd1MOneAtATimeElementsPerS: num('vectorAdd', 'vectorAdd1MOneAtATimeElementsPerS'),
  vectorAdd1MIntoElementsPerS: num('vectorAdd', 'vectorAdd1MIntoElementsPerS'),
  vectorAdd1MIntoOneAtATimeElementsPerS: num('vectorAdd', 'vectorAdd1MIntoOneAtATimeElementsPerS'),
  vectorAdd10AskUs: num('vectorAdd', 'vectorAdd10AskUs'),
  sanitizer: readJson('--sanitizer'),
  tests: readJson('--tests'),
  sir1M: readJson('--sir'),
  timers: timersFigures(readJson('--timers')),
  gpuState: gpuStateFigures(readJson('--gpu-state')),
  cpuChainHopsPerS: chainFigures(readJson('--chains'), 'cpu'),
  cudaChainHopsPerS: chainFigures(readJson('--chains'), 'cuda'),
  // bench/gpu-persistence.ts's record (issue 30): firstMessageUs (cuda beside cpu), coldActivationsPerS, preloadPerS,
  // flushS; conformanceSkips from the tests.
  persistence: persistenceFigures(readJson('--persistence')),
  trials: TRIALS,
  ok,
  details,
});
writeFileSync(path.join(outDir, 'gpu-latest.json'), `${JSON.stringify(record, null, 2)}\n`);
const curve = record['k2kCurve'] as Array<{ walks: number; perSecond: number }> | null;
if (curve?.length) {
  writeFileSync(
    path.join(outDir, 'k2k-curve.svg'),
    lineChart({
      title: `K2K throughput over ${RELAY_ACTORS.toLocaleString('en-US')} actors (cuda, ${String(record['commit'])})`,
      xLabel: 'walks in flight',
      yLabel: 'M msgs/s',
      logX: true,
      series: [{ name: 'cuda', points: curve.map((c) => [c.walks, c.perSecond / 1e6] as const) }],
    }),
  );
}
const { details: _d, ...head } = record;
console.log(JSON.stringify(head, null, 1).slice(0, 5000));
process.exit(ok ? 0 : 1);
