import {
  EvictRow,
  INSTALL_ERROR_BYTES,
  LOAD_RING_CAPACITY,
  LoadRequest,
  RES_MODE,
  RES_OP,
  RES_ROW,
  ResidencyGlobals,
  ResidencyHostBlock,
  evictRing,
  residencyHostBytes,
  residencyLayout,
  layoutOf,
  offsetOf,
  type ActorKey,
  type EvictedStates,
  type KernelStateHost,
  type StateUpload,
} from '@ringgrain/core/backend';
import { decodeKeys } from './state-gather.ts';
import { GpuStateError } from './errors.ts';

/**
 * The host's end of actor residency on a CUDA kernel (codegen residency.ts is the layout, the kernel's
 * control warp and workers the other end): deactivateIdle and writeStates become requests in the pinned
 * ResidencyHostBlock, answered by `doneSeq`; deactivated actors are read from the device staging batch
 * and handed to the plan's `evicted`; keys the kernel posts on the load-request ring go to `load`, actors
 * a worker deactivated to make room (a full table) come on the evict ring and go to `evicted` too.
 * One request at a time (a queue), as the state stream and staging buffers are shared.
 */

/** What the residency needs of its kernel. */
export interface ResidencyTarget {
  readonly grain: string;
  readonly stateSize: number;
  readonly maxActors: number;
  readonly partitions: number;
  /** The class's idleMs (absent: none; a full table then makes no room). */
  readonly idleMs?: number | undefined;
}

/**
 * Driver calls on the kernel's state stream: `copyIn` queues a host → device copy into the residency
 * area at `offset`, `copyOut` a device → host copy out of it, `sync` waits for the stream. `fault` says
 * whether the kernel faulted or went away (a request then fails instead of waiting). Unit tests and the
 * g++ harness implement it with a stand-in that plays the kernel.
 */
export interface ResidencyDevice {
  copyIn(src: Uint8Array, offset: number): void;
  copyOut(dst: Uint8Array, offset: number): void;
  sync(): void;
  fault(): Error | undefined;
  /**
   * Waits a little for the kernel (a resolved promise on a macrotask); `attempt` counts the waits of the
   * request in progress from 0, so the backend can poll at once first and sleep longer once it takes long.
   */
  pause(attempt: number): Promise<void>;
}

const hw = (f: string): number => offsetOf(ResidencyHostBlock, f) >> 2;
const H = {
  seq: hw('seq'), op: hw('op'), rows: hw('rows'), mode: hw('mode'), errorLength: hw('errorLength'), loadTail: hw('loadTail'),
  failureId: hw('failureId'),
  doneSeq: hw('doneSeq'), evicted: hw('evicted'), installed: hw('installed'), rejected: hw('rejected'), evictTail: hw('evictTail'),
} as const;
const EVICT_HDR = layoutOf(EvictRow).size;
const HF = { before: offsetOf(ResidencyHostBlock, 'before') >> 3, now: offsetOf(ResidencyHostBlock, 'now') >> 3 } as const;
const REQ = layoutOf(LoadRequest).size >> 2;

/** int64 halves of an integer key (two's complement), as the kernel's keyLo/keyHi words hold it. */
export function keyWords(key: number): [number, number] {
  const hi = Math.floor(key / 4294967296);
  return [key - hi * 4294967296, hi | 0];
}

/** Line 2 of ResidencyGlobals, written before the launch: where the host block and the device parts are. */
export function residencyGlobalsImage(t: ResidencyTarget, hostDevPtr: bigint, areaDevPtr: bigint): Uint8Array {
  const r = residencyLayout(t);
  const img = new Uint8Array(layoutOf(ResidencyGlobals).size);
  const dv = new DataView(img.buffer);
  const put = (f: string, v: number) => dv.setUint32(offsetOf(ResidencyGlobals, f), v >>> 0, true);
  const ring = evictRing(t.stateSize);
  const ptr = (f: string, p: bigint) => {
    put(`${f}Lo`, Number(p & 0xffffffffn));
    put(`${f}Hi`, Number(p >> 32n));
  };
  ptr('host', hostDevPtr);
  ptr('acks', areaDevPtr + BigInt(r.acksAt));
  ptr('staging', areaDevPtr + BigInt(r.stagingAt));
  ptr('board', areaDevPtr + BigInt(r.boardAt));
  ptr('parks', areaDevPtr + BigInt(r.parksAt));
  ptr('rooms', areaDevPtr + BigInt(r.roomsAt));
  put('evictCapacity', ring.capacity);
  put('evictStride', ring.stride);
  dv.setFloat64(offsetOf(ResidencyGlobals, 'idleMs'), t.idleMs ?? Number.POSITIVE_INFINITY, true);
  put('boardKindsAt', r.board.kindsAt);
  put('boardStatesAt', r.board.statesAt);
  put('boardErrorAt', r.board.errorAt);
  put('installCapacity', r.installCapacity);
  put('loadCapacity', LOAD_RING_CAPACITY);
  return img;
}

/** UTF-8 of `text`, cut at a character boundary to fit `max` bytes. */
export function clippedUtf8(text: string, max: number): Uint8Array {
  const b = new TextEncoder().encode(text);
  if (b.length <= max) return b;
  let n = max;
  while (n > 0 && (b[n]! & 0xc0) === 0x80) n--;
  return b.subarray(0, n);
}

/**
 * Lets a stopped kernel exit (RES_OP.EXIT: the request is not answered): the host block of a kernel at
 * `offset` of `buffer`. Called by dispose, after every request of the kernel was answered or failed.
 */
export function residencyExit(buffer: ArrayBufferLike, offset: number): void {
  const words = new Int32Array(buffer, offset, layoutOf(ResidencyHostBlock).size >> 2);
  Atomics.store(words, H.op, RES_OP.EXIT);
  Atomics.store(words, H.seq, (Atomics.load(words, H.seq) + 1) | 0);
}

/** One install request's board image: rows [from, to) of an upload, then its failed keys (as FAILED rows). */
export interface InstallChunk {
  readonly rows: number;
  readonly keys: Uint8Array;
  readonly kinds: Uint8Array;
  readonly states: Uint8Array;
  readonly error: Uint8Array;
}

/**
 * Splits an upload into board images of at most `capacity` rows: its rows in order (FOUND or ABSENT), then
 * its failed keys (FAILED, no state). A row's bytes are copied as they are (the stride is the state size).
 */
export function installChunks(u: StateUpload, stateSize: number, capacity: number, grain: string): InstallChunk[] {
  if (u.stride !== stateSize) throw new GpuStateError(grain, 'GPU_STATE_BAD_UPLOAD', `rows of ${u.stride} bytes, the state layout has ${stateSize}`);
  if (u.bytes.length < u.keys.length * stateSize || u.found.length < u.keys.length) {
    throw new GpuStateError(grain, 'GPU_STATE_BAD_UPLOAD', `${u.keys.length} keys with ${u.bytes.length} state bytes and ${u.found.length} found flags`);
  }
  const failed = u.failed?.keys ?? [];
  const rowsIn = u.keys.length;
  const total = rowsIn + failed.length;
  const error = clippedUtf8(u.failed?.error ?? '', INSTALL_ERROR_BYTES);
  const out: InstallChunk[] = [];
  // Rows in index order, no per-row objects: a preload of a million states is one pass over its keys.
  for (let from = 0; from < total; from += capacity) {
    const to = Math.min(total, from + capacity);
    const n = to - from;
    const keys = new Uint8Array(8 * n);
    const kw = new DataView(keys.buffer);
    const kinds = new Uint8Array(n);
    // The upload's rows of this part as one block (an ABSENT row's bytes are not read by the kernel).
    const stateRows = Math.max(0, Math.min(to, rowsIn) - from);
    const states = new Uint8Array(stateSize * n);
    if (stateRows > 0) states.set(u.bytes.subarray(from * stateSize, (from + stateRows) * stateSize));
    for (let r = 0; r < n; r++) {
      const i = from + r;
      const k = i < rowsIn ? u.keys[i] : failed[i - rowsIn];
      if (typeof k !== 'number' || !Number.isSafeInteger(k)) {
        throw new GpuStateError(grain, 'GPU_STATE_BAD_UPLOAD', `key ${JSON.stringify(k)} is not a safe integer (the kernel holds integer keys)`);
      }
      const hi = Math.floor(k / 4294967296);
      kw.setUint32(8 * r, k - hi * 4294967296, true);
      kw.setInt32(8 * r + 4, hi | 0, true);
      kinds[r] = i >= rowsIn ? RES_ROW.FAILED : u.found[i] ? RES_ROW.FOUND : RES_ROW.ABSENT;
    }
    out.push({ rows: n, keys, kinds, states, error });
  }
  return out;
}

/** Load uploads installed as one (ResidencyHost.writeStates); `done` settles when their install did. */
interface LoadBatch {
  readonly uploads: StateUpload[];
  done: Promise<void>;
}

/** Whether a load upload may join others: its shape is right and its keys safe integers (else it fails alone). */
function joinable(u: StateUpload, stateSize: number): boolean {
  if (u.stride !== stateSize || u.bytes.length < u.keys.length * stateSize || u.found.length < u.keys.length)
    return false;
  for (let i = 0; i < u.keys.length; i++) if (!Number.isSafeInteger(u.keys[i])) return false;
  return true;
}

/** Joinable load uploads as one, rows in call order. */
function joined(list: readonly StateUpload[], stateSize: number): StateUpload {
  let n = 0;
  for (const u of list) n += u.keys.length;
  const keys = new Array<ActorKey>(n);
  const bytes = new Uint8Array(n * stateSize);
  const found = new Uint8Array(n);
  let at = 0;
  for (const u of list) {
    const m = u.keys.length;
    for (let i = 0; i < m; i++) keys[at + i] = u.keys[i]!;
    bytes.set(u.bytes.subarray(0, m * stateSize), at * stateSize);
    found.set(u.found.subarray(0, m), at);
    at += m;
  }
  return { keys, bytes, stride: stateSize, found, mode: 'load' };
}

export interface ResidencyHostOptions {
  /** How long a request may wait for the kernel's answer before failing (ms). */
  readonly timeoutMs: number;
}

export class ResidencyHost {
  private readonly words: Int32Array;
  private readonly f64: Float64Array;
  private readonly ring: Int32Array;
  /** The evict ring (pinned host memory): bytes, and its seq words. */
  private readonly evicts: Uint8Array;
  private readonly evictWords: Int32Array;
  private readonly evictShape: ReturnType<typeof evictRing>;
  private readonly layout: ReturnType<typeof residencyLayout>;
  private queue: Promise<unknown> = Promise.resolve();
  /**
   * While a deactivation is in flight, keys drained from the load ring wait here: a key deactivated by
   * it and then missed again must reach the host after its final state (evicted, then load: the order
   * the CPU backend's one channel gives). The ring is still drained, so no worker waits on a full ring.
   */
  private holding = false;
  /** The load uploads waiting to be installed together (writeStates), until their install starts. */
  private loads: LoadBatch | undefined;
  private held: ActorKey[] = [];
  /**
   * The kernel was freed (close): its pinned host block may be freed too (cuMemFreeHost once no kernel runs), and
   * a read of it then faults the process. Nothing reads it after close: polls find nothing, requests fail typed.
   */
  private closed = false;
  /** The request waiting for its answer (a diagnosis: how many polls it made, the doneSeq it last read). */
  waiting: { op: number; seq: number; attempt: number; doneSeq: number } | undefined;
  /** Rows taken off the evict ring so far (a poll's caller tells a poll that found rows from an empty one). */
  drained = 0;

  constructor(
    private readonly target: ResidencyTarget,
    private readonly device: ResidencyDevice,
    /** The pinned host part (residencyHostBytes), at `offset` of `buffer` (8-aligned). */
    buffer: ArrayBufferLike,
    offset: number,
    /** Pinned host memory for the staging batch's rows (residencyLayout(...).staging.bytes). */
    private readonly staging: Uint8Array,
    private readonly host: KernelStateHost,
    private readonly opts: ResidencyHostOptions,
  ) {
    const hb = residencyHostBytes();
    this.words = new Int32Array(buffer, offset, layoutOf(ResidencyHostBlock).size >> 2);
    this.f64 = new Float64Array(buffer, offset, layoutOf(ResidencyHostBlock).size >> 3);
    this.ring = new Int32Array(buffer, offset + hb.ringAt, (hb.evictAt - hb.ringAt) >> 2);
    this.evicts = new Uint8Array(buffer, offset + hb.evictAt, hb.bytes - hb.evictAt);
    this.evictWords = new Int32Array(buffer, offset + hb.evictAt, (hb.bytes - hb.evictAt) >> 2);
    this.evictShape = evictRing(target.stateSize);
    this.layout = residencyLayout(target);
    if (staging.byteLength < this.layout.staging.bytes) throw new RangeError(`residency: staging of ${staging.byteLength} bytes, ${this.layout.staging.bytes} needed`);
  }

  /** The kernel is being freed: from now on the pinned block is not read or written (see `closed`). */
  close(): void {
    this.closed = true;
  }

  /** Before the launch: every word zero (host memory may be reused). */
  init(): void {
    this.words.fill(0);
    this.ring.fill(0);
    this.evicts.fill(0);
  }

  /**
   * Keys the kernel posted since the last call (each once, in the order posted), handed to the plan's
   * `load`; returns how many. Called from the backend's poll of the kernel.
   */
  pollLoads(): number {
    if (this.closed) return 0;
    let tail = Atomics.load(this.words, H.loadTail) >>> 0;
    const keys: ActorKey[] = [];
    for (;;) {
      const at = (tail & (LOAD_RING_CAPACITY - 1)) * REQ;
      if ((Atomics.load(this.ring, at) >>> 0) !== ((tail + 1) >>> 0)) break;
      // The int64 key as decodeKeys reads it (hi signed, lo unsigned), without a typed array per key.
      keys.push(this.ring[at + 2]! * 4294967296 + (this.ring[at + 1]! >>> 0));
      tail = (tail + 1) >>> 0;
    }
    // The loads seen, then the evict ring: a key deactivated to make room and missed again had its row
    // published before its load, so the row is seen now and reaches `evicted` before the key reaches `load`.
    this.drainEvicted();
    if (keys.length) Atomics.store(this.words, H.loadTail, tail | 0);
    if (this.holding) {
      for (const k of keys) this.held.push(k);
      return keys.length;
    }
    this.release(keys);
    return keys.length;
  }

  /**
   * The actors workers deactivated to make room (the evict ring's published rows, in order) to the plan's
   * `evicted`, as one batch; returns how many. Called at every poll, before a deactivation's staging batch
   * is read, and by readDirty after its gather (a flush then holds every state evicted before it).
   */
  drainEvicted(): number {
    if (this.closed) return 0;
    const { capacity, stride } = this.evictShape;
    const size = this.target.stateSize;
    let tail = Atomics.load(this.words, H.evictTail) >>> 0;
    const start = tail;
    while ((Atomics.load(this.evictWords, ((tail & (capacity - 1)) * stride) >> 2) >>> 0) === ((tail + 1) >>> 0) && tail - start < capacity) tail = (tail + 1) >>> 0;
    const n = (tail - start) >>> 0;
    if (n === 0) return 0;
    const keyWords = new Uint32Array(2 * n);
    const bytes = new Uint8Array(n * size);
    const dirty = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      const at = (((start + i) >>> 0) & (capacity - 1)) * stride;
      const w = at >> 2;
      keyWords[2 * i] = this.evictWords[w + 1]!;
      keyWords[2 * i + 1] = this.evictWords[w + 2]!;
      dirty[i] = this.evictWords[w + 3]! !== 0 ? 1 : 0;
      if (size > 0) bytes.set(this.evicts.subarray(at + EVICT_HDR, at + EVICT_HDR + size), i * size);
    }
    // Copied out: the rows are the kernel's again.
    Atomics.store(this.words, H.evictTail, tail | 0);
    this.drained += n;
    this.host.evicted({ keys: decodeKeys(keyWords, n), bytes, stride: size, dirty });
    return n;
  }

  /** Keys held during a deactivation, then `keys`, to the plan's load (one call). */
  private release(keys: ActorKey[]): void {
    const all = this.held.length ? [...this.held, ...keys] : keys;
    this.held = [];
    if (all.length) this.host.load(all);
  }

  /** Deactivates the actors idle since `before` (see core BackendKernel.deactivateIdle); resolves to how many. */
  deactivateIdle(before: number, now: number): Promise<number> {
    this.loads = undefined; // uploads after this call install after it
    return this.serial(async () => {
      this.holding = true;
      try {
        await this.request(RES_OP.DEACTIVATE, () => {
          this.f64[HF.before] = before;
          this.f64[HF.now] = now;
        });
        // Rows deactivated to make room meanwhile first (none of them is in this batch: its keys were not held then).
        this.drainEvicted();
        this.checkOpen(RES_OP.DEACTIVATE);
        const count = Atomics.load(this.words, H.evicted) >>> 0;
        if (count > this.target.maxActors) throw new GpuStateError(this.target.grain, 'GPU_STATE_GATHER', `the kernel reported ${count} deactivated actors for ${this.target.maxActors} slots`);
        if (count > 0) this.host.evicted(this.readStaging(count));
        return count;
      } finally {
        this.holding = false;
        this.pollLoads();
      }
    });
  }

  /**
   * Installs an upload (see core StateUpload), in board-sized parts. Load uploads (no failed keys) that arrive
   * while the install before them waits join one install (`loads`): the write-behind hands one upload per poll
   * of the load ring (at most LOAD_RING_CAPACITY keys) and each install is a request every worker answers, so a
   * burst of cold keys costs a request per board, not one per poll. Requests keep the order of the calls: an
   * upload joins only a batch nothing else was queued behind.
   */
  writeStates(u: StateUpload): Promise<void> {
    if (u.mode !== 'load' || u.failed || !joinable(u, this.target.stateSize)) {
      this.loads = undefined;
      return this.serial(() => this.install(u));
    }
    const open = this.loads;
    if (open) {
      open.uploads.push(u);
      return open.done;
    }
    const batch: LoadBatch = { uploads: [u], done: Promise.resolve() };
    this.loads = batch;
    batch.done = this.serial(() => {
      if (this.loads === batch) this.loads = undefined;
      return this.install(batch.uploads.length === 1 ? u : joined(batch.uploads, this.target.stateSize));
    });
    return batch.done;
  }

  /** One upload's install requests, in board-sized parts (one request at a time: see serial). */
  private async install(u: StateUpload): Promise<void> {
    const chunks = installChunks(u, this.target.stateSize, this.layout.installCapacity, this.target.grain);
    const b = this.layout.boardAt;
    const board = this.layout.board;
    for (const c of chunks) {
      this.checkOpen(RES_OP.INSTALL);
      this.device.copyIn(c.keys, b + board.keysAt);
      this.device.copyIn(c.kinds, b + board.kindsAt);
      if (c.states.length) this.device.copyIn(c.states, b + board.statesAt);
      if (c.error.length) this.device.copyIn(c.error, b + board.errorAt);
      this.device.sync();
      await this.request(RES_OP.INSTALL, () => {
        Atomics.store(this.words, H.rows, c.rows);
        Atomics.store(this.words, H.mode, u.mode === 'preload' ? RES_MODE.PRELOAD : RES_MODE.LOAD);
        Atomics.store(this.words, H.errorLength, c.error.length);
        // Sent back with the text (core turn-error.ts STATE_LOAD): the host finds the StateLoadError by it.
        Atomics.store(this.words, H.failureId, u.failed?.failure ?? 0);
      });
    }
  }

  private serial<T>(f: () => Promise<T>): Promise<T> {
    const next = this.queue.then(f);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Writes a request (op, then `fill`'s words, then seq last) and waits until every worker finished it. */
  /** A typed failure once the kernel was freed (no request words are written or read then). */
  private checkOpen(op: number): void {
    if (!this.closed) return;
    const what = op === RES_OP.INSTALL ? 'state install' : 'deactivation';
    throw new GpuStateError(this.target.grain, 'GPU_STATE_UNAVAILABLE', `the kernel was disposed during a ${what}`);
  }

  private async request(op: number, fill: () => void): Promise<void> {
    this.checkOpen(op);
    Atomics.store(this.words, H.op, op);
    fill();
    const seq = ((Atomics.load(this.words, H.seq) >>> 0) + 1) >>> 0;
    Atomics.store(this.words, H.seq, seq | 0);
    const t0 = performance.now();
    const w = { op, seq, attempt: 0, doneSeq: 0 };
    this.waiting = w;
    for (let attempt = 0; ; attempt++) {
      this.checkOpen(op);
      w.attempt = attempt;
      w.doneSeq = Atomics.load(this.words, H.doneSeq) >>> 0;
      if (w.doneSeq === seq) {
        this.waiting = undefined;
        return;
      }
      const f = this.device.fault();
      if (f) throw new GpuStateError(this.target.grain, 'GPU_STATE_UNAVAILABLE', `the kernel faulted during a ${op === RES_OP.INSTALL ? 'state install' : 'deactivation'}`, { cause: f });
      if (performance.now() - t0 > this.opts.timeoutMs) {
        throw new GpuStateError(this.target.grain, 'GPU_STATE_UNAVAILABLE', `the kernel did not answer a ${op === RES_OP.INSTALL ? 'state install' : 'deactivation'} within ${this.opts.timeoutMs} ms`);
      }
      await this.device.pause(attempt);
    }
  }

  /** The staging batch's `count` rows: keys, final states and dirty marks (a batch of its own). */
  private readStaging(count: number): EvictedStates {
    const s = this.layout.staging;
    const at = this.layout.stagingAt;
    const size = this.target.stateSize;
    const keyBytes = this.staging.subarray(s.keysAt, s.keysAt + 8 * count);
    const stateBytes = this.staging.subarray(s.statesAt, s.statesAt + size * count);
    const flags = this.staging.subarray(s.flagsAt, s.flagsAt + count);
    this.device.copyOut(keyBytes, at + s.keysAt);
    if (size > 0) this.device.copyOut(stateBytes, at + s.statesAt);
    this.device.copyOut(flags, at + s.flagsAt);
    this.device.sync();
    const keys = decodeKeys(new Uint32Array(keyBytes.buffer, keyBytes.byteOffset, 2 * count), count);
    return { keys, bytes: stateBytes.slice(), stride: size, dirty: flags.slice() };
  }
}
