/**
 * SIR across a cluster of silo processes (`pnpm example:sir-cluster -- [--silos 3] [--people N] [--silo-threads 1]
 * [--threads T] [--ring-log2 16] [--degree D] [--days K] [--beta PERMILLE] [--seeds S] [--seed X] [--nats URL
 * --user U --pass P] [--dead-ms MS] [--barrier cluster|ipc] [--no-single]`).
 *
 * The epidemic of examples/sir/main.ts (same grains, same graph, same JS model: examples/sir/model.ts), run
 * twice in one run by the same code:
 *   1. single process: one GrainSystem in this process, CPU backend with --threads pool threads (default
 *      silos × silo-threads, the cluster's total), barrier system.idle();
 *   2. cluster: a local nats-server (JetStream, a random password, a temp store; or --nats URL) and --silos
 *      silo processes (examples/sir/silo.ts, CPU backend, --silo-threads each) hosting Person and Ward; this
 *      process joins as a client and drives it: setup tells, one askMany of the wards a step.
 * Every step's S/I/R counts must equal the model exactly, in both runs; exit 1 on any difference.
 *
 * The cluster's barrier (--barrier cluster, the default): the client's `system.idle()`, which is the
 * cluster's (every silo's kernels idle, as many message entries received as sent over all members, nothing
 * parked or held, two rounds in a row with the same counts; core cluster/control.ts), asked over NATS, so
 * it needs nothing of the silo processes but the cluster. --barrier ipc: rounds of "idle, then your
 * counters" asked of every silo over IPC until every tell sent across silos is confirmed by its receiver
 * and two consecutive rounds read the same counters (drive.ts clusterQuiet). Either way the silos'
 * counters are read over IPC after setup and at the end; lost tells or handler errors fail the run.
 *
 * Prints the epidemic time and K2K msgs/s of both runs side by side, and the cross-silo share (K2K sends a
 * silo handed to its host for a key another silo owns, routed through NATS).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { GrainSystem } from '@ringgrain/core';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { natsCluster, startNatsServer, type NatsServerHandle } from '@ringgrain/cluster-nats';
import { Person, WARD_SIZE, Ward } from './grains.ts';
import { buildGraph, reference, type Counts } from './model.ts';
import { clusterQuiet, epidemic, type EpidemicRun, type SiloCounts } from './drive.ts';
import { fail, intFlag, ms, parseArgs, quietLogger, rejectUnknown } from '../shared/backend.ts';

const args = parseArgs();
rejectUnknown(args, [
  ...['silos', 'silo-threads', 'threads', 'people', 'degree', 'days', 'beta', 'seeds', 'seed', 'max-steps'],
  ...['ring-log2', 'nats', 'user', 'pass', 'token', 'dead-ms', 'barrier', 'no-single'],
]);
const SILOS = intFlag(args, 'silos', 3, 1, 16);
const SILO_THREADS = intFlag(args, 'silo-threads', 1, 1, 64);
const THREADS = intFlag(args, 'threads', SILOS * SILO_THREADS, 1, 1024);
const N = intFlag(args, 'people', 30_000);
const RING_LOG2 = intFlag(args, 'ring-log2', 16, 1, 20);
const BETA_PERMILLE = intFlag(args, 'beta', 80);
if (N < WARD_SIZE || N > 10_000_000) fail(`--people must be in ${WARD_SIZE}..10000000`);
if (BETA_PERMILLE > 1000) fail('--beta is per mille (0..1000)');
const params = {
  n: N,
  halfDegree: Math.max(1, Math.round(intFlag(args, 'degree', 8) / 2)),
  days: intFlag(args, 'days', 4),
  threshold: Math.floor((BETA_PERMILLE / 1000) * 4294967295),
  seeds: intFlag(args, 'seeds', 10),
  seed: intFlag(args, 'seed', 2024),
  maxSteps: intFlag(args, 'max-steps', 500),
};
const WARDS = Math.ceil(N / WARD_SIZE);
const BARRIER = args.flags.get('barrier') ?? 'cluster';
if (BARRIER !== 'cluster' && BARRIER !== 'ipc') fail("--barrier is cluster (the client's idle()) or ipc");
// --dead-ms: the cluster's deadMs (default natsCluster's): on a loaded machine a busy silo can miss heartbeats.
const deadOpt = args.flags.has('dead-ms') ? { deadMs: intFlag(args, 'dead-ms', 3000, 1000) } : {};
const str = (n: string): string | undefined => {
  const v = args.flags.get(n);
  if (v === true) fail(`--${n} needs a value`);
  return v;
};

const tGraph = performance.now();
const graph = buildGraph(params);
const expected = reference(params, graph);
const modelMs = performance.now() - tGraph;

function compare(label: string, got: Counts[], problems: string[]): void {
  if (got.length !== expected.length)
    problems.push(`${label}: the actors ran ${got.length} steps, the model ${expected.length}`);
  for (let k = 0; k < Math.min(got.length, expected.length); k++) {
    const a = got[k]!;
    const b = expected[k]!;
    if ((a.s !== b.s || a.i !== b.i || a.r !== b.r) && problems.length < 10)
      problems.push(`${label}, start of step ${k + 1}: actors S/I/R ${a.s}/${a.i}/${a.r}, model ${b.s}/${b.i}/${b.r}`);
  }
}

const problems: string[] = [];
const rate = (n: number, t: number) => `${Math.round(n / (t / 1000)).toLocaleString('en-US')}/s`;

// --- 1. Single process.
let single: (EpidemicRun & { k2k: number }) | undefined;
if (!args.flags.has('no-single')) {
  const sys = new GrainSystem({
    backends: { cpu: new CpuBackend({ threads: THREADS }) },
    logger: quietLogger(),
    handleSignals: false,
  });
  sys.register(Person, { placement: 'cpu', maxActors: Math.max(N, 1024), ringCapacity: 1 << RING_LOG2 });
  sys.register(Ward, { placement: 'cpu', maxActors: Math.max(WARDS, 1024), ringCapacity: 1 << 14 });
  await sys.start();
  let k2k0 = 0;
  const k2kNow = () => Object.values(sys.metrics()).reduce((a, c) => a + c.k2kSent, 0);
  const run = await epidemic(
    sys,
    params,
    graph,
    () => sys.idle({ timeoutMs: 120_000 }),
    async () => void (k2k0 = k2kNow()),
  );
  single = { ...run, k2k: k2kNow() - k2k0 };
  for (const [name, c] of Object.entries(sys.metrics()))
    if (c.handlerErrors || c.rejected)
      problems.push(`single process, ${name}: ${c.handlerErrors} handler errors, ${c.rejected} rejected`);
  await sys.shutdown();
  compare('single process', single.got, problems);
  // On stderr as soon as it is known: a long cluster run cut short by a time limit still leaves this.
  const exact = problems.length === 0 ? 'exact' : 'NOT exact';
  const steps = single.got.length;
  const times = `setup ${ms(single.setupMs)}, epidemic ${ms(single.runMs)}`;
  process.stderr.write(`single process: ${times}, ${steps} steps, ${exact}\n`);
}

// --- 2. The cluster.
let server: NatsServerHandle | undefined;
let url = str('nats');
let auth: Record<string, string> = {};
if (url === undefined) {
  try {
    server = await startNatsServer();
  } catch (e) {
    fail((e as Error).message);
  }
  url = server.url;
  auth = server.auth;
} else for (const k of ['user', 'pass', 'token']) if (str(k) !== undefined) auth[k] = str(k)!;
const clusterName = `sir-${process.pid}`;
const silos: ChildProcess[] = [];
const waiting = new Map<number, { resolve: (c: SiloCounts) => void; reject: (e: Error) => void }>();
let nextId = 1;
const stopAll = async () => {
  await Promise.all(
    silos.map(
      (c) =>
        new Promise<void>((r) => {
          if (c.exitCode !== null || c.signalCode !== null) return r();
          const hard = setTimeout(() => c.kill('SIGKILL'), 10_000);
          c.once('exit', () => (clearTimeout(hard), r()));
          if (c.connected) c.send({ op: 'stop' });
          else c.kill('SIGTERM');
        }),
    ),
  );
  await server?.stop();
};
/** One silo's counters once its kernels are idle. */
const askSilo = (c: ChildProcess) =>
  new Promise<SiloCounts>((resolve, reject) => {
    const id = nextId++;
    waiting.set(id, { resolve, reject });
    c.send({ op: 'quiet', id });
  });

let client: GrainSystem | undefined;
try {
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: SILOS }, () => {
      const c = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./silo.ts', import.meta.url))], {
        env: {
          ...process.env,
          RG_NATS_URL: url,
          RG_NATS_AUTH: JSON.stringify(auth),
          RG_CLUSTER: clusterName,
          RG_SIR_PEOPLE: String(N),
          RG_SIR_THREADS: String(SILO_THREADS),
          RG_SIR_RING_LOG2: String(RING_LOG2),
          RG_SIR_CLUSTER_OPTS: JSON.stringify(deadOpt),
        },
        stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
      });
      silos.push(c);
      c.on('message', (m: SiloCounts & { id: number; error?: string }) => {
        const w = waiting.get(m.id);
        waiting.delete(m.id);
        if (m.error !== undefined) w?.reject(new Error(`silo ${m.silo ?? '?'}: ${m.error}`));
        else w?.resolve(m);
      });
      return new Promise<void>((resolve, reject) => {
        c.once('exit', (code, sig) => {
          reject(new Error(`a silo exited (${code ?? sig}) before it was ready`));
          for (const w of waiting.values()) w.reject(new Error(`a silo exited (${code ?? sig})`));
        });
        let out = '';
        c.stdout!.setEncoding('utf8').on('data', (s: string) => {
          out += s;
          if (out.includes('READY')) resolve();
        });
      });
    }),
  );
  client = new GrainSystem({
    backends: {},
    logger: quietLogger(),
    handleSignals: false,
    cluster: natsCluster({ servers: url!, name: clusterName, ...auth, ...deadOpt }),
  });
  await client.start();
  await client.cluster!.waitFor(() => client!.cluster!.settled(SILOS), 30_000);
  const startMs = performance.now() - t0;

  let last: SiloCounts[] = [];
  let rounds = 0;
  const readSilos = () => Promise.all(silos.map(askSilo));
  const tRun = performance.now();
  let barriers = 0;
  const quiet = async (what: string): Promise<void> => {
    rounds++;
    // Progress on stderr every 10 barriers (a long run cut short by a time limit shows where it was).
    if (++barriers % 10 === 0) process.stderr.write(`cluster: ${what} at ${ms(performance.now() - tRun)}\n`);
    if (BARRIER === 'cluster') {
      try {
        await client!.idle({ timeoutMs: 120_000 });
      } catch (e) {
        throw new Error(`${what}: ${(e as Error).message}`, { cause: e });
      }
      return;
    }
    const q = await clusterQuiet(client!, readSilos, what);
    last = q.counts;
    rounds += q.rounds - 1;
  };
  let base: SiloCounts[] = [];
  // After setup's barrier (and after the last step's) the silos are quiet: their counters read over IPC then.
  const afterSetup = async () => void (base = BARRIER === 'ipc' ? last : await readSilos());
  const run = await epidemic(client, params, graph, quiet, afterSetup);
  if (BARRIER === 'cluster') last = await readSilos();
  compare(`${SILOS} silos`, run.got, problems);
  const sum = (xs: SiloCounts[], f: (s: SiloCounts) => number) => xs.reduce((a, s) => a + f(s), 0);
  const cross = sum(last, (s) => s.tellsOut) - sum(base, (s) => s.tellsOut);
  const inSilo = sum(last, (s) => s.k2k) - sum(base, (s) => s.k2k);
  const lost = sum(last, (s) => s.lostTells);
  const errors = sum(last, (s) => s.errors);
  if (lost) problems.push(`${lost} tells lost between silos`);
  if (errors) problems.push(`${errors} handler errors, rejected messages or failed tells on the silos`);
  const owned = new Map<string, number>();
  for (let p = 0; p < N; p++) {
    const o = client.cluster!.ownerOf('Person', p)!;
    owned.set(o, (owned.get(o) ?? 0) + 1);
  }
  await client.shutdown();
  client = undefined;
  await stopAll();

  const peak = expected.reduce((m, c, k) => (c.i > expected[m]!.i ? k : m), 0);
  const barrierText =
    BARRIER === 'cluster' ? `barrier the client's idle() (the cluster's) × ${rounds}` : `${rounds} IPC barrier rounds`;
  console.log(`Ringgrain SIR across a cluster — seed ${params.seed}, nats-server ${server?.version ?? url}`);
  console.log(
    `  people ${N.toLocaleString('en-US')} in ${WARDS} wards, ${graph.edges.toLocaleString('en-US')} ` +
      `contacts, ${graph.seeds.size} seeds, ${expected.length} steps ` +
      `(peak ${expected[peak]!.i.toLocaleString('en-US')} infected at step ${peak + 1}); graph + JS ` +
      `model ${ms(modelMs)}`,
  );
  console.log(
    `  cluster: ${SILOS} silo processes × ${SILO_THREADS} CPU pool thread(s), up in ${ms(startMs)}; ` +
      `Person keys per silo ${[...owned.values()].join(' / ')}; ${barrierText}\n`,
  );
  console.log('| run | setup | epidemic | K2K msgs | K2K msgs/s | of which cross-silo |');
  console.log('|---|---:|---:|---:|---:|---:|');
  if (single)
    console.log(
      `| single process, cpu × ${THREADS} threads | ${ms(single.setupMs)} | ${ms(single.runMs)} ` +
        `| ${single.k2k.toLocaleString('en-US')} | ${rate(single.k2k, single.runMs)} | — |`,
    );
  console.log(
    `| ${SILOS} silos on NATS | ${ms(run.setupMs)} | ${ms(run.runMs)} ` +
      `| ${(inSilo + cross).toLocaleString('en-US')} | ${rate(inSilo + cross, run.runMs)} ` +
      `| ${cross.toLocaleString('en-US')} (${rate(cross, run.runMs)}) |`,
  );
  if (single)
    console.log(
      `\n  cluster / single process: epidemic ${(run.runMs / single.runMs).toFixed(2)}× the time; K2K ` +
        `msgs/s ${((inSilo + cross) / run.runMs / (single.k2k / single.runMs)).toFixed(3)}×`,
    );
  if (single && single.k2k !== inSilo + cross)
    problems.push(
      `K2K sends: ${single.k2k} in one process, ${inSilo + cross} across the cluster (the same epidemic ` +
        'must send the same messages)',
    );
} catch (e) {
  await client?.shutdown().catch(() => undefined);
  await stopAll();
  fail((e as Error).message);
}
if (problems.length) {
  console.log('\nMISMATCH:');
  for (const p of problems) console.log(`  - ${p}`);
  process.exit(1);
}
console.log(
  `\nOK: S/I/R counts of all ${expected.length} steps equal the JavaScript model${single ? ' in both runs' : ''}.`,
);
