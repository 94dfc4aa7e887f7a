/**
 * readDirty on the CUDA backend (issue 15): R actors of a 32-byte state are made dirty by one tell each,
 * then the kernel's dirty gather (codegen state-meta.ts + cuda-backend state-gather.ts) reads them out:
 * the gather kernel compacts keys and states on the device and clears the marks, the host copies exactly
 * that many rows into pinned memory. Printed per trial: the gather (kernel + count), the device → host copy
 * of the rows (the target: ≤ 10 ms for 1,000,000 rows on the H100), the decode into a batch.
 *
 * Every trial is checked, not just timed: each of the R keys comes back exactly once with the state its
 * tells left, and a gather right after finds nothing (the marks were cleared). A race check then gathers
 * while tells are still landing and once more after idle: every actor's last state must be in the union
 * (an update landing during a flush marks its actor again, never lost; a row a turn overlapped is dropped
 * and its actor stays dirty).
 *
 *   node --import tsx bench/gpu-state.ts [--rows 1000000] [--trials 5]
 * Writes $OUT/gpu-state.json (or bench/results/gpu-state.json).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { GrainSystem } from '../packages/core/src/index.ts';
import { layoutOf, offsetOf, type StateBatch } from '../packages/core/src/entries/backend.ts';
import { CudaBackend, probeCuda } from '../packages/cuda-backend/src/index.ts';
import { liveKernel } from '../packages/cuda-backend/src/fault-injection.ts';
import { Slab } from './state-grains.ts';
import { trials } from './trials.ts';
import { commitOf, machineOf } from './record.ts';

const argv = process.argv.slice(2);
const option = (n: string, d: string) => (argv.includes(n) ? (argv[argv.indexOf(n) + 1] ?? d) : d);
if (argv.includes('--help')) {
  console.log('usage: node --import tsx bench/gpu-state.ts [--rows 1000000] [--trials 5]');
  process.exit(0);
}
const ROWS = Number(option('--rows', '1000000'));
const TRIALS = Number(option('--trials', '5'));
const TARGET_COPY_MS = 10;

const probe = probeCuda();
if (!probe.ok) {
  console.error(`gpu-state: no CUDA device (${probe.reason})`);
  process.exit(2);
}

const S = Slab.grain.state;
const STRIDE = layoutOf(S).size;
if (STRIDE !== 32) throw new Error(`gpu-state: Slab's state is ${STRIDE} bytes, the benchmark is defined for 32`);
const AT = { a: offsetOf(S, 'a'), b: offsetOf(S, 'b'), c: offsetOf(S, 'c'), n: offsetOf(S, 'n'), k: offsetOf(S, 'k') };

/** Every row's state as the tells left it: a = v, b = 2v, c = 3v, n = puts so far, k = key. */
function check(batch: StateBatch, v: (key: number) => number, n: number, want: number, what: string): void {
  if (batch.stride !== STRIDE) throw new Error(`${what}: stride ${batch.stride}`);
  if (batch.keys.length !== want) throw new Error(`${what}: ${batch.keys.length} rows, expected ${want}`);
  const seen = new Uint8Array(ROWS);
  const dv = new DataView(batch.bytes.buffer, batch.bytes.byteOffset, batch.bytes.byteLength);
  batch.keys.forEach((key, i) => {
    if (typeof key !== 'number' || key < 0 || key >= ROWS) throw new Error(`${what}: row ${i} has key ${String(key)}`);
    if (seen[key]) throw new Error(`${what}: key ${key} twice`);
    seen[key] = 1;
    const o = i * STRIDE;
    const x = v(key);
    const ok =
      dv.getFloat64(o + AT.a, true) === x &&
      dv.getFloat64(o + AT.b, true) === x * 2 &&
      dv.getFloat64(o + AT.c, true) === x * 3 &&
      dv.getUint32(o + AT.n, true) === n &&
      dv.getInt32(o + AT.k, true) === key;
    if (!ok)
      throw new Error(
        `${what}: key ${key} has a state its tells did not leave (n=${dv.getUint32(o + AT.n, true)}, expected ${n})`,
      );
  });
}

const backend = new CudaBackend({ stateMarks: true }); // Slab has no storage here: keep its marks anyway
const sys = new GrainSystem({
  backends: { cuda: backend },
  logLevel: 'warn',
  handleSignals: false,
  askTimeoutMs: 120_000,
});
sys.register(Slab, { placement: 'cuda', maxActors: ROWS, ringCapacity: 65536 });
await sys.start();
const out: Record<string, unknown> = {
  bench: 'gpu-state',
  rows: ROWS,
  stateBytes: STRIDE,
  commit: commitOf(),
  machine: machineOf(),
  device: probe.device.name,
  targetCopyMs: TARGET_COPY_MS,
};
try {
  const kernel = liveKernel(backend, Slab.grain);
  if (!kernel) throw new Error('gpu-state: no live Slab kernel');
  const key = new Int32Array(ROWS).map((_, i) => i);
  const put = (v: (k: number) => number) =>
    sys.tellMany(Slab, 'put', { key, v: new Float64Array(ROWS).map((_, i) => v(i)), k: key });
  const gather: number[] = [];
  const copy: number[] = [];
  const decode: number[] = [];
  const total: number[] = [];
  for (let t = 0; t < TRIALS; t++) {
    const v = (k: number) => k + t * 0.5;
    put(v);
    await sys.idle();
    const t0 = performance.now();
    const g = await kernel.gatherDirty();
    total.push(performance.now() - t0);
    check(g.batch, v, t + 1, ROWS, `trial ${t}`);
    const again = await kernel.gatherDirty();
    if (again.rows !== 0)
      throw new Error(`trial ${t}: ${again.rows} rows still dirty right after a gather (marks not cleared)`);
    gather.push(g.gatherMs);
    copy.push(g.copyMs);
    decode.push(g.decodeMs);
    if (g.dropped !== 0) throw new Error(`trial ${t}: ${g.dropped} rows dropped with no turn running (idle kernel)`);
    console.log(
      `trial ${t}: ${g.rows} rows, gather ${g.gatherMs.toFixed(2)} ms, device→host ` +
        `copy ${g.copyMs.toFixed(2)} ms (${((g.rows * (STRIDE + 8)) / g.copyMs / 1e6).toFixed(2)} GB/s), ` +
        `decode ${g.decodeMs.toFixed(2)} ms, readDirty ${total.at(-1)!.toFixed(2)} ms`,
    );
  }
  // Race: gather while this round's tells land; whatever a gather missed is dirty again for the last one.
  const n = TRIALS + 1;
  const last = new Map<number, number>();
  const dvOf = (b: StateBatch) => new DataView(b.bytes.buffer, b.bytes.byteOffset, b.bytes.byteLength);
  const keep = (b: StateBatch) =>
    b.keys.forEach((k, i) => last.set(k as number, dvOf(b).getUint32(i * STRIDE + AT.n, true)));
  put((k) => k);
  let during = 0;
  let dropped = 0;
  for (let i = 0; i < 4; i++) {
    const g = await kernel.gatherDirty();
    during += g.rows;
    dropped += g.dropped;
    keep(g.batch);
  }
  await sys.idle();
  keep((await kernel.gatherDirty()).batch);
  let lost = 0;
  for (let k = 0; k < ROWS; k++) if (last.get(k) !== n) lost++;
  if (lost) throw new Error(`race check: ${lost} actors' last update is in no gather`);
  console.log(
    `race check: ${during} rows gathered while tells landed (${dropped} dropped for a turn overlapping ` +
      `their copy), every actor's last state read out (none lost)`,
  );
  const c = trials(copy);
  Object.assign(out, {
    gatherMs: trials(gather),
    copyMs: c,
    decodeMs: trials(decode),
    readDirtyMs: trials(total),
    raceRowsDuring: during,
    raceRowsDropped: dropped,
    copyMeetsTarget: c.median <= TARGET_COPY_MS,
  });
  console.log(
    `median device→host copy of ${ROWS.toLocaleString('en')} dirty ${STRIDE}-byte ` +
      `states: ${c.median.toFixed(2)} ms (target ≤ ${TARGET_COPY_MS} ` +
      `ms: ${c.median <= TARGET_COPY_MS ? 'met' : 'NOT met'})`,
  );
} finally {
  await sys.shutdown();
}
const dir = process.env['OUT'] ?? path.join(import.meta.dirname, 'results');
mkdirSync(dir, { recursive: true });
writeFileSync(path.join(dir, 'gpu-state.json'), JSON.stringify(out, null, 2) + '\n');
