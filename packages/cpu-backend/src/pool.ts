import os from 'node:os';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { wakeIfParked, type PeerInfo, type Doorbell } from './memory.ts';
import type { RemoteSend } from '@ringgrain/core/backend';
import {
  REMOTE_FIELDS,
  SPIN_MAX_MS,
  SPIN_MIN_MS,
  THREAD_EXITING,
  THREAD_STAT,
  type FromThread,
  type LaneInit,
  type StateOp,
  type StateOut,
  type ThreadInit,
  type ToThread,
} from './protocol.ts';

const WORKER_URL = new URL('./worker-entry.mjs', import.meta.url);
/**
 * Int32 words between two threads' doorbells (128 bytes: no false sharing). A thread's block holds its
 * doorbell word and, beside it, its parked flag (memory.ts wakeIfParked).
 */
const DOORBELL_STRIDE = 32;
const PARKED_WORD = 1;

/** Parks and wakes of the pool's threads, summed (protocol.ts THREAD_STAT): how often a hand-off paid a wake-up. */
export interface PoolStats {
  readonly parks: number;
  readonly woken: number;
  readonly wokenSoon: number;
  /** Idle spins the OS cut into (the machine had more runnable threads than cores). */
  readonly preempted: number;
  /** Each thread's idle spin window now (µs). */
  readonly spinUs: number[];
}

/** Inspector flags are not for workers; loader flags do not reach them on Node 20 (worker-entry.mjs). */
function workerExecArgv(): string[] {
  // Per-process flags (--expose-gc, the inspector) make `new Worker` throw ERR_WORKER_INVALID_EXEC_ARGV.
  return process.execArgv.filter((a) => !a.startsWith('--inspect') && !/^--expose[-_]gc$/.test(a));
}

/** Why a pool thread ended: its exit code, or the error that ended it, and whether the pool ended it. */
export interface ThreadDeath {
  readonly detail: string;
  readonly cause?: Error;
}

interface Waiter<T> {
  resolve: (v: T) => void;
  reject: (e: Error) => void;
}

/** Host side of one pool thread. A thread that dies is replaced at once; `generation` counts them. */
export class PoolThread {
  generation = 0;
  lastDeath: ThreadDeath | undefined;
  private worker: Worker | undefined;
  private port: MessagePort | undefined;
  private ready: Promise<void> | undefined;
  private readonly adds = new Map<number, Waiter<void>>();
  private readonly removes = new Map<number, Waiter<void>>();
  private readonly inspects = new Map<number, (v: unknown) => void>();
  private nextInspect = 1;
  private lastError: Error | undefined;

  constructor(
    private readonly pool: ThreadPool,
    readonly index: number,
  ) {}

  get doorbell(): Doorbell {
    return {
      buffer: this.pool.doorbells,
      index: this.index * DOORBELL_STRIDE,
      parked: this.index * DOORBELL_STRIDE + PARKED_WORD,
    };
  }

  /**
   * Whether the thread said it is exiting (protocol.ts THREAD_EXITING) before the Worker's 'exit' event came:
   * then it is dead now (replaced at once, as on that event, which is ignored when it comes).
   */
  checkExiting(): void {
    const worker = this.worker;
    if (!worker) return;
    const code = Atomics.load(this.pool.words, this.index * DOORBELL_STRIDE + THREAD_EXITING);
    if (code !== 0) this.died(worker, code - 1);
  }

  /** Starts the thread if it is not running; resolves once it reads its port. */
  start(): Promise<void> {
    if (this.ready) return this.ready;
    Atomics.store(this.pool.words, this.index * DOORBELL_STRIDE + THREAD_EXITING, 0);
    const { port1, port2 } = new MessageChannel();
    const init: ThreadInit = {
      index: this.index,
      doorbell: this.doorbell,
      replySignal: this.pool.replySignal,
      spinMaxMs: this.pool.spinMaxMs,
      spinPause: this.pool.spinPause,
    };
    const worker = new Worker(WORKER_URL, {
      workerData: { init, port: port2 },
      transferList: [port2],
      execArgv: workerExecArgv(),
      name: `ringgrain:cpu-${this.index}`,
    });
    this.worker = worker;
    this.port = port1;
    this.lastError = undefined;
    port1.unref();
    this.ready = new Promise<void>((resolve, reject) => {
      port1.on('message', (m: FromThread) => {
        if (m.type === 'ready') resolve();
        else if (m.type === 'added') this.settle(this.adds, m.kernelId);
        else if (m.type === 'removed') this.settle(this.removes, m.kernelId);
        else if (m.type === 'state') this.pool.stateOut.get(m.kernelId)?.(this.index, m.out);
        else if (m.type === 'remoteSends') this.remoteSends(m);
        else if (m.type === 'fatal')
          this.settle(this.adds, m.kernelId, Object.assign(new Error(m.message), m.code ? { code: m.code } : {}));
        else if (m.type === 'inspect') {
          this.inspects.get(m.id)?.(m.value);
          this.inspects.delete(m.id);
        }
      });
      worker.on('error', (e) => {
        // A thread already found dead by checkExiting() has a successor: its error is not the successor's.
        if (worker === this.worker) this.lastError = e;
        reject(e);
      });
      worker.on('exit', (code) => {
        reject(new Error(`exit code ${code} before it was ready`));
        this.died(worker, code);
      });
    });
    return this.ready;
  }

  /**
   * A pass's cross-silo K2K sends (protocol.ts 'remoteSends'), handed to each kernel's taker in order, each
   * payload a view of the batch's bytes (its schema bytes: routed as they are).
   */
  private remoteSends(m: Extract<FromThread, { type: 'remoteSends' }>): void {
    const takers = this.pool.remoteSend;
    const { sends: s, methods, keys, bytes } = m;
    let start = 0;
    let k = 0;
    for (let i = 0; i + REMOTE_FIELDS <= s.length; i += REMOTE_FIELDS) {
      const end = s[i + 4]!;
      const key = s[i + 3]!;
      takers.get(s[i]!)?.(
        s[i + 1]!,
        methods[s[i + 2]!]!,
        Number.isNaN(key) ? keys[k++]! : key,
        bytes.subarray(start, end),
        s[i + 5]!,
        true,
      );
      start = end;
    }
  }

  private settle(map: Map<number, Waiter<void>>, kernelId: number, error?: Error): void {
    const w = map.get(kernelId);
    map.delete(kernelId);
    if (error) w?.reject(error);
    else w?.resolve();
  }

  private died(worker: Worker, code: number): void {
    if (worker !== this.worker) return;
    this.worker = undefined;
    this.port?.close();
    this.port = undefined;
    this.ready = undefined;
    this.generation++;
    const e = this.lastError;
    this.lastDeath = {
      detail: e ? `${e.message} (exit code ${code})` : `exit code ${code}`,
      ...(e ? { cause: e } : {}),
    };
    const err = new Error(`pool thread ${this.index} ended: ${this.lastDeath.detail}`);
    for (const map of [this.adds, this.removes]) {
      for (const w of map.values()) w.reject(err);
      map.clear();
    }
    for (const r of this.inspects.values()) r(undefined);
    this.inspects.clear();
    // Replace it at once, so kernels launched from now on have all their lanes.
    this.start().catch(() => undefined);
  }

  private post(m: ToThread): void {
    this.port?.postMessage(m);
    this.pool.ring(this.index);
  }

  /** A state request for a kernel's lane on this thread (write-behind); answered through ThreadPool.stateOut. */
  state(kernelId: number, op: StateOp): void {
    this.post({ type: 'state', kernelId, op });
  }

  /** Adds a kernel's lane to the thread's loop; rejects with the thread's error (e.g. a module that does not load). */
  async add(lane: LaneInit, peers: PeerInfo[]): Promise<void> {
    await this.start();
    return new Promise<void>((resolve, reject) => {
      this.adds.set(lane.kernelId, { resolve, reject });
      this.post({ type: 'add', lane, peers });
    });
  }

  /**
   * Removes a kernel's lane; false when the thread did not answer within `timeoutMs` (a handler that never returns).
   */
  async remove(kernelId: number, timeoutMs: number): Promise<boolean> {
    if (!this.worker) return true;
    const done = new Promise<void>((resolve, reject) => {
      this.removes.set(kernelId, { resolve, reject });
      this.post({ type: 'remove', kernelId });
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs)));
    try {
      return await Promise.race([
        done.then(
          () => true,
          () => true,
        ),
        late,
      ]);
    } finally {
      clearTimeout(timer);
      this.removes.delete(kernelId);
    }
  }

  peers(peers: PeerInfo[]): void {
    this.post({ type: 'peers', peers });
  }

  inspect(kernelId: number, key: number | string): Promise<unknown> {
    if (!this.worker) return Promise.resolve(undefined);
    const id = this.nextInspect++;
    return new Promise((resolve) => {
      this.inspects.set(id, resolve);
      this.post({ type: 'inspect', id, kernelId, key });
    });
  }

  /** Ends the thread and starts a fresh one (its lanes of every kernel are gone: those kernels fault). */
  async restart(reason: string): Promise<void> {
    const w = this.worker;
    if (!w) return;
    this.lastError = new Error(reason);
    await w.terminate();
  }

  /** Ends the thread for good (the backend is disposed): not a death, no replacement. */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.port?.close();
    this.port = undefined;
    this.ready = undefined;
    if (w) await w.terminate();
  }
}

/**
 * The CPU backend's worker threads: `size` threads, each consuming one lane of every CPU kernel, so a
 * grain class's actors spread over all of them and grain classes share them. Each thread has a
 * doorbell word it parks on.
 */
export class ThreadPool {
  readonly doorbells: SharedArrayBuffer;
  readonly threads: readonly PoolThread[];
  /** Per kernel, where its lanes' state reports go (thread index = lane). */
  readonly stateOut = new Map<number, (lane: number, out: StateOut) => void>();
  /** Per kernel id, the host's taker of K2K sends for other silos (core KernelPlan.remoteSend). */
  readonly remoteSend = new Map<number, RemoteSend>();
  readonly words: Int32Array;
  /** Adaptive spinning only where every pool thread can have a core of its own (ThreadInit.spinMaxMs). */
  readonly spinMaxMs: number;

  constructor(
    readonly size: number,
    readonly replySignal: SharedArrayBuffer,
    spinMaxMs?: number,
    /** Pause steps between an idle thread's looks at its lanes (CpuBackendOptions.spinPause). */
    readonly spinPause = 0,
  ) {
    this.spinMaxMs = spinMaxMs ?? (size <= os.availableParallelism() ? SPIN_MAX_MS : SPIN_MIN_MS);
    this.doorbells = new SharedArrayBuffer(size * DOORBELL_STRIDE * 4);
    this.words = new Int32Array(this.doorbells);
    this.threads = Array.from({ length: size }, (_, i) => new PoolThread(this, i));
  }

  /** Wakes thread `i` (it may be parked). */
  ring(i: number): void {
    Atomics.add(this.words, i * DOORBELL_STRIDE, 1);
    Atomics.notify(this.words, i * DOORBELL_STRIDE);
  }

  /** Wakes thread `i` only if it parked (after a message was published for it). */
  wake(i: number): void {
    wakeIfParked(this.words, i * DOORBELL_STRIDE, i * DOORBELL_STRIDE + PARKED_WORD);
  }

  /** The threads' park and wake counts since the pool started (a replaced thread's count on). */
  stats(): PoolStats {
    const w = this.words;
    let parks = 0;
    let woken = 0;
    let wokenSoon = 0;
    let preempted = 0;
    const spinUs: number[] = [];
    for (let i = 0; i < this.size; i++) {
      const at = i * DOORBELL_STRIDE;
      parks += Atomics.load(w, at + THREAD_STAT.parks) >>> 0;
      woken += Atomics.load(w, at + THREAD_STAT.woken) >>> 0;
      wokenSoon += Atomics.load(w, at + THREAD_STAT.wokenSoon) >>> 0;
      preempted += Atomics.load(w, at + THREAD_STAT.preempted) >>> 0;
      spinUs.push(Atomics.load(w, at + THREAD_STAT.spinUs));
    }
    return { parks, woken, wokenSoon, preempted, spinUs };
  }

  async close(): Promise<void> {
    await Promise.all(this.threads.map((t) => t.close()));
  }
}
