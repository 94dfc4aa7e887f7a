import type { AnyGrainClass, GrainDef } from './grain.ts';
import type { Logger } from 'pino';
import type { LaneReaderSpec } from './store/types.ts';

/**
 * The contract between core and a backend. Core owns routing, encoding, the lifecycle state machine and
 * pending asks; a backend owns memory, the consumer loop (a worker thread, a CUDA kernel) and its
 * health. Core never imports a backend: a system is given backend instances. What a backend must do,
 * as a checklist, and the path of a message through each backend: docs/architecture.md.
 */
export interface RegionRef {
  readonly buffer: ArrayBufferLike;
  /** Byte offset of the region inside `buffer` (128-byte aligned). */
  readonly offset: number;
}

export interface KernelOptions {
  /** Bytes per ring slot, header included (multiple of 16). */
  readonly slotSize: number;
  /** Slots in the host → kernel ring (power of two). */
  readonly ringCapacity: number;
  /** Slots in each kernel → host reply ring (power of two). */
  readonly replyCapacity: number;
  /** Most actors (distinct keys) the kernel's state table holds. */
  readonly maxActors: number;
  /**
   * Iteration budget of translated loops on the GPU: past it the turn fails with TURN_BUDGET. The CPU
   * backend runs handlers as JavaScript and does not bound them; a turn that never ends there stalls the
   * kernel's heartbeat and the system declares the kernel faulted (heartbeatTimeoutMs).
   */
  readonly turnBudget: number;
}

export interface KernelPlan {
  /** Index of this grain class in `grains`: the id used in slot headers. */
  readonly grainId: number;
  readonly grain: GrainDef;
  /**
   * The class the system registered for `grain` (its handler methods). A backend that runs handlers in
   * this process uses it; one that runs them elsewhere imports `grain.module` there. Absent in a plan
   * rebuilt on the other side of a process boundary (the isolated GPU host).
   */
  readonly cls?: AnyGrainClass;
  /** Every grain class placed on this backend, by id (K2K targets); undefined entries live elsewhere. */
  readonly grains: ReadonlyArray<GrainDef | undefined>;
  readonly options: KernelOptions;
  readonly logger: Logger;
  /**
   * Present when the grain class has storage or idle collection (`register(Grain, { storage, idleMs })`):
   * the kernel keeps dirty marks, parks the first messages of an actor it does not hold until the host
   * uploads its stored state, and deactivates idle actors. A backend that cannot must refuse the plan
   * (createKernel rejects) rather than run turns on states that were never loaded.
   */
  readonly persistence?: PersistencePlan;
  /**
   * Present when the grain class declares timers (`timers` in its spec): the kernel keeps a per-actor
   * timer table and runs each due tick as a turn, from its own lanes. A backend that cannot must refuse
   * the plan (the system then fails the class with TimersUnsupportedError) rather than drop ticks.
   */
  readonly timers?: TimerPlan;
  /**
   * In a cluster: per K2K target class (by id, as `grains`), this silo's ownership of its partitions
   * (cluster/ownership.ts, written by the router). A K2K send to a key not owned here must never run
   * here: it goes to `remoteSend` (a kernel without one refuses it: ClusterK2KUnsupportedError).
   * Absent outside a cluster: every key is local.
   */
  readonly ownership?: ReadonlyArray<SharedArrayBuffer | undefined>;
  /**
   * In a cluster: where a K2K send (ctx.send, ctx.forward) to a key not owned here goes: to the host,
   * which routes it to the owner (the target class by id, method, key, request payload, the forwarded
   * ask's corr or 0). Called in send order per lane (FIFO per sender → actor).
   */
  readonly remoteSend?: RemoteSend;
}

/**
 * A K2K send for another silo, handed to the host (KernelPlan.remoteSend): a tell (corr 0), or a forward
 * of the host's ask `corr` (ctx.forward: the reply obligation moves with it, and the kernel never replies).
 * `encoded`: `payload` is the request's schema bytes as the kernel encoded them (a Uint8Array the host
 * keeps), routed as they are instead of encoded again; otherwise it is the request object.
 */
export type RemoteSend = (
  target: number,
  method: string,
  key: number | string,
  payload: unknown,
  corr: number,
  encoded?: boolean,
) => void;

/**
 * Where a kernel's timers read the time. 'kernel': its own clock, in ms since the epoch (a worker reads
 * Date.now(); a GPU kernel would read its global timer): no host traffic at all. 'host': the time the
 * host last published with `publishTime` (the system was given an injected clock, so tests step timers
 * deterministically).
 */
export interface TimerPlan {
  readonly clock: 'kernel' | 'host';
}

/** A kernel's timer figures, summed over its lanes. */
export interface TimerStats {
  /** Ticks run as turns (u32, wrapping), and those whose handler threw (each also a tellError). */
  readonly ticks: number;
  readonly tickErrors: number;
  /** Timers running now (over every actor). */
  readonly armed: number;
}

/** An actor key as the kernel sees it. */
export type ActorKey = number | string;

/**
 * Actors' states in the state layout, one row per key: row i is `bytes[i * stride, (i + 1) * stride)`.
 * A batch a kernel hands to the host (readDirty, evicted) gives its `bytes` away: the host keeps views
 * into them as the rows' unwritten states, so the kernel must not write that memory again.
 */
export interface StateBatch {
  readonly keys: readonly ActorKey[];
  readonly bytes: Uint8Array;
  /** The state layout's size (`layoutOf(grain.state).size`). */
  readonly stride: number;
}

/** States written into actor slots before any of their turns run (answers to `load`, preloads). */
export interface StateUpload extends StateBatch {
  /** Per row, 1 when the row holds a stored state; 0: the actor starts from a zeroed state. */
  readonly found: Uint8Array;
  /**
   * 'load' answers the kernel's `load` request: the actors' waiting messages run after their onActivate.
   * 'preload' installs only actors the kernel does not hold (a held one is newer), while there is room.
   */
  readonly mode: 'load' | 'preload';
  /** Keys whose load failed: their waiting messages are rejected with this text, the actor stays out. */
  readonly failed?: {
    readonly keys: readonly ActorKey[];
    readonly error: string /** StateLoadError.failureId */;
    readonly failure?: number;
  };
}

/** Actors a kernel deactivated (idle, or to make room): final states after onDeactivate. */
export interface EvictedStates extends StateBatch {
  /** Per row, 1 when the state changed since it was last read out (it must be written). */
  readonly dirty: Uint8Array;
}

/** What a kernel tells the host about actor residency (called on the host's thread, in the kernel's order). */
export interface KernelStateHost {
  /** The kernel got messages for actors it does not hold: upload their stored states (writeStates, mode 'load'). */
  load(keys: readonly ActorKey[]): void;
  /** The kernel deactivated these actors and freed their slots. */
  evicted(batch: EvictedStates): void;
  /**
   * The kernel loaded these actors itself (PersistencePlan.laneLoad) at these stored versions (0: none
   * stored). Reported after their turns ran, before any later batch of theirs (one channel, in order).
   */
  laneLoaded(keys: readonly ActorKey[], versions: Float64Array): void;
}

export interface PersistencePlan {
  /** Park an absent actor's messages until the host uploads its state (true with storage). */
  readonly load: boolean;
  /** Deactivate actors whose last turn is older than this (message clock ms), and when the table is full. */
  readonly idleMs: number | undefined;
  readonly host: KernelStateHost;
  /**
   * The kernel's consumers may load an actor's stored state themselves on its first message (no hop
   * through the host) with this reader, while `guard` (write-behind.ts LANE_GUARD) says the store holds
   * every state the host has seen: no row waiting to be written, every row a consumer handed over absorbed.
   */
  readonly laneLoad?: LaneLoadPlan;
}

export interface LaneLoadPlan {
  readonly reader: LaneReaderSpec;
  /** Int32 words in shared memory, indexed by LANE_GUARD (write-behind.ts). */
  readonly guard: Int32Array;
}

/** One consumer of a kernel: its control block and rings. Formats: protocol.ts (ControlBlock, RingHeader). */
export interface LaneMemory {
  readonly control: RegionRef;
  /** Host → lane ring; the host is its only producer. */
  readonly inbound: RegionRef;
  /** Lane → host rings; the host is the only consumer of each. */
  readonly replies: readonly RegionRef[];
  /**
   * Optional: where the lane takes tellMany's column images (protocol.ts SlotFlag.IMAGE, IMAGE_AREA_HEADER).
   * Absent: core sends every row as a slot.
   */
  readonly images?: ImageArea;
}

export interface ImageArea {
  readonly region: RegionRef;
  readonly buffers: number;
  /** Bytes per buffer (a multiple of 8). */
  readonly bufferBytes: number;
}

/**
 * Shared memory a kernel exposes to the host: one lane per consumer (most backends have one; the CPU
 * backend's pool has one per thread). The host sends a message for `key` into lane
 * `laneOfKey(key, lanes.length)` (lanes.ts); it writes every control request into every lane's control
 * block and takes the kernel's state as acknowledged when every lane acknowledged it; counters add up.
 */
export interface KernelMemory {
  readonly lanes: readonly LaneMemory[];
}

export interface KernelHealth {
  /** A fault the backend detected (worker died, GPU error, heartbeat stopped); undefined if healthy. */
  readonly fault: Error | undefined;
  /**
   * Per lane, where a backend restarts a lane's consumer after it died (the CPU pool): how many times it
   * did, and why the last time. The kernel stays up; a restart lost the lane's turn in flight (counted as
   * rejected) and the in-memory state of the lane's actors. Core fails the asks waiting on that lane
   * with `error` (their outcome is unknown) and emits `laneRestart`.
   */
  readonly laneRestarts?: ReadonlyArray<LaneRestart>;
  /**
   * Per lane, whether its consumer is being started again (a restarted lane's new thread loading its
   * modules): no heartbeat is due from it yet, so asks waiting on it are not a stall. Seconds on a loaded
   * machine; the kernel's askTimeoutMs still bounds every ask.
   */
  readonly starting?: ReadonlyArray<boolean>;
}

export interface LaneRestart {
  readonly restarts: number;
  readonly error: Error | undefined;
}

/** K2K messages waiting for room in a full partition queue (a backend's overflow area), per target kernel. */
export interface OverflowStats {
  /** Messages the area holds at most. */
  readonly capacity: number;
  /** Messages waiting there now, and the most there ever were. */
  readonly inUse: number;
  readonly highWater: number;
  /** Sends that went there (u32, wrapping), and sends refused because it was full. */
  readonly overflowed: number;
  readonly exhausted: number;
}

export interface BackendKernel {
  readonly memory: KernelMemory;
  /** Start the consumer loop (idle until the control block asks for ACTIVE); resolves once it runs. */
  start(): Promise<void>;
  /** The host published to lane `lane`'s inbound ring or wrote its control block: wake a parked consumer. */
  wake(lane: number): void;
  /** Called after the loop acknowledged STOP (or timed out): stop everything and free all memory. */
  dispose(): Promise<void>;
  health(): KernelHealth;
  /** The kernel's K2K overflow area, where the backend has one (read off the message path). */
  overflow?(): OverflowStats | undefined;
  /**
   * Read after `dispose` resolved (no peer writes into this kernel's K2K rings any more): K2K messages
   * sent to this kernel that it never took, left in its K2K rings. Core counts them received and
   * rejected, so K2K sent = received still holds after terminate.
   */
  k2kLeft?(): number;
  /**
   * True when the kernel's K2K sends honour `KernelPlan.ownership` (a send to a key this silo does not
   * own is refused). A clustered system warns about a kernel without it: its K2K to another silo's key
   * would activate that key here too.
   */
  readonly checksOwnership?: boolean;
  /** Plain copy of an actor's state, or undefined if the key was never activated (debugging, tests). */
  inspect?(key: number | string): Promise<unknown>;
  /**
   * State access for write-behind (present when the plan had `persistence`). Each call is ordered with
   * the kernel's turns (between them) and may be called after STOP, before dispose.
   * `readDirty`: the states of actors changed since they were last read out, and their marks cleared in
   * the same step (a turn after it marks the actor again).
   */
  readDirty?: (() => Promise<StateBatch>) | undefined;
  /** Writes states into actor slots before any turn of theirs runs (see StateUpload). */
  writeStates?: ((upload: StateUpload) => Promise<void>) | undefined;
  /**
   * Deactivates every actor whose last turn's clock is before `before` (Infinity: all; then messages still
   * waiting for a load are rejected): onDeactivate runs with ctx.now() = `now`, the final states go to the
   * plan's `evicted`, the slots are freed. Resolves to how many.
   */
  deactivateIdle?: ((before: number, now: number) => Promise<number>) | undefined;
  /**
   * Core deactivates this kernel's actors and writes their states while it still runs, before STOP at the
   * terminate of an active kernel (deactivateIdle with Number.MAX_VALUE: actors waiting for a load stay), then asks the
   * stopped kernel only for what arrived since. Set by a backend whose stopped kernel serves the deactivation
   * in a mode of its own (CUDA's RESIDENT), so the states are written before the kernel is asked to stop.
   */
  readonly deactivateBeforeStop?: boolean | undefined;
  /** Timer figures (present when the plan had `timers`). */
  timerStats?: (() => TimerStats) | undefined;
  /**
   * With `timers.clock === 'host'`: the timer clock of every lane becomes `now` (a lane runs the ticks due
   * by then at its next step). Returns at once; `timersCaughtUp` says when every lane has run them.
   */
  publishTime?: ((now: number) => void) | undefined;
  /** Whether every lane has run the ticks due by the time last published (true when none was). */
  timersCaughtUp?: (() => boolean) | undefined;
  /**
   * Device memory the kernel holds, per device (a GPU backend; a class over several GPUs has one entry per lane group).
   */
  deviceMemory?(): readonly DeviceMemoryStats[];
}

/** A kernel's memory on one device (ClassMetrics.devices). */
export interface DeviceMemoryStats {
  /** The device (a CUDA ordinal). */
  readonly device: number;
  /** The class's lane group there (0 where the class has one). */
  readonly group: number;
  /** Bytes of the kernel's allocation on the device (queues, states, directory, overflow pool, ...). */
  readonly deviceBytes: number;
}

export interface ProbeResult {
  readonly ok: boolean;
  readonly reason?: string;
  readonly device?: string;
}

export interface Backend {
  readonly name: string;
  /**
   * Rank for `placement: 'auto'` when the system is given no `autoOrder`: higher first (an accelerator
   * ranks above the CPU), ties in the order the backends were given. Default 0.
   */
  readonly autoRank?: number;
  /** Whether this backend can run here (driver present, device found). Cheap; never throws. */
  probe(): Promise<ProbeResult>;
  createKernel(plan: KernelPlan): Promise<BackendKernel>;
  /**
   * A word the backend bumps (Atomics.add + notify) after it publishes replies, so the host can sleep
   * in Atomics.waitAsync instead of polling. Absent when the producer cannot notify (a GPU).
   */
  readonly replySignal?: { readonly words: Int32Array; readonly index: number };
  /** Release backend-wide resources (contexts, shared buffers) after all kernels are disposed. */
  dispose(): Promise<void>;
}
