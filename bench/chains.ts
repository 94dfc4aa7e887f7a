/**
 * `pnpm bench:chains` — message chains across actors (Savina's ThreadRing), every backend side by side in
 * one run: a ring of N actors (bench/grains.ts Link) passing one token H hops with `ctx.send`, the same ring
 * with N/4 tokens at once (H hops in all), and ping/pong (N/2 pairs bouncing a token, H hops in all); on
 * the inline backend, the CPU pool (--threads; `cpu-park`: the pool with adaptive spinning off, maxSpinMs
 * 0.05, as it was before, opt-in; `cpu-paced`: the pool with spinPause --pause, default 4, opt-in), the
 * CUDA backend where a driver and device are present, and xstate v5 actors in-process (the library a user
 * would otherwise pick; each send queued as a microtask, since a synchronous send inside a transition would
 * recurse once per hop).
 *
 *   node --import tsx bench/chains.ts [--actors 10000,1000000] [--hops 100000] [--trials 5]
 *       [--threads N] [--backends inline,cpu,cuda,xstate[,cpu-park,cpu-paced]] [--pause 4]
 *       [--shapes one,many,pingpong]
 *       [--xstate-max 100000] [--record] [--out NAME]
 *
 * Each figure is the median of --trials (after one warm-up trial), in hops/s, timed from the first send
 * until every turn is counted; every run checks the hop count (the kernel's K2K and turn counters, and
 * each actor's count of sample keys against a JS model). Writes bench/results/local/chains.json (--record:
 * bench/results/chains.json; --out NAME: bench/results/local/NAME.json): { commit, machine, cores, date,
 * threads, byBackend: { inline, cpu, cuda?, xstate } } with, per backend and actor count, hops/s of one
 * token, of N/4 tokens and of ping/pong, and the trials (on the pool also parks and wake-ups per hop);
 * idleCpuPctAfter: the process's CPU over 1 s of idle right after each backend's chains (% of one core);
 * idleCpuPctLater: over the second after; idleThreadPct: per thread over the first (Linux, thread-id order).
 * `--hops` defaults to max(100000, N) per ring size.
 */
process.env['RINGGRAIN_LOG'] ??= 'warn';

import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { GrainSystem } from '@ringgrain/core';
import type { Backend } from '@ringgrain/core/types';
import { CpuBackend, type PoolStats } from '@ringgrain/cpu-backend';
import { InlineBackend } from '../packages/inline-backend/src/index.ts';
import { Link } from './grains.ts';
import { commitOf, machineOf } from './record.ts';
import { trials as stats } from './trials.ts';

const argv = process.argv.slice(2).filter((a) => a !== '--');
if (argv.includes('--help') || argv.includes('-h')) {
  console.log(
    readFileSync(new URL(import.meta.url), 'utf8')
      .split('\n')
      .slice(1, 25)
      .join('\n'),
  );
  process.exit(0);
}
const option = (n: string, d: string) => (argv.includes(`--${n}`) ? (argv[argv.indexOf(`--${n}`) + 1] ?? d) : d);
const cores = os.availableParallelism();
const ACTORS = option('actors', '10000,1000000').split(',').map(Number);
const HOPS = option('hops', '');
const TRIALS = Math.max(1, Number(option('trials', '5')));
const THREADS = Number(option('threads', String(Math.max(1, cores - 1))));
const BACKENDS = option('backends', 'inline,cpu,cuda,xstate').split(',');
const RECORD = argv.includes('--record');
/** xstate rings above this many actors are skipped (recorded why): 1,000,000 xstate actors took minutes to create and 3.5 GB. */
const XSTATE_MAX = Number(option('xstate-max', '100000'));
const OUT = option('out', '');
const log = (s: string) => process.stderr.write(`${s}\n`);
for (const n of ACTORS)
  if (!Number.isInteger(n) || n < 2 || n > 4_000_000)
    throw new Error(`--actors takes integers 2..4000000, got ${option('actors', '')}`);
if (!Number.isInteger(THREADS) || THREADS < 1)
  throw new Error(`--threads takes a positive integer, got ${option('threads', '')}`);
if (HOPS && !(Number.isInteger(Number(HOPS)) && Number(HOPS) >= 1))
  throw new Error(`--hops takes a positive integer, got ${HOPS}`);
for (const b of BACKENDS)
  if (!['inline', 'cpu', 'cpu-park', 'cpu-paced', 'cuda', 'xstate'].includes(b))
    throw new Error(`--backends: unknown backend ${b} (inline, cpu, cpu-park, cpu-paced, cuda, xstate)`);
const PAUSE = Number(option('pause', '4'));
if (!Number.isInteger(PAUSE) || PAUSE < 0 || PAUSE > 1000)
  throw new Error(`--pause takes an integer 0..1000, got ${option('pause', '')}`);
if (RECORD && OUT) throw new Error('--record and --out: pick one');
if (OUT && !/^[\w.-]+$/.test(OUT)) throw new Error(`--out takes a file name without a folder, got ${OUT}`);
const hopsFor = (n: number) => (HOPS ? Number(HOPS) : Math.max(100_000, n));

type Shape = 'one' | 'many' | 'pingpong';
const SHAPES = option('shapes', 'one,many,pingpong').split(',') as Shape[];
for (const sh of SHAPES)
  if (!['one', 'many', 'pingpong'].includes(sh)) throw new Error(`--shapes: unknown shape ${sh} (one, many, pingpong)`);

/** A shape's tokens over a ring of n actors with h hops in all: start keys and hops per token. */
function plan(shape: Shape, n: number, h: number): { starts: Float64Array; each: number } {
  if (shape === 'one') return { starts: Float64Array.of(0), each: h };
  const tokens = shape === 'many' ? Math.max(1, n >> 2) : n >> 1;
  const each = Math.max(1, Math.round(h / tokens));
  // many: every 4th key; pingpong: the even key of each pair.
  return { starts: Float64Array.from({ length: tokens }, (_, i) => (shape === 'many' ? 4 * i : 2 * i)), each };
}

/** What a trial did to each actor's count, in JS (checked against the actors at the end). */
function model(counts: Uint32Array, shape: Shape, n: number, starts: Float64Array, each: number): void {
  for (const s of starts) {
    for (let i = 0, k = s; i <= each; i++) {
      counts[k]!++;
      k = shape === 'pingpong' ? k ^ 1 : (k + 1) % n;
    }
  }
}

interface Runner {
  /** The pool's park figures (cpu), read around each trial. */
  pool?: () => PoolStats | undefined;
  /** Runs `starts.length` tokens of `each` hops; resolves when every turn is done; returns the hops made (checked). */
  trial(shape: Shape, starts: Float64Array, each: number): Promise<number>;
  count(key: number): Promise<number>;
  close(): Promise<void>;
}

/** A Ringgrain system on one backend. */
type Label = 'inline' | 'cpu' | 'cpu-park' | 'cpu-paced' | 'cuda';
async function grainRunner(label: Label, n: number): Promise<Runner> {
  let backend: Backend;
  const name = label === 'cpu-park' || label === 'cpu-paced' ? 'cpu' : label;
  let cpu: CpuBackend | undefined;
  if (name === 'inline') backend = new InlineBackend();
  else if (name === 'cpu')
    backend = cpu = new CpuBackend({
      threads: THREADS,
      ...(label === 'cpu-park' ? { maxSpinMs: 0.05 } : {}),
      ...(label === 'cpu-paced' ? { spinPause: PAUSE } : {}),
    });
  else {
    const { CudaBackend } = await import('@ringgrain/cuda-backend');
    backend = new CudaBackend();
  }
  const sys = new GrainSystem({
    backends: { [name]: backend },
    logLevel: 'warn',
    handleSignals: false,
    handshakeTimeoutMs: 120_000,
    askTimeoutMs: 120_000,
  });
  sys.register(Link, { placement: name, maxActors: n, ringCapacity: 1 << 14 });
  await sys.start();
  return {
    ...(cpu ? { pool: () => cpu.poolStats?.() } : {}),
    async trial(shape, starts, each) {
      const before = sys.counters(Link);
      const method = shape === 'pingpong' ? 'bounce' : 'pass';
      const t0 = performance.now();
      if (starts.length === 1) {
        if (shape === 'pingpong') sys.grain(Link, starts[0]!).tell.bounce({ left: each });
        else sys.grain(Link, starts[0]!).tell.pass({ n, left: each });
      } else if (method === 'bounce') {
        sys.tellMany(Link, 'bounce', { key: starts, left: new Float64Array(starts.length).fill(each) });
      } else {
        sys.tellMany(Link, 'pass', {
          key: starts,
          n: new Float64Array(starts.length).fill(n),
          left: new Float64Array(starts.length).fill(each),
        });
      }
      const turns = starts.length * (each + 1);
      for (;;) {
        const c = sys.counters(Link);
        if (c.processed - before.processed >= turns) break;
        if (performance.now() - t0 > 600_000)
          throw new Error(`${name} ${shape}: ${c.processed - before.processed} of ${turns} turns after 600 s`);
        await new Promise((r) => setTimeout(r, 1));
      }
      const ms = performance.now() - t0;
      const c = sys.counters(Link);
      const hops = c.k2kReceived - before.k2kReceived;
      if (
        hops !== starts.length * each ||
        c.processed - before.processed !== turns ||
        c.handlerErrors !== before.handlerErrors
      ) {
        throw new Error(
          `${name} ${shape}: ${hops} hops and ${c.processed - before.processed} turns (${c.handlerErrors - before.handlerErrors} failed), expected ${starts.length * each} and ${turns}`,
        );
      }
      return (hops / ms) * 1000;
    },
    count: async (key) => (await sys.grain(Link, key).count({})).n,
    close: () => sys.shutdown(),
  };
}

/** xstate v5 actors in-process, created on their first message (as Ringgrain activates them). */
async function xstateRunner(n: number): Promise<Runner> {
  const { createActor, setup, assign } = await import('xstate');
  type Ev = { type: 'pass' | 'bounce'; left: number };
  const actors = new Map<number, { send: (e: Ev) => void; getSnapshot: () => { context: { n: number } } }>();
  let done: () => void = () => {};
  let pending = 0;
  let hops = 0;
  const forward = (key: number, e: Ev) => {
    hops++;
    queueMicrotask(() => actorOf(key).send(e));
  };
  const machine = setup({
    types: { context: {} as { key: number; n: number }, events: {} as Ev, input: {} as { key: number } },
    actions: {
      count: assign({ n: ({ context }) => context.n + 1 }),
      next: ({ context, event }) => {
        if (event.left > 0) {
          const to = event.type === 'bounce' ? context.key ^ 1 : (context.key + 1) % n;
          forward(to, { type: event.type, left: event.left - 1 });
        } else if (--pending === 0) done();
      },
    },
  }).createMachine({
    context: ({ input }) => ({ key: input.key, n: 0 }),
    on: { pass: { actions: ['count', 'next'] }, bounce: { actions: ['count', 'next'] } },
  });
  function actorOf(key: number) {
    let a = actors.get(key);
    if (!a) {
      a = createActor(machine, { input: { key } }).start();
      actors.set(key, a);
    }
    return a;
  }
  return {
    async trial(shape, starts, each) {
      hops = 0;
      pending = starts.length;
      const t0 = performance.now();
      const finished = new Promise<void>((r) => (done = r));
      const type = shape === 'pingpong' ? 'bounce' : 'pass';
      for (const s of starts) actorOf(s).send({ type, left: each });
      await finished;
      const ms = performance.now() - t0;
      if (hops !== starts.length * each)
        throw new Error(`xstate ${shape}: ${hops} hops, expected ${starts.length * each}`);
      return (hops / ms) * 1000;
    },
    count: async (key) => actors.get(key)?.getSnapshot().context.n ?? 0,
    close: async () => {
      for (const a of actors.values()) (a as unknown as { stop(): void }).stop();
      actors.clear();
    },
  };
}

async function cudaPresent(): Promise<string | undefined> {
  try {
    const { probeCuda } = await import('@ringgrain/cuda-backend');
    const p = probeCuda();
    return p.ok ? undefined : p.reason;
  } catch (e) {
    return (e as Error).message;
  }
}

type Figures = Record<
  Shape,
  {
    hopsPerS: number;
    trials: number[];
    tokens: number;
    hopsPerToken: number;
    pool?: { parksPerHop: number; wokenPerHop: number; preempted: number; spinUs: number[] };
  }
>;
const round3 = (x: number) => Math.round(x * 1000) / 1000;
const byBackend: Record<string, Record<string, Figures | { skipped: string } | { failed: string }>> = {};
const cudaMissing = BACKENDS.includes('cuda') ? await cudaPresent() : 'not asked for';
const shapesLine: string[] = [];
const IDLE_MS = 1000;
const idle: Record<string, Record<string, number>> = {};
const idleLater: Record<string, Record<string, number>> = {};
const idleThreads: Record<string, Record<string, number[]>> = {};

/** Per thread of this process (by thread id): ns it ran on a CPU (Linux schedstat), or undefined elsewhere. */
function threadCpuNs(): Map<number, number> | undefined {
  try {
    const out = new Map<number, number>();
    for (const t of readdirSync('/proc/self/task')) {
      try {
        out.set(Number(t), Number(readFileSync(`/proc/self/task/${t}/schedstat`, 'utf8').split(' ')[0]));
      } catch {
        // the thread ended between the listing and the read
      }
    }
    return out;
  } catch {
    return undefined;
  }
}

/**
 * Writes the record as it stands: after every shape of every backend, so a run stopped by a time limit
 * keeps what it measured (the GPU host's check runs each ring size under one).
 */
function save(): string {
  const record = {
    commit: commitOf(),
    machine: machineOf(),
    cores,
    date: new Date().toISOString(),
    threads: THREADS,
    command: `node --import tsx bench/chains.ts ${argv.join(' ')}`.trim(),
    what: 'hops/s (K2K sends received), median of trials after a warm-up; one: one token around a ring of N actors; many: N/4 tokens at once (H hops in all); pingpong: N/2 pairs bouncing (H hops in all); timed from the first send until every turn is counted; hop counts and sample actors checked against a JS model',
    byBackend,
    shapes: shapesLine,
    idleCpuPctAfter: idle,
    idleCpuPctLater: idleLater,
    idleThreadPct: idleThreads,
  };
  const dir = fileURLToPath(new URL(RECORD ? './results/' : './results/local/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const file = `${dir}${RECORD ? 'chains' : OUT || 'chains'}.json`;
  writeFileSync(file, `${JSON.stringify(record, null, 1)}\n`);
  return file;
}

for (const n of ACTORS) {
  const h = hopsFor(n);
  shapesLine.push(`${n} actors: one token ${h} hops; ${n >> 2} tokens; ${n >> 1} pairs`);
  for (const name of BACKENDS) {
    const at = (byBackend[name] ??= {});
    if (name === 'cuda' && cudaMissing) {
      at[String(n)] = { skipped: `no CUDA driver or device: ${cudaMissing}` };
      continue;
    }
    if (name === 'xstate' && n > XSTATE_MAX) {
      // Measured on the 2-core machine: the 250,000-token shape ran at 4.3 K hops/s and ping/pong over
      // 500,000 pairs had not finished after 300 s (each first message creates and starts an actor), 3.5 GB.
      at[String(n)] = {
        skipped: `more than --xstate-max ${XSTATE_MAX} actors: creating and starting ~1,000,000 xstate actors takes minutes and gigabytes`,
      };
      log(`xstate   ${String(n).padStart(8)} actors  skipped (--xstate-max ${XSTATE_MAX})`);
      continue;
    }
    // A backend that fails (a kernel that does not compile, a device error) is recorded as failed and the
    // others still run: one run on the GPU host gives every backend's figures it can.
    let runner: Runner;
    try {
      const label = name as Label;
      runner = name === 'xstate' ? await xstateRunner(n) : await grainRunner(label, n);
    } catch (e) {
      at[String(n)] = { failed: `start: ${(e as Error).message}` };
      log(`${name.padEnd(8)} ${String(n).padStart(8)} actors  FAILED to start: ${(e as Error).message}`);
      process.exitCode = 1;
      continue;
    }
    const counts = new Uint32Array(n);
    const figures = {} as Figures;
    at[String(n)] = figures; // filled shape by shape (save() after each)
    try {
      for (const shape of SHAPES) {
        const { starts, each } = plan(shape, n, h);
        const xs: number[] = [];
        let p0: PoolStats | undefined;
        for (let t = 0; t <= TRIALS; t++) {
          if (t === 1) p0 = runner.pool?.();
          const r = await runner.trial(shape, starts, each);
          model(counts, shape, n, starts, each);
          if (t > 0) xs.push(r); // trial 0 warms up (JIT, activations)
        }
        const p1 = runner.pool?.();
        const s = stats(xs);
        const hops = TRIALS * starts.length * each;
        const parks =
          p0 && p1
            ? {
                parksPerHop: round3((p1.parks - p0.parks) / hops),
                wokenPerHop: round3((p1.woken - p0.woken) / hops),
                preempted: p1.preempted - p0.preempted,
                spinUs: p1.spinUs,
              }
            : undefined;
        figures[shape] = {
          hopsPerS: Math.round(s.median),
          trials: xs.map(Math.round),
          tokens: starts.length,
          hopsPerToken: each,
          ...(parks ? { pool: parks } : {}),
        };
        const extra = parks
          ? `; parks/hop ${parks.parksPerHop}, wake-ups/hop ${parks.wokenPerHop}, preempted spins ${parks.preempted}, spin µs ${parks.spinUs.join('/')}`
          : '';
        log(
          `${name.padEnd(8)} ${String(n).padStart(8)} actors  ${shape.padEnd(8)} ${(s.median / 1000).toFixed(1).padStart(9)} K hops/s  (${starts.length} × ${each} hops; trials ${xs.map((x) => (x / 1000).toFixed(0)).join(', ')} K${extra})`,
        );
        save();
      }
      // What the idle system costs right after the chains (spin windows at their widest): process CPU
      // over IDLE_MS, as % of one core, twice (a cost that lasts, or one that passes); on Linux also each
      // thread's share (schedstat: ns on a CPU), in thread-id order (the pool's threads are the newest).
      if (name !== 'xstate') {
        const windows: number[] = [];
        let threads: number[] | undefined;
        for (let w = 0; w < 2; w++) {
          const c0 = process.cpuUsage();
          const s0 = threadCpuNs();
          const t0 = performance.now();
          await new Promise((r) => setTimeout(r, IDLE_MS));
          const c1 = process.cpuUsage(c0);
          const ms = performance.now() - t0;
          const s1 = threadCpuNs();
          windows.push(Math.round(((c1.user + c1.system) / 10 / ms) * 10) / 10);
          if (w === 0 && s0 && s1)
            threads = [...s1]
              .filter(([tid]) => s0.has(tid))
              .sort((a, b) => a[0] - b[0])
              .map(([tid, ns]) => Math.round(((ns - s0.get(tid)!) / 1e4 / ms) * 10) / 10);
        }
        idle[name] = { ...idle[name], [String(n)]: windows[0]! };
        idleLater[name] = { ...idleLater[name], [String(n)]: windows[1]! };
        if (threads) idleThreads[name] = { ...idleThreads[name], [String(n)]: threads };
        const busy = threads
          ? `; threads above 0.5 %: ${threads.filter((x) => x > 0.5).join(', ') || 'none'} (of ${threads.length})`
          : '';
        log(
          `${name.padEnd(8)} ${String(n).padStart(8)} actors  idle for ${IDLE_MS} ms after: ${windows[0]} % of one core (the whole process), the next ${IDLE_MS} ms ${windows[1]} %${busy}`,
        );
      }
      // Every actor's count against the model: a sample of keys (every one where few).
      const step = Math.max(1, Math.floor(n / 256));
      for (let k = 0; k < n; k += step) {
        const got = await runner.count(k);
        if (got !== counts[k])
          throw new Error(`${name} ${n} actors: actor ${k} counted ${got} turns, the model ${counts[k]}`);
      }
    } catch (e) {
      at[String(n)] = { failed: (e as Error).message, ...figures };
      log(`${name.padEnd(8)} ${String(n).padStart(8)} actors  FAILED: ${(e as Error).message}`);
      process.exitCode = 1;
      continue;
    } finally {
      await runner.close().catch(() => undefined);
    }
    save();
  }
}

log(`wrote ${save()}`);
// Ratios to the inline backend and xstate, per ring size (one token).
for (const n of ACTORS) {
  const one = (b: string) => (byBackend[b]?.[String(n)] as Figures | undefined)?.one?.hopsPerS;
  const cpu = one('cpu');
  if (cpu)
    log(
      `${n} actors, one token: cpu/inline ${(cpu / (one('inline') ?? NaN)).toFixed(2)}×, cpu/xstate ${(cpu / (one('xstate') ?? NaN)).toFixed(2)}×`,
    );
}
