import type { KernelOptions, LaneLoadPlan } from '@ringgrain/core/backend';
import type { PeerInfo } from './memory.ts';
import type { TimerClockInit } from './timer-clock.ts';

/** What a pool thread needs to consume one lane of a kernel. */
export interface LaneInit {
  /** The pool's id of the kernel (one per createKernel; a relaunched grain class gets a new one). */
  readonly kernelId: number;
  readonly grainId: number;
  /** Grain classes on this backend by id (null where a class lives on another backend). */
  readonly grains: ReadonlyArray<{ readonly name: string; readonly module: string } | null>;
  readonly options: KernelOptions;
  readonly sab: SharedArrayBuffer;
  readonly controlOffset: number;
  /** The lane's column-image area (core ImageArea), when the kernel takes images. */
  readonly imageOffset?: number;
  readonly inboundOffset: number;
  readonly replyOffset: number;
  readonly k2kOffset: number;
  /** The kernel's overflow region, the lane (= the pool thread's index) and the kernel's lane count. */
  readonly overflowOffset: number;
  readonly lane: number;
  readonly lanes: number;
  /** The lane's previous thread died: take over its rings and counters mid-run (Dispatcher.begin). */
  readonly resume?: boolean;
  /** Persistent state (core KernelPlan.persistence, minus the host's callbacks, which stay on the host). */
  readonly persistence?: {
    readonly load: boolean;
    readonly idleMs: number | undefined;
    readonly laneLoad?: LaneLoadPlan;
  };
  /** The kernel's timer clock words (core KernelPlan.timers), when its class declares timers. */
  readonly timers?: TimerClockInit;
  /** In a cluster: per K2K target class by id, this silo's partition ownership (core KernelPlan.ownership). */
  readonly ownership?: ReadonlyArray<SharedArrayBuffer | undefined>;
  /** The host takes K2K sends to keys another silo owns (core KernelPlan.remoteSend): posted as 'remoteSends'. */
  readonly remoteSends?: boolean;
}

/** Given once, when the thread starts. */
export interface ThreadInit {
  readonly index: number;
  /** The thread's doorbell: words[index] of this buffer (memory.ts Doorbell). */
  readonly doorbell: { readonly buffer: SharedArrayBuffer; readonly index: number; readonly parked?: number };
  readonly replySignal: SharedArrayBuffer;
  /**
   * The longest an idle thread spins before it parks (pool-worker.ts run: adaptive spinning). The pool
   * gives SPIN_MIN_MS where its threads outnumber the cores: a spinning thread there takes a core from one
   * with work.
   */
  readonly spinMaxMs: number;
  /** Pause steps between two looks at the lanes while spinning idle (CpuBackendOptions.spinPause; 0: none). */
  readonly spinPause?: number;
}

/**
 * A pool thread's own figures, Int32 words from its doorbell word (on the doorbell block's second cache
 * line: producers read the first on every send). Written only by the thread, when it parks and wakes.
 * parks: times it slept; woken: sleeps a producer's ring ended (the others timed out: a timer, a held-K2K
 * retry, the 1 s check); wokenSoon: of those, ended within SPIN_MAX_MS (a wait the spin would have caught);
 * spinUs: its idle spin window now (µs); preempted: idle spins the OS cut into (the window fell back).
 */
/** An idle pool thread spins at least this long (ms) before it parks, and at most SPIN_MAX_MS (pool-worker.ts run). */
export const SPIN_MIN_MS = 0.05;
export const SPIN_MAX_MS = 1;

export const THREAD_STAT = { parks: 16, woken: 17, wokenSoon: 18, spinUs: 19, preempted: 20 } as const;

/**
 * A word of the doorbell block a pool thread writes as its last JS (its process 'exit' event: process.exit
 * in a handler, an uncaught error): its exit code + 1. The Worker's own 'exit' event comes only once the
 * thread is torn down, seconds later on a loaded machine, while an ask waiting on the lane would be judged
 * a stalled heartbeat; the host reads this word in its health checks and treats the thread as dead at once
 * (after that event the thread runs no more JS, so nothing of it touches the rings again).
 */
export const THREAD_EXITING = 24;

/** Control-plane messages between the host and a pool thread (never per data message). */
export type ToThread =
  | { type: 'add'; lane: LaneInit; peers: PeerInfo[] }
  | { type: 'remove'; kernelId: number }
  | { type: 'peers'; peers: PeerInfo[] }
  | { type: 'inspect'; id: number; kernelId: number; key: number | string }
  | { type: 'state'; kernelId: number; op: StateOp };

export type FromThread =
  | { type: 'ready' }
  | { type: 'added'; kernelId: number }
  | { type: 'removed'; kernelId: number }
  | { type: 'inspect'; id: number; value: unknown }
  | { type: 'fatal'; kernelId: number; message: string; code?: string }
  | { type: 'state'; kernelId: number; out: StateOut }
  /**
   * K2K sends to keys another silo owns (core KernelPlan.remoteSend), in send order, one message per pass
   * of the thread: `sends` flat, REMOTE_FIELDS numbers a send (kernelId, target, index of its method name
   * in `methods`, key (NaN: the next of `keys`, string keys), end, corr); each payload is its schema bytes
   * in `bytes`, from the send before it's end to its own. Typed arrays, transferred: no value by value
   * clone of the batch.
   */
  | { type: 'remoteSends'; sends: Float64Array; methods: string[]; keys: string[]; bytes: Uint8Array };

/** Numbers a send takes in a 'remoteSends' batch. */
export const REMOTE_FIELDS = 6;

/** A host request on a lane's actor states (write-behind), answered by a `done` with the same id. */
export type StateOp =
  | {
      readonly op: 'install';
      readonly id: number;
      readonly mode: 'load' | 'preload';
      readonly keys: ReadonlyArray<number | string>;
      readonly bytes: Uint8Array;
      readonly found: Uint8Array;
      readonly failed?: {
        readonly keys: ReadonlyArray<number | string>;
        readonly error: string;
        readonly failure?: number;
      };
    }
  | { readonly op: 'dirty'; readonly id: number }
  | { readonly op: 'collect'; readonly id: number; readonly before: number; readonly now: number };

/** What a lane reports about its actor states: misses to load, deactivated actors, answers to StateOps. */
export type StateOut =
  | { readonly out: 'load'; readonly keys: Array<number | string> }
  | { readonly out: 'loaded'; readonly keys: Array<number | string>; readonly versions: Float64Array }
  | {
      readonly out: 'evicted';
      readonly keys: Array<number | string>;
      readonly bytes: Uint8Array;
      readonly dirty: Uint8Array;
    }
  | {
      readonly out: 'done';
      readonly id: number;
      readonly keys?: Array<number | string>;
      readonly bytes?: Uint8Array;
      readonly count?: number;
    };
