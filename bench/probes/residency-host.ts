/**
 * The host side of actor residency on CUDA (issue 30's four persistence figures), without a GPU: the real core
 * write-behind (packages/core/src/persist/write-behind.ts) over a real LmdbStore, the real ResidencyHost
 * (packages/cuda-backend/src/residency.ts), its LoadPump and the real DirtyGather's decode, against a stand-in
 * device that answers every request at once (on its first poll, packages/cuda-backend/test/residency.test.ts's
 * stand-in made minimal: it reads only the words it must). What is timed is what the host does:
 *   first     one key at a time, like bench/gpu-persistence.ts's first message: the device posts the key on the
 *             load ring (after a kick, as a message written to the kernel gives) → pump poll → write-behind load
 *             → LMDB read → install board → request written (`writtenUs`: the host's part of the first message's
 *             critical path); `answeredUs`: until writeStates resolved (the host saw doneSeq)
 *   cold      --keys stored keys posted at once (as fast as the 4,096-entry ring takes them) until every one was
 *             installed (keys/s; `coldInstalls`: the install requests it took)
 *   preload   write-behind preload of every stored state (states/s)
 *   flush     write-behind flush of --keys dirty states: the gather's host part (decodeKeys, the states' copy out
 *             of pinned memory) then absorb and the LMDB putMany (s); the store is empty, as in the benchmark's fill
 * Medians of --trials; each trial in a fresh LMDB directory (fill: cold loads of absent keys, then the flush).
 *
 *   node --import tsx bench/probes/residency-host.ts [--keys 1000000] [--first 2000] [--trials 3]
 *       [--phases flush,first,cold,preload] [--answer-us 0]
 * --answer-us N: the stand-in answers a request N µs after it was written (a device's time per request), not at once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  LOAD_RING_CAPACITY,
  RES_OP,
  ResidencyHostBlock,
  gatherLayout,
  offsetOf,
  residencyHostBytes,
  residencyLayout,
  type BackendKernel,
  type StateUpload,
} from '../../packages/core/src/entries/backend.ts';
import { stateTableSpec } from '../../packages/core/src/store/index.ts';
import { WriteBehind } from '../../packages/core/src/persist/write-behind.ts';
import { LmdbStore } from '../../packages/lmdb-store/src/index.ts';
import { ResidencyHost, keyWords, type ResidencyDevice } from '../../packages/cuda-backend/src/residency.ts';
import { LoadPump } from '../../packages/cuda-backend/src/load-pump.ts';
import { DirtyGather } from '../../packages/cuda-backend/src/state-gather.ts';
import { Stored } from '../../test/fixtures/stored.ts';

const argv = process.argv.slice(2);
const option = (n: string, d: string) => (argv.includes(n) ? (argv[argv.indexOf(n) + 1] ?? d) : d);
const KEYS = Number(option('--keys', '1000000'));
const FIRST = Number(option('--first', '2000'));
const TRIALS = Number(option('--trials', '3'));
const PHASES = option('--phases', 'flush,first,cold,preload').split(',');
/** How long the stand-in takes to answer a request (µs; 0: on the host's first poll). */
const ANSWER_US = Number(option('--answer-us', '0'));

const def = Stored.grain;
const spec = stateTableSpec(def, 'layout');
const SIZE = spec.stateSize!;
const T = { grain: def.name, stateSize: SIZE, maxActors: Math.max(1024, KEYS), partitions: 128 };
const L = residencyLayout(T);
const HB = residencyHostBytes();
const HW = (f: string) => offsetOf(ResidencyHostBlock, f) >> 2;
const W = { seq: HW('seq'), op: HW('op'), rows: HW('rows'), doneSeq: HW('doneSeq'), loadTail: HW('loadTail') };
/** The write-behind's logger: warnings only (core logs through pino; this probe needs no sink). */
const logger = { warn: console.warn, debug() {}, info() {} } as unknown as ConstructorParameters<typeof WriteBehind>[5];

/**
 * The stand-in kernel: answers a request on its first poll (or --answer-us after it was written); posts keys on the
 * load ring as room allows.
 */
class Device implements ResidencyDevice {
  readonly area = new Uint8Array(L.bytes);
  readonly mem = new ArrayBuffer(HB.bytes + 64);
  readonly words = new Int32Array(this.mem, 64, HB.bytes >> 2);
  readonly ring = new Int32Array(this.mem, 64 + HB.ringAt, (LOAD_RING_CAPACITY * 16) >> 2);
  installed = 0;
  /** Install requests answered (each one every worker of a real kernel must answer). */
  installs = 0;
  /** performance.now() when the host first waited on each request (it had written the request). */
  written = 0;
  private posted = 0;
  private toPost: ArrayLike<number> = [];
  private next = 0;
  onInstalled: (() => void) | undefined;

  copyIn(src: Uint8Array, offset: number): void {
    this.area.set(src, offset);
  }
  copyOut(dst: Uint8Array, offset: number): void {
    dst.set(this.area.subarray(offset, offset + dst.byteLength));
  }
  sync(): void {}
  fault(): Error | undefined {
    return undefined;
  }
  pause(attempt: number): Promise<void> {
    if (attempt === 0) this.written = performance.now();
    const seq = Atomics.load(this.words, W.seq);
    const due = ANSWER_US === 0 || (performance.now() - this.written) * 1000 >= ANSWER_US;
    if (due && Atomics.load(this.words, W.doneSeq) !== seq) {
      if (Atomics.load(this.words, W.op) === RES_OP.INSTALL) {
        this.installed += Atomics.load(this.words, W.rows);
        this.installs++;
      }
      Atomics.store(this.words, W.doneSeq, seq);
      this.onInstalled?.();
    }
    // The pause the backend makes (residency-access.ts).
    return new Promise<void>((r) => (attempt < 64 ? setImmediate(r) : setTimeout(r, 1)));
  }
  /** Keys to post as the ring takes them (fill() posts what fits). */
  postAll(keys: ArrayLike<number>): void {
    this.toPost = keys;
    this.next = 0;
    this.fill();
  }
  /** Posts what fits on the ring (a worker's reserve: key words, then seq). */
  fill(): number {
    const tail = Atomics.load(this.words, W.loadTail) >>> 0;
    let n = 0;
    while (this.next < this.toPost.length && this.posted - tail < LOAD_RING_CAPACITY) {
      const at = (this.posted & (LOAD_RING_CAPACITY - 1)) * 4;
      const [lo, hi] = keyWords(this.toPost[this.next++]!);
      this.ring[at + 1] = lo | 0;
      this.ring[at + 2] = hi;
      Atomics.store(this.ring, at, (this.posted + 1) | 0);
      this.posted++;
      n++;
    }
    return n;
  }
}

interface Rig {
  dev: Device;
  wb: WriteBehind;
  host: ResidencyHost;
  pump: LoadPump;
  store: LmdbStore;
  /** Resolved writeStates (count, and when the last resolved). */
  answered: { n: number; at: number };
  /** The gather's pinned buffer the stand-in fills (flush). */
  gatherHost: Uint8Array;
}

async function rig(dir: string): Promise<Rig> {
  const store = new LmdbStore({ dataDir: dir });
  await store.open();
  const table = await store.table(spec);
  const dev = new Device();
  const answered = { n: 0, at: 0 };
  const gl = gatherLayout(SIZE, T.maxActors);
  const gatherHost = new Uint8Array(gl.bytes);
  const gather = new DirtyGather(
    { grain: def.name, stateSize: SIZE, maxActors: T.maxActors, stringKeys: false, states: 0n, globals: 0n },
    { staging: 0n, zero() {}, launch() {}, copyOut() {}, sync() {} },
    gatherHost,
  );
  let host: ResidencyHost | undefined;
  const kernel = {
    writeStates: (u: StateUpload) =>
      host!.writeStates(u).then(() => {
        answered.n++;
        answered.at = performance.now();
      }),
    readDirty: async () => (await gather.run()).batch,
    health: () => ({ fault: undefined }),
  } as unknown as BackendKernel;
  const wb = new WriteBehind(def, store, table, () => kernel, (e) => console.error(e.error), logger);
  const staging = new Uint8Array(L.staging.bytes);
  host = new ResidencyHost(T, dev, dev.mem, 64, staging, wb, { timeoutMs: 600_000 });
  host.init();
  const pump = new LoadPump(
    () => host.pollLoads(),
    (e) => console.error(e),
  );
  return { dev, wb, host, pump, store, answered, gatherHost };
}

async function close(r: Rig): Promise<void> {
  r.pump.stop();
  await r.store.close();
}

const until = (f: () => boolean): Promise<void> =>
  new Promise((res) => {
    const t = () => (f() ? res() : setImmediate(t));
    t();
  });

/** Cold loads of `keys` (posted at once, as fast as the ring takes them): seconds until every one was installed. */
async function cold(r: Rig, keys: Int32Array): Promise<number> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  r.dev.postAll(keys);
  r.pump.kick();
  const target = r.dev.installed + keys.length;
  // The device keeps posting as the host drains the ring.
  await until(() => (r.dev.fill(), r.dev.installed >= target));
  coldCpuMs = cpuMs(c0);
  return (performance.now() - t0) / 1000;
}

/** The gather's output for every key dirty (count 1, one bump), in the pinned buffer as the device writes it. */
function stageDirty(r: Rig, keys: Int32Array): void {
  const gl = gatherLayout(SIZE, T.maxActors);
  const v = new DataView(r.gatherHost.buffer);
  v.setUint32(0, keys.length, true);
  v.setUint32(4, 0, true);
  for (let i = 0; i < keys.length; i++) {
    const [lo, hi] = keyWords(keys[i]!);
    v.setUint32(gl.keysAt + 8 * i, lo, true);
    v.setInt32(gl.keysAt + 8 * i + 4, hi, true);
    v.setUint32(gl.statesAt + i * SIZE, 1, true); // count 1
  }
}

/** Process CPU time since `c0` (ms): on a shared machine it moves less than the wall clock does. */
const cpuMs = (c0: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(c0);
  return (d.user + d.system) / 1000;
};
let coldCpuMs = 0;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

async function trial(): Promise<Record<string, number>> {
  const dir = mkdtempSync(path.join(tmpdir(), 'rg-residency-host-'));
  const keys = Int32Array.from({ length: KEYS }, (_, i) => i);
  const out: Record<string, number> = {};
  try {
    // Fill: every key loaded (absent in the store), then the flush of all of them dirty.
    let r = await rig(dir);
    out['fillColdS'] = await cold(r, keys);
    stageDirty(r, keys);
    let t0 = performance.now();
    let c0 = process.cpuUsage();
    const f = await r.wb.flush();
    if (f.written !== KEYS) throw new Error(`flush wrote ${f.written} of ${KEYS}`);
    if (PHASES.includes('flush')) {
      out['flushS'] = (performance.now() - t0) / 1000;
      out['flushCpuMs'] = cpuMs(c0);
    }
    await close(r);
    if (PHASES.includes('first')) {
      r = await rig(dir);
      const written: number[] = [];
      const answered: number[] = [];
      for (let i = 0; i < FIRST; i++) {
        const k = (i * 7919) % KEYS;
        const n = r.answered.n;
        t0 = performance.now();
        r.pump.kick(); // the message written to the kernel
        r.dev.postAll([k]);
        await until(() => r.answered.n > n);
        written.push((r.dev.written - t0) * 1000);
        answered.push((r.answered.at - t0) * 1000);
      }
      out['firstWrittenUsP50'] = pct(written, 0.5);
      out['firstWrittenUsP90'] = pct(written, 0.9);
      out['firstAnsweredUsP50'] = pct(answered, 0.5);
      await close(r);
    }
    if (PHASES.includes('cold')) {
      r = await rig(dir);
      out['coldPerS'] = KEYS / (await cold(r, keys));
      out['coldCpuMs'] = coldCpuMs;
      out['coldInstalls'] = r.dev.installs;
      if (r.wb.metrics().loadedFound !== KEYS) throw new Error(`found ${r.wb.metrics().loadedFound} of ${KEYS}`);
      await close(r);
    }
    if (PHASES.includes('preload')) {
      r = await rig(dir);
      t0 = performance.now();
      c0 = process.cpuUsage();
      const n = await r.wb.preload();
      out['preloadPerS'] = KEYS / ((performance.now() - t0) / 1000);
      out['preloadCpuMs'] = cpuMs(c0);
      if (n !== KEYS || r.dev.installed !== KEYS) throw new Error(`preloaded ${n} (${r.dev.installed}) of ${KEYS}`);
      await close(r);
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const runs: Record<string, number>[] = [];
for (let t = 0; t < TRIALS; t++) {
  runs.push(await trial());
  console.log(`trial ${t}`, JSON.stringify(runs[t]));
}
const fig: Record<string, number> = {};
for (const f of Object.keys(runs[0]!)) fig[f] = +median(runs.map((r) => r[f]!)).toPrecision(4);
console.log('median', JSON.stringify({ keys: KEYS, first: FIRST, trials: TRIALS, ...fig }));
process.exit(0);
