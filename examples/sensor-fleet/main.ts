/**
 * Sensor-fleet digital twin (`pnpm example:fleet -- --backend cpu|cuda|inline|auto [--devices N] [--rounds R]
 * [--threads T] [--store lmdb|postgres] [--data-dir DIR] [--pg-url URL] [--pg-schema S] [--flush-ms MS] [--phase1-only
 * | --restart] [--inject-mismatch]`).
 *
 * N devices (default 1,000,000), one Device actor each, and one Alerts actor per 4,096 devices (a region).
 * Each round the host moves an injected clock on by 1 s, runs the timer ticks due by it
 * (`system.advanceTimers()`), and sends the round's readings (about 7 in 8 devices report) with one
 * `tellMany` from columns. Every device's `check` timer (2 s, from its activation) raises an alert at its
 * region (a K2K tell) when its last reading is stale (older than 2.5 s) or out of [-10, 60], and clears it
 * when that ends. Device and Alerts states are persistent (`register(..., { storage })`: LMDB in --data-dir,
 * a temp directory by default, or PostgreSQL).
 *
 * Phase 1 runs R rounds (default 6), flushes, shuts down. Phase 2 is a new GrainSystem on the same store:
 * it preloads every stored device (their timers start again from the restart's time), runs R more
 * rounds, reads every device and region back and checks them, field by field, against the plain
 * JavaScript model (model.ts), which runs the same rounds and the same restart. Exits 1 on any difference;
 * --inject-mismatch changes one model value to show that it does. `--phase1-only` stops after phase 1
 * (keeping --data-dir, or the --pg-url server's schema); a later `--restart` with the same flags runs
 * phase 2 in a new process. On cpu, --threads sets the worker pool (default: cores - 1).
 *
 * A backend that refuses this workload (its kernels run no timers, or keep no persistent state) ends the
 * run with its typed error and exit code 3.
 */
import { intFlag, fail, ms, parseArgs } from '../shared/backend.ts';
import { checkFleet } from './check.ts';
import { RULES } from './grains.ts';
import { FleetModel, roundTime } from './model.ts';
import { PhaseRefused, runPhase, type PhaseResult } from './phase.ts';
import { openPlace, type StoreKind } from './store.ts';

const args = parseArgs();
// A misspelt flag (--round 3) must not run the default silently.
const KNOWN = new Set([
  'devices',
  'rounds',
  'threads',
  'store',
  'data-dir',
  'pg-url',
  'pg-schema',
  'flush-ms',
  'phase1-only',
  'restart',
  'inject-mismatch',
]);
const unknown = [...args.flags.keys()].filter((f) => !KNOWN.has(f));
if (unknown.length || args.rest.length)
  fail(
    `unknown option ${unknown
      .map((f) => `--${f}`)
      .concat(args.rest)
      .join(', ')} (--help lists them)`,
  );
const N = intFlag(args, 'devices', 1_000_000);
const ROUNDS = intFlag(args, 'rounds', 6);
const FLUSH_MS = intFlag(args, 'flush-ms', 5000);
if (N < 1 || N > 2 ** 31 - 1) fail('--devices must be in 1..2147483647');
if (ROUNDS < 1) fail('--rounds must be at least 1');
if (FLUSH_MS < 1) fail('--flush-ms must be at least 1');
const storeFlag = args.flags.get('store') ?? 'lmdb';
if (storeFlag !== 'lmdb' && storeFlag !== 'postgres')
  fail(`--store must be lmdb or postgres (got ${JSON.stringify(storeFlag)})`);
const phase1Only = args.flags.has('phase1-only');
const restartOnly = args.flags.has('restart');
if (phase1Only && restartOnly) fail('--phase1-only and --restart exclude each other (run them one after the other)');
const str = (name: string): string | undefined => {
  const v = args.flags.get(name);
  if (v === true) fail(`--${name} needs a value`);
  return v;
};
const cpuOptions = args.flags.has('threads') ? { threads: Math.max(1, intFlag(args, 'threads', 1, 0, 1024)) } : {};

// --- The model: the same rounds and the same restart, sequentially.
const t = performance.now();
const model = new FleetModel(N);
for (let r = 1; r <= ROUNDS; r++) model.round(r);
const modelStored = model.restart(roundTime(ROUNDS));
const modelTicks1 = model.ticks;
for (let r = ROUNDS + 1; r <= 2 * ROUNDS; r++) model.round(r);
const modelMs = performance.now() - t;

const place = await openPlace({
  kind: storeFlag as StoreKind,
  dataDir: str('data-dir'),
  pgUrl: str('pg-url'),
  pgSchema: str('pg-schema'),
  resume: restartOnly,
  keep: phase1Only,
});
let exitCode = 0;
try {
  const common = { backend: args.backend, devices: N, cpuOptions, flushIntervalMs: FLUSH_MS };
  let p1: PhaseResult | undefined;
  let p2: PhaseResult | undefined;
  if (!restartOnly) {
    const store = place.open();
    try {
      p1 = await runPhase({ ...common, first: 1, last: ROUNDS, preload: false, read: false, flush: true, store });
    } finally {
      await store.close();
    }
  }
  if (!phase1Only) {
    const store = place.open();
    try {
      p2 = await runPhase({
        ...common,
        first: ROUNDS + 1,
        last: 2 * ROUNDS,
        preload: true,
        read: true,
        flush: false,
        store,
      });
    } finally {
      await store.close();
    }
  }
  exitCode = report(p1, p2);
} catch (e) {
  if (!(e instanceof PhaseRefused)) throw e;
  const err = e.error;
  console.error(`\n${err.name} [${err.code}]: ${err.message}`);
  console.error(
    `the ${args.backend} backend cannot run the sensor fleet (timers and persistent state on one grain ` +
      'class); nothing was checked.',
  );
  exitCode = 3;
} finally {
  await place.dispose();
}
process.exit(exitCode);

function report(p1: PhaseResult | undefined, p2: PhaseResult | undefined): number {
  const any = p1 ?? p2!;
  const regions = Math.ceil(N / RULES.regionSize);
  const rate = (p: PhaseResult) =>
    `${Math.round(p.readings / (p.readingMs / 1000)).toLocaleString('en-US')}/s ` +
    `(${p.readings.toLocaleString('en-US')} in ${ms(p.readingMs)})`;
  console.log(`\nRinggrain sensor fleet — backend ${any.describe}, store ${place.describe}`);
  console.log(
    `  ${N.toLocaleString('en-US')} devices in ${regions} regions, ${ROUNDS} rounds a phase; JS model ${ms(modelMs)}\n`,
  );
  console.log('| | phase 1 | phase 2 (restart) |');
  console.log('|---|---:|---:|');
  const row = (label: string, f: (p: PhaseResult) => string) =>
    console.log(`| ${label} | ${p1 ? f(p1) : '—'} | ${p2 ? f(p2) : '—'} |`);
  row('start (kernels, tables)', (p) => ms(p.startMs));
  row('preload (restart)', (p) =>
    p === p2 ? `${p.preloaded.toLocaleString('en-US')} devices in ${ms(p.preloadMs)}` : '—',
  );
  row('readings (tellMany until processed)', rate);
  row('timer ticks (checks)', (p) => `${p.ticks.toLocaleString('en-US')} in ${ms(p.tickMs)}`);
  row('flush at the end', (p) => (p === p1 ? `${p.flushed.toLocaleString('en-US')} rows in ${ms(p.flushMs)}` : '—'));
  row('read back (askMany)', (p) => (p === p2 ? ms(p.readMs) : '—'));
  row('shutdown (deactivate, final flush)', (p) => ms(p.shutdownMs));

  const problems = [...(p1?.problems ?? []), ...(p2?.problems ?? [])];
  if (p1 && p1.ticks !== modelTicks1) problems.push(`phase 1 ran ${p1.ticks} checks, the model ${modelTicks1}`);
  if (p2 && p2.ticks !== model.ticks - modelTicks1)
    problems.push(`phase 2 ran ${p2.ticks} checks, the model ${model.ticks - modelTicks1}`);
  if (p2) {
    if (p2.preloaded !== modelStored)
      problems.push(`the restart preloaded ${p2.preloaded} devices, the model stored ${modelStored}`);
    if (args.flags.has('inject-mismatch')) model.sum[N >> 1] = model.sum[N >> 1]! + 0.5;
    const c = checkFleet(model, p2.state!);
    console.log(
      `\n  alerts raised ${model.alertsRaised().toLocaleString('en-US')} ` +
        `(model), ${p2.state!.regionRaised.reduce((a, b) => a + b, 0).toLocaleString('en-US')} ` +
        `(actors); ${c.compared.toLocaleString('en-US')} values compared`,
    );
    if (c.differing)
      problems.push(`${c.differing} of ${c.compared} values differ from the model:`, ...c.lines.map((l) => `  ${l}`));
  } else {
    console.log(
      `\n  phase 1 only: states kept in ${place.describe}; run again with --restart and the same flags ` +
        'for phase 2 and the check',
    );
  }
  if (problems.length) {
    console.log('\nMISMATCH:');
    for (const p of problems) console.log(`  - ${p}`);
    return 1;
  }
  if (p2)
    console.log(
      `\nOK: every device's state (${N.toLocaleString('en-US')}) and every region's alert counts equal ` +
        'the JavaScript model.',
    );
  return 0;
}
