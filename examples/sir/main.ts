/**
 * SIR epidemic (`pnpm example:sir -- --backend cpu|cuda|auto [--people N] [--degree D] [--days K] [--beta PERMILLE]
 * [--seeds S] [--seed X] [--ring-log2 18] [--partitions P] [--queue-log2 Q] [--threads T] [--devices 0,1|all]`).
 *
 * A seeded random contact graph of N people (default 100,000). Two grain classes: Person (state, contacts,
 * infection decisions) and Ward (100 people each: mirrors who is infected, ticks its infectious members,
 * counts S/I/R). Per step the host asks every ward `step` (counts as of the start of the step, then ticks),
 * and waits until the system is quiet (every message sent — host and K2K — processed): a barrier. All the
 * epidemic traffic is K2K: ward → person ticks, person → person infection attempts, person → ward reports.
 *
 * Infection attempts succeed when hash(step, from, to) < threshold (integer math in the handler), so the
 * result does not depend on message order and must equal the plain-JavaScript model exactly, step by step.
 * Exits 1 on any difference. On cpu, --threads sets the worker pool (default: cores - 1).
 */
import { Person, WARD_SIZE, Ward } from './grains.ts';
import { buildGraph, reference, type Counts } from './model.ts';
import {
  buildSystem,
  fail,
  intFlag,
  ms,
  parseArgs,
  progress,
  rejectUnknown,
  whereItStands,
} from '../shared/backend.ts';

const args = parseArgs();
rejectUnknown(args, [
  'people',
  'degree',
  'days',
  'beta',
  'seeds',
  'seed',
  'max-steps',
  'ring-log2',
  'partitions',
  'queue-log2',
  'threads',
  'devices',
  'inject-mismatch',
]);
const N = intFlag(args, 'people', 100_000);
const halfDegree = Math.max(1, Math.round(intFlag(args, 'degree', 8) / 2));
const DAYS = intFlag(args, 'days', 4);
const BETA_PERMILLE = intFlag(args, 'beta', 80);
const SEEDS = intFlag(args, 'seeds', 10);
const SEED = intFlag(args, 'seed', 2024);
const MAX_STEPS = intFlag(args, 'max-steps', 500);
// 10,000,000 people: about 1.4 GB of Person state on the device (or in the CPU backend's shared memory), and a
// flat contact graph of 1.3 GB (Int32Array, outside the JS heap).
if (N < WARD_SIZE || N > 10_000_000) fail(`--people must be in ${WARD_SIZE}..10000000`);
if (BETA_PERMILLE > 1000) fail('--beta is per mille (0..1000)');
const THRESHOLD = Math.floor((BETA_PERMILLE / 1000) * 4294967295);
const WARDS = Math.ceil(N / WARD_SIZE);

// --- The contact graph (flat, outside the JS heap: examples/sir/model.ts) and the reference model.
const params = { n: N, halfDegree, days: DAYS, threshold: THRESHOLD, seeds: SEEDS, seed: SEED, maxSteps: MAX_STEPS };
const tGraph = performance.now();
const graph = buildGraph(params);
const { contactsOf, seeds, edges } = graph;
const graphMs = performance.now() - tGraph;
const tRef = performance.now();
const expected = reference(params, graph);
const refMs = performance.now() - tRef;

// --- The actor run.
const t0 = performance.now();
// On cuda, a step's K2K burst (~350K messages at 100,000 people) is far more than the device queues hold
// (32 × 256 slots per grain class by default): what finds a queue full waits in the kernel's overflow
// pool, in order. Default options; --partitions and --queue-log2 tune them.
const cudaOptions: Record<string, unknown> = {};
if (args.flags.has('partitions')) cudaOptions['partitions'] = intFlag(args, 'partitions', 32);
if (args.flags.has('queue-log2')) cudaOptions['queueCapacity'] = 1 << intFlag(args, 'queue-log2', 8, 1, 30);
// --devices 0,1 (or all): every class over those GPUs, one lane group each (CudaBackend devices).
const devicesFlag = args.flags.get('devices');
if (typeof devicesFlag === 'string')
  cudaOptions['devices'] = devicesFlag === 'all' ? 'all' : devicesFlag.split(',').map(Number);
const { system, placement, describe } = await buildSystem(
  args.backend,
  {},
  cudaOptions,
  args.flags.has('threads') ? { threads: intFlag(args, 'threads', 1, 1, 1024) } : {},
);
// Big rings (2^18 slots, ~200 MB of SharedArrayBuffer): a step sends up to infected × degree (~250K) K2K
// messages at once; with 4096 slots (default) most of
// them wait in the overflow queue, which the CPU backend drains slowly: 185 s instead of 18 s for 100K people.
const ringCapacity = 1 << intFlag(args, 'ring-log2', 18, 1, 20);
system.register(Person, { placement, maxActors: Math.max(N, 1024), ringCapacity });
system.register(Ward, { placement, maxActors: Math.max(WARDS, 1024), ringCapacity: 1 << 14 });
let tellErrors = 0;
system.on('tellError', (e) => {
  if (tellErrors++ < 5) console.error(`tell failed: ${e.grain}.${e.method}: ${e.error.message}`);
});
await system.start();
const startMs = performance.now() - t0;

/** Barrier: every message sent by the host or by a kernel has been processed (system.idle). */
async function quiet(what: string): Promise<void> {
  try {
    await system.idle({ timeoutMs: 120_000 });
  } catch (e) {
    throw new Error(`${what}: ${(e as Error).message}\n  ${whereItStands(system)}`, { cause: e });
  }
}

async function tellAll(
  fn: (i: number) => Promise<void> | undefined,
  n: number,
  bar?: { update(n: number): void },
): Promise<void> {
  for (let i = 0; i < n; i++) {
    const p = fn(i);
    if (p) await p;
    if (bar && (i & 4095) === 0) bar.update(i);
  }
}

let t = performance.now();
const setupBar = progress('setup', N);
await tellAll((p) => system.grain(Person, p).tell.setup({ contacts: Array.from(contactsOf(p)) }), N, setupBar);
setupBar.update(N);
for (const p of seeds) {
  const x = system.grain(Person, p).tell.seed({});
  if (x) await x;
}
await quiet('setup');
setupBar.stop();
const setupMs = performance.now() - t;

t = performance.now();
const got: Counts[] = [];
const stepMs: number[] = [];
/** Per step: the wards' askMany (counts, then ticks sent), and the barrier after it. */
const askMs: number[] = [];
const stepBar = progress('steps', expected.length);
const wardKeys = Int32Array.from({ length: WARDS }, (_, w) => w);
const wardMembers = Int32Array.from({ length: WARDS }, (_, w) => Math.min(WARD_SIZE, N - w * WARD_SIZE));
const stepCol = new Int32Array(WARDS);
const daysCol = new Int32Array(WARDS).fill(DAYS);
const thresholdCol = new Uint32Array(WARDS).fill(THRESHOLD);
for (let step = 1; step <= MAX_STEPS; step++) {
  const ts = performance.now();
  // One askMany a step (the wards' asks as columns, replies as columns): 10,000 single asks cost the host
  // more than the GPU's whole step outside the peak.
  const replies = await system.askMany(Ward, 'step', {
    key: wardKeys,
    step: stepCol.fill(step),
    days: daysCol,
    threshold: thresholdCol,
    members: wardMembers,
  });
  const c = { s: 0, i: 0, r: 0 };
  for (let w = 0; w < WARDS; w++) {
    c.s += replies.s[w]!;
    c.i += replies.i[w]!;
    c.r += replies.r[w]!;
  }
  got.push(c);
  askMs.push(performance.now() - ts);
  await quiet(`step ${step}`);
  stepMs.push(performance.now() - ts);
  stepBar.update(step);
  if (c.i === 0) break;
}
stepBar.stop();
const runMs = performance.now() - t;
const metrics = system.metrics();
// Spot check: a few people's own state agrees with the model's final picture (status 0/1/2).
const sample = await Promise.all([...seeds].slice(0, 3).map((p) => system.grain(Person, p).status({})));
await system.shutdown();

// --- Compare.
const problems: string[] = [];
if (args.flags.has('inject-mismatch') && expected.length > 2) expected[2]!.i += 1;
if (got.length !== expected.length) problems.push(`the actors ran ${got.length} steps, the model ${expected.length}`);
for (let k = 0; k < Math.min(got.length, expected.length); k++) {
  const a = got[k]!;
  const b = expected[k]!;
  if (a.s !== b.s || a.i !== b.i || a.r !== b.r) {
    if (problems.length < 10)
      problems.push(`start of step ${k + 1}: actors S/I/R ${a.s}/${a.i}/${a.r}, model ${b.s}/${b.i}/${b.r}`);
  }
}
for (const s of sample)
  if (s.status === 0 || s.infStep !== 0) problems.push(`a seed person reports ${JSON.stringify(s)}`);
if (tellErrors) problems.push(`${tellErrors} tells failed in their handlers`);
for (const [name, c] of Object.entries(metrics)) {
  if (c.handlerErrors || c.rejected)
    problems.push(`${name}: ${c.handlerErrors} handler errors, ${c.rejected} rejected`);
}

const k2k = Object.values(metrics).reduce((a, c) => a + c.k2kSent, 0);
const processed = Object.values(metrics).reduce((a, c) => a + c.processed, 0);
const peak = got.reduce((m, c, k) => (c.i > got[m]!.i ? k : m), 0);
console.log(`\nRinggrain SIR — backend ${describe}, seed ${SEED}`);
console.log(
  `  people ${N.toLocaleString('en-US')} in ${WARDS} wards, ${edges.toLocaleString('en-US')} contacts ` +
    `(mean degree ${((2 * edges) / N).toFixed(1)}), ${seeds.size} seeds, infectious ${DAYS} steps, ` +
    `p(infect) ${BETA_PERMILLE / 10}%`,
);
console.log('\n| step | S | I | R | step time | of which asks |');
console.log('|---:|---:|---:|---:|---:|---:|');
const show = new Set([
  0,
  1,
  2,
  3,
  4,
  Math.floor(peak / 2),
  peak,
  Math.floor((peak + got.length) / 2),
  got.length - 2,
  got.length - 1,
]);
let prev = -1;
for (const k of [...show].filter((k) => k >= 0 && k < got.length).sort((a, b) => a - b)) {
  if (prev >= 0 && k > prev + 1) console.log('| … | | | | |');
  const c = got[k]!;
  console.log(
    `| ${k + 1}${k === peak ? ' (peak)' : ''} | ${c.s} | ${c.i} | ${c.r} | ${ms(stepMs[k]!)} | ${ms(askMs[k]!)} |`,
  );
  prev = k;
}
console.log(
  `\n  graph ${ms(graphMs)}, JS model ${ms(refMs)}, start ${ms(startMs)}, setup ${ms(setupMs)} ` +
    `(${N.toLocaleString('en-US')} tells), epidemic ${ms(runMs)} over ${got.length} steps`,
);
console.log(
  `  messages processed ${processed.toLocaleString('en-US')}, of which K2K ${k2k.toLocaleString('en-US')} ` +
    `(${Math.round(k2k / (runMs / 1000)).toLocaleString('en-US')} K2K msgs/s during the epidemic)`,
);
if (problems.length) {
  console.log('\nMISMATCH:');
  for (const p of problems) console.log(`  - ${p}`);
  process.exit(1);
}
console.log(`\nOK: S/I/R counts of all ${got.length} steps equal the JavaScript model.`);
