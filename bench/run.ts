/**
 * `pnpm bench` — CPU benchmarks, side by side in one run:
 *   Ringgrain CPU backend (ask round trip, one-way tell throughput, idle CPU of a parked kernel)
 *   vs (a) raw worker_threads postMessage echo and (b) Piscina, both running the same Echo handler methods.
 * Plus an in-process breakdown of the per-message work (encode, ring publish/peek, decode) on one thread.
 *
 * Each system is measured --trials times (default 5); the tables show the median trial and the spread, and
 * targets are judged on the median. A plain run writes bench/results/local/<stamp>.{json,md} and its charts
 * under bench/results/local/charts-<stamp>/ (git-ignored) and leaves tracked files alone; --record also
 * updates bench/results/cpu-latest.{json,md} and bench/results/charts/. Options: --quick (fewer samples,
 * 3 trials), --trials N, --rtt N, --tells N, --record, --host-path (only the host path's step table:
 * bench/host-path.ts).
 */
process.env['RINGGRAIN_LOG'] ??= 'warn';

import { mkdirSync, writeFileSync } from 'node:fs';
import { median } from './trials.ts';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import * as hdr from 'hdr-histogram-js';
import { Piscina } from 'piscina';
import { GrainSystem, SLOT_HEADER_SIZE } from '@ringgrain/core';
import {
  Reader,
  Ring,
  RingConsumer,
  RingProducer,
  Writer,
  compileDecoder,
  compileEncoder,
} from '@ringgrain/core/backend';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { Echo } from './grains.ts';
import { barChart, histogramChart, lineChart } from './svg.ts';
import { commitOf } from './record.ts';
import { hostPathSteps } from './host-path.ts';

const argv = process.argv.slice(2).filter((a) => a !== '--');
const flag = (name: string, def: number) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : def;
};
const QUICK = argv.includes('--quick');
const RECORD = argv.includes('--record');
const RTT_N = flag('rtt', QUICK ? 3000 : 20_000);
const RTT_WARM = Math.min(2000, RTT_N);
const TELL_N = flag('tells', QUICK ? 50_000 : 300_000);
const IDLE_MS = QUICK ? 1000 : 2000;
const TRIALS = Math.max(1, flag('trials', QUICK ? 3 : 5));

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const nowNs = () => process.hrtime.bigint();
const log = (s: string) => process.stderr.write(`${s}\n`);

interface Latency {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  min: number;
  max: number;
  mean: number;
  /** Sorted samples in µs (for the charts). */
  samples: Float64Array;
}
interface SystemResult {
  name: string;
  rtt: Latency;
  /** One-way messages per second, first send until the consumer processed the last one. */
  throughput: number;
  /** How fast the host alone can issue sends (messages/s), where it differs from the above. */
  sendRate?: number;
  /** Asks answered per second with PIPE_IN_FLIGHT in flight over PIPE_ACTORS actors (Ringgrain only). */
  pipelined?: number;
  /** `system.tellMany` rows per second, BULK_N rows to BULK_ACTORS actors, until processed (Ringgrain only). */
  bulk?: number;
  /** CPU time of the whole process while idle, as % of one core. */
  idleCpuPct: number;
  notes: string[];
  /** Spread over the trials (min, max), when there were several. */
  spread?: { trials: number; rttP50: [number, number]; throughput: [number, number] };
}

/**
 * Runs one system's measurement TRIALS times: the trial with the median RTT p50 gives the latency figures, medians the
 * rest.
 */
async function trialsOf(f: () => Promise<SystemResult>): Promise<SystemResult> {
  const runs: SystemResult[] = [];
  for (let t = 1; t <= TRIALS; t++) {
    log(`-- trial ${t}/${TRIALS}`);
    runs.push(await f());
  }
  const byP50 = [...runs].sort((a, b) => a.rtt.p50 - b.rtt.p50);
  const m = byP50[(byP50.length - 1) >> 1]!;
  const p50s = runs.map((r) => r.rtt.p50);
  const tps = runs.map((r) => r.throughput);
  const sendRates = runs.flatMap((r) => (r.sendRate === undefined ? [] : [r.sendRate]));
  const pipes = runs.flatMap((r) => (r.pipelined === undefined ? [] : [r.pipelined]));
  const bulks = runs.flatMap((r) => (r.bulk === undefined ? [] : [r.bulk]));
  return {
    ...m,
    throughput: median(tps),
    ...(sendRates.length ? { sendRate: median(sendRates) } : {}),
    ...(pipes.length ? { pipelined: median(pipes) } : {}),
    ...(bulks.length ? { bulk: median(bulks) } : {}),
    idleCpuPct: median(runs.map((r) => r.idleCpuPct)),
    notes: [
      ...m.notes,
      `median of ${TRIALS} trials: RTT ` +
        `p50 ${Math.min(...p50s).toFixed(2)}–${Math.max(...p50s).toFixed(2)} µs, ` +
        `throughput ${Math.round(Math.min(...tps)).toLocaleString('en-US')}` +
        `–${Math.round(Math.max(...tps)).toLocaleString('en-US')} msgs/s` +
        (bulks.length
          ? `, tellMany ${Math.round(Math.min(...bulks)).toLocaleString('en-US')}` +
            `–${Math.round(Math.max(...bulks)).toLocaleString('en-US')} rows/s`
          : ''),
    ],
    spread: {
      trials: TRIALS,
      rttP50: [Math.min(...p50s), Math.max(...p50s)],
      throughput: [Math.min(...tps), Math.max(...tps)],
    },
  };
}

/** Latencies in ns go into an HDR histogram (3 significant digits); reported in µs. */
function latency(ns: Float64Array): Latency {
  const h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60e9, numberOfSignificantValueDigits: 3 });
  for (const v of ns) h.recordValue(Math.max(1, Math.round(v)));
  const us = (v: number) => v / 1000;
  const sorted = Float64Array.from(ns, (v) => v / 1000).sort();
  const out: Latency = {
    n: ns.length,
    p50: us(h.getValueAtPercentile(50)),
    p90: us(h.getValueAtPercentile(90)),
    p99: us(h.getValueAtPercentile(99)),
    p999: us(h.getValueAtPercentile(99.9)),
    min: us(h.minNonZeroValue),
    max: us(h.maxValue),
    mean: us(h.mean),
    samples: sorted,
  };
  h.destroy();
  return out;
}

/** CPU of the whole process (all threads) over `ms` of idling, in % of one core. */
async function idleCpu(ms: number): Promise<number> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await sleep(ms);
  const c = process.cpuUsage(c0);
  return ((c.user + c.system) / 1000 / (performance.now() - t0)) * 100;
}

const PIPE_IN_FLIGHT = 256;
const PIPE_ACTORS = 64;
const BULK_N = QUICK ? 200_000 : 1_000_000;
const BULK_ACTORS = 1024;

/**
 * Asks answered per second with PIPE_IN_FLIGHT callers each awaiting its ask before the next (round robin over
 * PIPE_ACTORS actors).
 */
async function pipelinedAsks(ask: (actor: number, i: number) => Promise<unknown>): Promise<number> {
  const n = QUICK ? 50_000 : 300_000;
  let next = 0;
  const caller = async () => {
    while (next < n) {
      const i = next++;
      await ask(i % PIPE_ACTORS, i);
    }
  };
  await Promise.all(Array.from({ length: PIPE_IN_FLIGHT }, caller)); // warm-up
  next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: PIPE_IN_FLIGHT }, caller));
  return n / ((performance.now() - t0) / 1000);
}

async function measureRtt(one: (i: number) => Promise<unknown>): Promise<Latency> {
  for (let i = 0; i < RTT_WARM; i++) await one(i);
  const ns = new Float64Array(RTT_N);
  for (let i = 0; i < RTT_N; i++) {
    const t0 = nowNs();
    await one(i);
    ns[i] = Number(nowNs() - t0);
  }
  return latency(ns);
}

// ---------------------------------------------------------------------------------------------------
async function benchRinggrain(): Promise<SystemResult> {
  log('ringgrain cpu: starting');
  const system = new GrainSystem({ backends: { cpu: new CpuBackend() } });
  system.register(Echo, { placement: 'cpu' });
  await system.start();
  const ref = system.grain(Echo, 1);
  log('ringgrain cpu: ask round trips');
  const rtt = await measureRtt((i) => ref.ping({ x: i }));

  log('ringgrain cpu: tell throughput');
  const counters = () => system.counters(Echo);
  const until = async (n: number) => {
    while (counters().processed < n) await new Promise((r) => setImmediate(r));
  };
  // Warm-up.
  let base = counters().processed;
  for (let i = 0; i < 100_000; i++) {
    const p = ref.tell.hit({ x: i });
    if (p) await p;
  }
  await until(base + 100_000);
  base = counters().processed;
  let backpressured = 0;
  const t0 = performance.now();
  for (let i = 0; i < TELL_N; i++) {
    const p = ref.tell.hit({ x: i });
    if (p) {
      backpressured++;
      await p;
    }
  }
  const tSent = performance.now();
  await until(base + TELL_N);
  const t1 = performance.now();
  const throughput = TELL_N / ((t1 - t0) / 1000);
  const sendRate = TELL_N / ((tSent - t0) / 1000);

  log(`ringgrain cpu: tellMany of ${BULK_N} rows`);
  const bulk = await bulkTells(system);

  log(`ringgrain cpu: asks with ${PIPE_IN_FLIGHT} in flight`);
  const pipelined = await pipelinedAsks((a, i) => system.grain(Echo, a).ping({ x: i }));

  log('ringgrain cpu: idle kernel CPU');
  await sleep(300);
  const idleCpuPct = await idleCpu(IDLE_MS);
  const c = counters();
  await system.shutdown();
  return {
    name: 'Ringgrain CPU backend',
    rtt,
    throughput,
    sendRate,
    pipelined,
    bulk: bulk.perS,
    idleCpuPct,
    notes: [
      `tellMany: ${bulk.note}`,
      `${backpressured} of ${TELL_N} tells met a full ring and waited (backpressure)`,
      `kernel counters: processed ${c.processed}, handler errors ${c.handlerErrors}`,
    ],
  };
}

/**
 * `system.tellMany(Echo, 'hit', { key, x })` of BULK_N rows over BULK_ACTORS actors, from the call until the
 * kernel processed the last row (one warm-up first); every actor's hits and sum are checked afterwards.
 */
async function bulkTells(system: GrainSystem): Promise<{ perS: number; note: string }> {
  const key = new Int32Array(BULK_N).map((_, i) => 100_000 + (i % BULK_ACTORS));
  const x = new Int32Array(BULK_N).map((_, i) => (i >> 10) & 7);
  const run = async () => {
    const base = system.counters(Echo).processed;
    const t0 = performance.now();
    if (system.tellMany(Echo, 'hit', { key, x }) !== BULK_N) throw new Error('tellMany accepted fewer rows than sent');
    while (system.counters(Echo).processed < base + BULK_N) await new Promise((r) => setImmediate(r));
    return BULK_N / ((performance.now() - t0) / 1000);
  };
  await run();
  const perS = await run();
  await system.idle();
  // Two runs: every actor got its rows twice; its sum is the x of its rows, twice.
  for (const a of [0, 1, BULK_ACTORS - 1]) {
    let sum = 0;
    let per = 0;
    for (let i = a; i < BULK_N; i += BULK_ACTORS, per++) sum += x[i]!;
    const st = (await system.kernel(Echo).inspect(100_000 + a)) as { hits: number; sum: number } | undefined;
    if (!st || st.hits !== 2 * per || st.sum !== 2 * sum)
      throw new Error(
        `tellMany: actor ${100_000 + a} holds ${JSON.stringify(st)}, expected hits ${2 * per}, sum ${2 * sum}`,
      );
  }
  return { perS, note: `${BULK_N} rows to ${BULK_ACTORS} actors, second of two runs, actors' states checked` };
}

async function benchRawWorker(): Promise<SystemResult> {
  log('raw worker_threads: starting');
  const w = new Worker(here('./workers/raw-echo.mjs'));
  let resolve: ((v: unknown) => void) | undefined;
  w.on('message', (m) => {
    const r = resolve;
    resolve = undefined;
    r?.(m);
  });
  const call = (m: unknown) =>
    new Promise((r) => {
      resolve = r;
      w.postMessage(m);
    });
  log('raw worker_threads: round trips');
  const rtt = await measureRtt((i) => call({ t: 0, x: i }));
  log('raw worker_threads: one-way throughput');
  await call({ t: 2, n: 20_000 });
  let done = new Promise((r) => (resolve = r));
  for (let i = 0; i < 20_000; i++) w.postMessage({ t: 1, x: i });
  await done;
  await call({ t: 2, n: TELL_N });
  done = new Promise((r) => (resolve = r));
  const t0 = performance.now();
  for (let i = 0; i < TELL_N; i++) w.postMessage({ t: 1, x: i });
  const tSent = performance.now();
  await done;
  const t1 = performance.now();
  log('raw worker_threads: idle CPU');
  await sleep(300);
  const idleCpuPct = await idleCpu(IDLE_MS);
  await w.terminate();
  return {
    name: 'worker_threads postMessage',
    rtt,
    throughput: TELL_N / ((t1 - t0) / 1000),
    sendRate: TELL_N / ((tSent - t0) / 1000),
    idleCpuPct,
    notes: [],
  };
}

async function benchPiscina(): Promise<SystemResult> {
  log('piscina: starting');
  const pool = new Piscina({
    filename: here('./workers/piscina-echo.mjs'),
    minThreads: 1,
    maxThreads: 1,
    idleTimeout: 60_000,
  });
  log('piscina: round trips');
  const rtt = await measureRtt((i) => pool.run({ t: 0, x: i }));
  log('piscina: task throughput');
  const window = 1024;
  const pump = async (n: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: window }, async () => {
        for (let i = next++; i < n; i = next++) await pool.run({ t: 1, x: i });
      }),
    );
  };
  await pump(20_000);
  const n = Math.min(TELL_N, QUICK ? 50_000 : 200_000);
  const t0 = performance.now();
  await pump(n);
  const t1 = performance.now();
  log('piscina: idle CPU');
  await sleep(300);
  const idleCpuPct = await idleCpu(IDLE_MS);
  await pool.destroy();
  return {
    name: 'Piscina (1 thread)',
    rtt,
    throughput: n / ((t1 - t0) / 1000),
    idleCpuPct,
    notes: [`${n} tasks, ${window} in flight; a task always answers (no one-way mode)`],
  };
}

/** One thread, no workers: what each step of a message costs (encode, publish, peek, decode). */
function breakdown(): Record<string, number> {
  const schema = Echo.grain.methodByName.get('ping')!.request;
  const encode = compileEncoder(schema);
  const decode = compileDecoder(schema);
  const slotSize = 256;
  const cap = 1024;
  const sab = new SharedArrayBuffer(1 << 20);
  const ring = Ring.format(sab, 0, cap, slotSize);
  const prod = new RingProducer(ring);
  const cons = new RingConsumer(ring);
  const w = new Writer(ring.u8);
  const r = new Reader(ring.u8);
  const N = 2_000_000;
  const msg = { x: 7 };
  const time = (fn: () => void) => {
    for (let i = 0; i < 200_000; i++) fn();
    const t0 = performance.now();
    for (let i = 0; i < N; i++) fn();
    return ((performance.now() - t0) * 1e6) / N;
  };
  const slot0 = ring.slotAt(0);
  const encodeNs = time(() => encode(msg, w.reset(slot0 + SLOT_HEADER_SIZE, slot0 + slotSize)));
  const len = w.pos - (slot0 + SLOT_HEADER_SIZE);
  const decodeNs = time(() => decode(r.reset(slot0 + SLOT_HEADER_SIZE, slot0 + SLOT_HEADER_SIZE + len), ''));
  const zodNs = time(() => schema.zod.safeParse(msg));
  const ringNs = time(() => {
    const s = prod.claim();
    prod.publish(s);
    cons.peek();
    cons.release();
  });
  const fullNs = time(() => {
    const s = prod.claim();
    encode(msg, w.reset(s + SLOT_HEADER_SIZE, s + slotSize));
    prod.publish(s);
    const c = cons.peek();
    decode(r.reset(c + SLOT_HEADER_SIZE, c + SLOT_HEADER_SIZE + len), '');
    cons.release();
  });
  const objNs = time(() => {
    const o = { x: msg.x };
    if (o.x !== 7) throw new Error();
  });
  const n = 200_000;
  const ts = new SharedArrayBuffer(64);
  const words = new Int32Array(ts);
  const notifyNs = time(() => Atomics.notify(words, 0));
  const addNs = time(() => Atomics.add(words, 1, 1));
  void n;
  return {
    encodeNs,
    decodeNs,
    zodSafeParseNs: zodNs,
    ringClaimPublishPeekReleaseNs: ringNs,
    encodeRingDecodeNs: fullNs,
    plainObjectNs: objNs,
    atomicsNotifyNoWaiterNs: notifyNs,
    atomicsAddNs: addNs,
  };
}

/**
 * Host cost of the public API per message (issue target ≤ 200 ns): `ref.tell.*` and `tellMany` rows into
 * a ring with room, the kernel paused so nothing else runs; medians of 5 runs after two warm-ups. The
 * ring (2^19 slots: a run writes 2 × 200,000) is written over completely by the warm-ups, so the runs measure the
 * sends, not the
 * first touch of the ring's pages (a fresh page fault every few slots: 4–10× the send itself here).
 */
async function hostCost(): Promise<Record<string, number>> {
  const n = QUICK ? 50_000 : 200_000;
  const sys = new GrainSystem({ backends: { cpu: new CpuBackend() }, logLevel: 'warn', handleSignals: false }).register(
    Echo,
    { placement: 'cpu', ringCapacity: 1 << 19, maxActors: 4096 },
  );
  await sys.start();
  const k = sys.kernel(Echo);
  const refs = Array.from({ length: 1024 }, (_, i) => sys.grain(Echo, i));
  const key = new Int32Array(n).map((_, i) => i & 1023);
  const x = new Int32Array(n).fill(7);
  const tell: number[] = [];
  const bulk: number[] = [];
  try {
    for (let t = 0; t < 7; t++) {
      await k.deactivate();
      let t0 = performance.now();
      for (let i = 0; i < n; i++) refs[i & 1023]!.tell.hit({ x: 7 });
      const a = ((performance.now() - t0) * 1e6) / n;
      t0 = performance.now();
      sys.tellMany(Echo, 'hit', { key, x });
      const b = ((performance.now() - t0) * 1e6) / n;
      if (t > 1) {
        tell.push(a);
        bulk.push(b);
      }
      await k.activate();
      await sys.idle();
    }
  } finally {
    await sys.shutdown();
  }
  return { apiTellNs: median(tell), apiTellManyRowNs: median(bulk) };
}

// ---------------------------------------------------------------------------------------------------
if (argv.includes('--host-path')) {
  // Only the host path's step table (one thread, and the public API into a paused kernel): quick, and
  // what a change to encoding, claiming or publishing moves.
  log('host path steps');
  const steps = { ...hostPathSteps(), ...breakdown(), ...(await hostCost()) };
  const lines = [
    '# Host path, step by step (ns per message, one thread; median of 5 runs)',
    '',
    `${new Date().toISOString()} · commit ${commitOf()} · Node ${process.version} · ${os.cpus().length} ` +
      `× ${os.cpus()[0]?.model ?? 'unknown'} · load average (1 min) ${os.loadavg()[0]!.toFixed(2)}`,
    '',
    '| step | ns |',
    '|---|---:|',
  ];
  for (const [k, v] of Object.entries(steps)) lines.push(`| ${k} | ${v.toFixed(1)} |`);
  process.stdout.write(lines.join('\n') + '\n');
  process.exit(0);
}
// Issue 12's CPU targets (2-core development machine): ask p50 ≤ 1.5 µs, tells ≥ 5 M/s, tellMany ≥ 20 M/s, a tell's
// host cost ≤ 200 ns.
const TARGET = { p50us: 1.5, tellPerS: 5e6, bulkPerS: 20e6, apiTellNs: 200, rttRatio: 25, tputRatio: 4 };
const tAll = performance.now();
const loadBefore = os.loadavg()[0]!;
const results: SystemResult[] = [];
log(`== Ringgrain CPU backend (${TRIALS} trials)`);
results.push(await trialsOf(benchRinggrain));
log(`== raw worker_threads postMessage (${TRIALS} trials)`);
results.push(await trialsOf(benchRawWorker));
log(`== Piscina (${TRIALS} trials)`);
results.push(await trialsOf(benchPiscina));
log('in-process breakdown');
const parts = { ...breakdown(), ...(await hostCost()) };
log('idle baseline (no workers)');
const baselineIdle = await idleCpu(IDLE_MS);
const elapsed = (performance.now() - tAll) / 1000;

const [ours, raw, pisc] = results as [SystemResult, SystemResult, SystemResult];
const f1 = (v: number) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
const kps = (v: number) => `${(v / 1000).toLocaleString('en-US', { maximumFractionDigits: 0 })} K/s`;
const ratio = (x: number) => `${x >= 10 ? x.toFixed(0) : x.toFixed(2)}×`;
const commit = commitOf();
const env = {
  loadavg1mBefore: Number(loadBefore.toFixed(2)),
  loadavg1mAfter: Number(os.loadavg()[0]!.toFixed(2)),
  date: new Date().toISOString(),
  commit,
  node: process.version,
  cpus: os.cpus().length,
  cpu: os.cpus()[0]?.model ?? 'unknown',
  platform: `${os.platform()} ${os.release()}`,
  rttSamples: RTT_N,
  tells: TELL_N,
  seconds: Number(elapsed.toFixed(1)),
};

const md: string[] = [];
md.push('# Ringgrain CPU benchmark', '');
md.push(
  `${env.date} · commit ${env.commit} · Node ${env.node} · ${env.cpus} × ${env.cpu} · ${env.platform} · ` +
    `load average (1 min) ${env.loadavg1mBefore} before, ${env.loadavg1mAfter} after`,
  '',
);
if (env.loadavg1mBefore > 0.5 * env.cpus)
  md.push(
    `> **Warning**: the machine was busy when the run started (load ${env.loadavg1mBefore} on ${env.cpus} ` +
      'CPUs); spin-based latencies suffer most. Re-run on an idle machine before comparing.',
    '',
  );
md.push(
  `Median of ${TRIALS} trials per system (spread in the notes; targets judged on the median). Small ` +
    `messages (\`{ x: i32 }\`), one kernel / one worker thread each. Round trip: ${RTT_N} sequential asks ` +
    `after ${RTT_WARM} warm-up, µs. Throughput: ${TELL_N} one-way messages, first send until the consumer ` +
    `processed the last. Idle: CPU of the whole process over ${IDLE_MS / 1000} s while nothing is sent (% of ` +
    `one core; the process with no workers idles at ${baselineIdle.toFixed(2)} %).`,
  '',
);
md.push(
  '| system | RTT p50 | p90 | p99 | p99.9 | min | throughput | idle CPU | RTT p50 vs ours | throughput vs ours |',
);
md.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of results) {
  const vs =
    r === ours
      ? '—'
      : 'ours ' +
        (ours.rtt.p50 <= r.rtt.p50
          ? `${ratio(r.rtt.p50 / ours.rtt.p50)} lower`
          : `${ratio(ours.rtt.p50 / r.rtt.p50)} HIGHER`);
  const tv = r === ours ? '—' : `ours ${ratio(ours.throughput / r.throughput)}`;
  md.push(
    `| ${r.name} | ${f1(r.rtt.p50)} µs | ${f1(r.rtt.p90)} µs | ${f1(r.rtt.p99)} µs | ${f1(r.rtt.p999)} µs ` +
      `| ${f1(r.rtt.min)} µs | ${kps(r.throughput)} | ${r.idleCpuPct.toFixed(2)} % | ${vs} | ${tv} |`,
  );
}
md.push('', '## Against the targets', '');
md.push('| target | measured | verdict |', '|---|---:|---|');
const verdict = (ok: boolean, miss: string) => (ok ? 'met' : `missed: ${miss}`);
md.push(
  `| ask round trip p50 ≤ ${TARGET.p50us} µs | ${f1(ours.rtt.p50)} µs ` +
    `| ${verdict(ours.rtt.p50 <= TARGET.p50us, `${ratio(ours.rtt.p50 / TARGET.p50us)} too slow`)} |`,
);
md.push(
  `| tell throughput ≥ ${TARGET.tellPerS / 1e6} M msgs/s per kernel | ${kps(ours.throughput)} ` +
    `| ${verdict(ours.throughput >= TARGET.tellPerS, `${ratio(TARGET.tellPerS / ours.throughput)} short`)} |`,
);
md.push(
  `| tellMany ≥ ${TARGET.bulkPerS / 1e6} M rows/s, until processed | ${kps(ours.bulk ?? 0)} ` +
    `| ${verdict((ours.bulk ?? 0) >= TARGET.bulkPerS, `${ratio(TARGET.bulkPerS / (ours.bulk ?? 1))} short`)} |`,
);
md.push(
  `| host cost of a tell ≤ ${TARGET.apiTellNs} ns | ${f1(parts['apiTellNs'] ?? NaN)} ns ` +
    '| ' +
    verdict(
      (parts['apiTellNs'] ?? Infinity) <= TARGET.apiTellNs,
      `${ratio((parts['apiTellNs'] ?? 0) / TARGET.apiTellNs)} too slow`,
    ) +
    ' |',
);
const rttX = raw.rtt.p50 / ours.rtt.p50;
const tputX = ours.throughput / raw.throughput;
md.push(
  `| round trip ≥ ${TARGET.rttRatio}× lower than postMessage | ${ratio(rttX)} ` +
    `| ${verdict(rttX >= TARGET.rttRatio, `${ratio(TARGET.rttRatio / rttX)} short of the ratio`)} |`,
);
md.push(
  `| throughput ≥ ${TARGET.tputRatio}× postMessage | ${ratio(tputX)} ` +
    `| ${verdict(tputX >= TARGET.tputRatio, `${ratio(TARGET.tputRatio / tputX)} short of the ratio`)} |`,
);
md.push('', '## Where the time goes (one thread, no workers, ns per message)', '');
md.push('| step | ns |', '|---|---:|');
for (const [k, v] of Object.entries(parts)) md.push(`| ${k} | ${v.toFixed(1)} |`);
md.push(
  '',
  `Bulk tells: \`system.tellMany\` of ${BULK_N.toLocaleString('en-US')} rows to ${BULK_ACTORS} actors, ` +
    `call until processed: ${kps(ours.bulk ?? 0)} (${ratio((ours.bulk ?? 0) / ours.throughput)} the ` +
    'one-by-one tells above).',
);
md.push(
  '',
  `Host send rate alone (tell loop, not waiting for the consumer): Ringgrain ${kps(ours.sendRate ?? 0)}, ` +
    `postMessage ${kps(raw.sendRate ?? 0)}.`,
);
md.push(
  '',
  `Asks with ${PIPE_IN_FLIGHT} in flight over ${PIPE_ACTORS} actors (each caller awaits its reply before ` +
    `the next ask): Ringgrain ${kps(ours.pipelined ?? 0)} (Piscina's throughput above is tasks with 1024 in ` +
    'flight).',
);
md.push('', '## Notes', '');
for (const r of results) for (const n of r.notes) md.push(`- ${r.name}: ${n}`);
md.push(`- total bench time ${env.seconds} s`);
md.push(
  '',
  '![latency CDF](charts/cpu-latency-cdf.svg)',
  '![latency histogram](charts/cpu-latency-histogram.svg)',
  '![throughput](charts/cpu-throughput.svg)',
  '',
);
const mdText = md.join('\n') + '\n';

const json = {
  env,
  targets: TARGET,
  results: results.map((r) => ({ ...r, rtt: { ...r.rtt, samples: undefined } })),
  ratios: {
    rttLowerThanPostMessage: rttX,
    rttLowerThanPiscina: pisc.rtt.p50 / ours.rtt.p50,
    throughputVsPostMessage: tputX,
    throughputVsPiscina: ours.throughput / pisc.throughput,
  },
  breakdownNs: parts,
  baselineIdleCpuPct: baselineIdle,
};

const resultsDir = here('./results/');
const stamp = env.date.replace(/[:.]/g, '-');
// A plain run leaves tracked files alone: its report and charts go to the git-ignored local/ folder.
const chartsRel = RECORD ? 'charts' : `local/charts-${stamp}`;
mkdirSync(`${resultsDir}local`, { recursive: true });
mkdirSync(`${resultsDir}${chartsRel}`, { recursive: true });
const localMd = RECORD
  ? mdText.replace(/\(charts\//g, '(../charts/')
  : mdText.replace(/\(charts\//g, `(charts-${stamp}/`);
writeFileSync(`${resultsDir}local/${stamp}.json`, JSON.stringify(json, null, 2) + '\n');
writeFileSync(`${resultsDir}local/${stamp}.md`, localMd);
if (RECORD) {
  writeFileSync(`${resultsDir}cpu-latest.json`, JSON.stringify(json, null, 2) + '\n');
  writeFileSync(`${resultsDir}cpu-latest.md`, mdText);
}

const cdf = (s: Float64Array) => {
  const pts: Array<[number, number]> = [];
  const step = Math.max(1, Math.floor(s.length / 400));
  for (let i = 0; i < s.length; i += step) pts.push([s[i]!, (i + 1) / s.length]);
  pts.push([s[s.length - 1]!, 1]);
  return pts;
};
writeFileSync(
  `${resultsDir}${chartsRel}/cpu-latency-cdf.svg`,
  lineChart({
    title: 'Round-trip latency CDF (small message, CPU)',
    xLabel: 'round trip (µs)',
    yLabel: 'fraction of round trips ≤ x',
    series: results.map((r) => ({ name: r.name, points: cdf(r.rtt.samples) })),
    marks: [{ x: TARGET.p50us, label: 'target p50' }],
  }),
);
writeFileSync(
  `${resultsDir}${chartsRel}/cpu-latency-histogram.svg`,
  histogramChart({
    title: 'Round-trip latency distribution (CPU)',
    xLabel: 'round trip (µs)',
    series: results.map((r) => ({ name: r.name, samples: r.rtt.samples })),
  }),
);
writeFileSync(
  `${resultsDir}${chartsRel}/cpu-throughput.svg`,
  barChart({
    title: 'One-way throughput, small messages (CPU, one consumer thread)',
    unit: 'msgs/s',
    bars: results.map((r) => ({ name: r.name, value: Math.round(r.throughput) })),
    target: { value: TARGET.tellPerS, label: `target ${TARGET.tellPerS / 1e6} M/s` },
  }),
);

process.stdout.write(mdText);
log(
  RECORD
    ? `wrote bench/results/cpu-latest.{json,md}, bench/results/local/${stamp}.{json,md}, ` +
        `bench/results/charts/*.svg (${env.seconds} s)`
    : `wrote bench/results/local/${stamp}.{json,md} and bench/results/local/charts-${stamp}/*.svg ` +
        `(${env.seconds} s); --record also updates bench/results/cpu-latest.* and bench/results/charts/`,
);
