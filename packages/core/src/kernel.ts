import { EventEmitter } from 'eventemitter3';
import type { Logger } from 'pino';
import type { Backend, BackendKernel, KernelHealth, KernelOptions, OverflowStats } from './backend.ts';
import { KernelFaultError, KernelNotRunningError, KernelTerminatedError, RinggrainError } from './errors.ts';
import type { GrainDef } from './grain.ts';
import { accepting, nextState, type LifecycleAction, type LifecycleState } from './lifecycle.ts';
import { CONTROL, COUNTERS, CONTROL_BLOCK_SIZE, IMAGE_AREA_HEADER, KernelState, type CounterName } from './protocol.ts';
import { laneOfKey } from './lanes.ts';
import { Ring, RingConsumer, RingProducer } from './ring.ts';
import { waitUntil } from './wait.ts';

export interface TransitionEvent {
  readonly grain: string;
  readonly from: LifecycleState;
  readonly to: LifecycleState;
  readonly backend: string;
}

export interface KernelEvents {
  transition: (e: TransitionEvent) => void;
  fault: (e: { grain: string; error: Error }) => void;
}

export interface KernelCounters extends Record<CounterName, number> {
  /** Messages the host wrote into the inbound ring. */
  sent: number;
  /** Messages written into the inbound ring that the kernel never took (left there at terminate). */
  hostRejected: number;
  /**
   * Sends that waited for ring space and were cancelled (terminate, fault, the ring stayed full past
   * queueFullTimeoutMs) before being written: never in `sent`.
   */
  cancelled: number;
  inboundDepth: number;
  heartbeat: number;
}

export interface TerminateOptions {
  /** 'drain' (default): let queued messages run first; 'reject': fail pending asks at once. */
  mode?: 'drain' | 'reject';
  timeoutMs?: number;
}

/** What a kernel needs from its system (pending asks live there: replies can come from any kernel). */
export interface KernelHost {
  rejectAsksOf(kernel: RingKernel, error: Error): void;
  pendingAsksOf(kernel: RingKernel): number;
  /** Sends accepted before terminate that still wait in the host for ring space (they drain too). */
  waitingSendsOf?(kernel: RingKernel): number;
  readonly handshakeTimeoutMs: number;
  /**
   * The kernel acknowledged STOP at terminate and its memory is still there: deactivate its actors and
   * write their states (write-behind) before it is freed. Errors are the host's to report; never thrown.
   */
  stopped?(kernel: RingKernel): Promise<void>;
  /**
   * The terminate of an active kernel whose backend asks for it (BackendKernel.deactivateBeforeStop),
   * before STOP: deactivate its actors and write their states while it still runs. Never thrown.
   */
  beforeStop?(kernel: RingKernel): Promise<void>;
}

/** The host's end of one lane of a kernel (backend.ts LaneMemory). */
export interface KernelLane {
  readonly control: Int32Array;
  readonly inbound: Ring;
  readonly producer: RingProducer;
  /** The lane's image area (backend.ts ImageArea), where the backend has one: busy words and buffers. */
  readonly images?: { readonly busy: Int32Array; readonly buffers: readonly Uint8Array[] };
}

/**
 * Host side of one ring kernel (one grain class on one backend): the lifecycle state machine, the
 * control-block handshake, and the host ends of its rings.
 */
/** Indexes into COUNTERS, the finished counts first (laneSnapshot says why). */
const DONE_FIRST: readonly number[] = (() => {
  const done = ['processed', 'rejected'];
  const idx = COUNTERS.map((_, i) => i);
  return [...idx.filter((i) => done.includes(COUNTERS[i]!)), ...idx.filter((i) => !done.includes(COUNTERS[i]!))];
})();

export class RingKernel extends EventEmitter<KernelEvents> {
  readonly grainId: number;
  readonly def: GrainDef;
  readonly backend: Backend;
  readonly options: KernelOptions;
  private readonly logger: Logger;
  private readonly host: KernelHost;
  private readonly makeKernel: () => Promise<BackendKernel>;

  state: LifecycleState = 'created';
  private disposing = false;
  private impl: BackendKernel | undefined;
  /** Allocated by prepare() and not launched yet. */
  private prepared: BackendKernel | undefined;
  /** Lanes while launched (empty otherwise); a key's messages go to lanes[laneOf(key)]. */
  lanes: KernelLane[] = [];
  /** lanes[i].producer, as one array (the spill drains into it on every pump). */
  producers: RingProducer[] = [];
  /** Every lane's reply rings. */
  replies: Array<{ ring: Ring; consumer: RingConsumer }> = [];
  private epoch = 0;
  sent = 0;
  hostRejected = 0;
  cancelled = 0;
  /** Counters of earlier incarnations (a relaunch starts the kernel's own counters at zero). */
  private carried: Partial<Record<CounterName, number>> = {};
  private busy: Promise<unknown> = Promise.resolve();

  constructor(args: {
    grainId: number;
    def: GrainDef;
    backend: Backend;
    options: KernelOptions;
    logger: Logger;
    host: KernelHost;
    makeKernel: () => Promise<BackendKernel>;
  }) {
    super();
    this.grainId = args.grainId;
    this.def = args.def;
    this.backend = args.backend;
    this.options = args.options;
    this.logger = args.logger.child({ grain: args.def.name, backend: args.backend.name });
    this.host = args.host;
    this.makeKernel = args.makeKernel;
  }

  /** The backend's kernel while launched (state access for write-behind: backend.ts readDirty, writeStates). */
  get backendKernel(): BackendKernel | undefined {
    return this.impl;
  }

  get accepting(): boolean {
    return accepting(this.state);
  }

  /**
   * A drain-mode terminate is waiting for what was accepted earlier: new sends are refused, waiting ones still go in.
   */
  draining = false;

  /** Throws the typed error a send to this kernel deserves when it is not accepting messages. */
  assertAccepting(): void {
    if (accepting(this.state)) return;
    if (this.state === 'terminated') throw new KernelTerminatedError(this.def.name);
    if (this.state === 'faulted') throw new KernelFaultError(this.def.name, 'it is faulted and takes no messages');
    throw new KernelNotRunningError(this.def.name, this.state);
  }

  /** The lane that consumes `key`'s messages. */
  laneOf(key: number | string): number {
    return laneOfKey(key, this.lanes.length);
  }

  wake(lane: number): void {
    this.impl?.wake(lane);
  }

  wakeAll(): void {
    for (let i = 0; i < this.lanes.length; i++) this.impl?.wake(i);
  }

  /**
   * The quiet barrier's second wave (system.idle): asks every lane for a counter publication that
   * starts after now, and wakes parked consumers so they answer. Returns the request to wait for.
   */
  requestPublication(): number {
    const r = ((Atomics.load(this.lanes[0]!.control, CONTROL.publishRequest) >>> 0) + 1) >>> 0;
    for (const [i, l] of this.lanes.entries()) {
      Atomics.store(l.control, CONTROL.publishRequest, r | 0);
      this.impl?.wake(i);
    }
    return r;
  }

  /** Whether every lane has published its counters after reading request `r` (requestPublication). */
  publicationAnswered(r: number): boolean {
    return this.lanes.every((l) => Atomics.load(l.control, CONTROL.publishEpoch) >>> 0 === r);
  }

  /**
   * Messages in device queues or turns at the last answered publication (0 where the backend publishes between turns).
   */
  queued(): number {
    let n = 0;
    for (const l of this.lanes) n += Atomics.load(l.control, CONTROL.queued) >>> 0;
    return n;
  }

  /** Messages in every lane's inbound ring not yet taken. */
  inboundDepth(): number {
    let n = 0;
    // What the host wrote and has not yet made visible in head (system.ts publishes in runs) counts too.
    for (const l of this.lanes) n += l.producer.depth();
    return n;
  }

  /** The backend's K2K overflow figures for this kernel, where it has an overflow area. */
  overflow(): OverflowStats | undefined {
    return this.impl?.overflow?.();
  }

  /** Lifecycle calls run one at a time per kernel, in call order. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.busy.then(fn, fn);
    this.busy = run.catch(() => undefined);
    return run;
  }

  private transition(action: LifecycleAction): void {
    const from = this.state;
    const to = nextState(this.def.name, from, action);
    this.state = to;
    this.logger.info({ from, to }, `kernel ${this.def.name}: ${from} → ${to}`);
    this.emit('transition', { grain: this.def.name, from, to, backend: this.backend.name });
  }

  /**
   * Allocates the backend kernel without starting it. A system prepares every kernel before it launches
   * any: on CUDA a running kernel reads its peers' partition queues, and compute-sanitizer treats memory
   * allocated after a kernel's launch as invalid for that kernel.
   */
  prepare(): Promise<void> {
    return this.serial(async () => {
      nextState(this.def.name, this.state, 'launch');
      this.prepared ??= await this.makeKernel();
    });
  }

  /** Frees what prepare() allocated when the launch will not happen (another kernel failed to prepare). */
  unprepare(): Promise<void> {
    return this.serial(async () => {
      const p = this.prepared;
      this.prepared = undefined;
      if (p) await p.dispose();
    });
  }

  launch(): Promise<void> {
    return this.serial(async () => {
      nextState(this.def.name, this.state, 'launch'); // validate before allocating anything
      const impl = this.prepared ?? (await this.makeKernel());
      this.prepared = undefined;
      const mem = impl.memory;
      if (mem.lanes.length === 0)
        throw new KernelFaultError(this.def.name, `backend ${this.backend.name} gave the kernel no lanes`);
      this.lanes = mem.lanes.map((l) => {
        const inbound = new Ring(l.inbound.buffer, l.inbound.offset);
        const lane: KernelLane = {
          control: new Int32Array(l.control.buffer, l.control.offset, CONTROL_BLOCK_SIZE >> 2),
          inbound,
          producer: new RingProducer(inbound),
        };
        const a = l.images;
        if (!a) return lane;
        const buffers = Array.from(
          { length: a.buffers },
          (_, i) =>
            new Uint8Array(a.region.buffer, a.region.offset + IMAGE_AREA_HEADER + i * a.bufferBytes, a.bufferBytes),
        );
        return { ...lane, images: { busy: new Int32Array(a.region.buffer, a.region.offset, a.buffers), buffers } };
      });
      this.producers = this.lanes.map((l) => l.producer);
      this.replies = mem.lanes.flatMap((l) =>
        l.replies.map((r) => {
          const ring = new Ring(r.buffer, r.offset);
          return { ring, consumer: new RingConsumer(ring) };
        }),
      );
      this.impl = impl;
      this.sent = 0;
      this.hostRejected = 0;
      // Every lane starts at the same epoch (a fresh control block, or one the backend reused alike).
      this.epoch = Atomics.load(this.lanes[0]!.control, CONTROL.requestEpoch) >>> 0;
      try {
        await impl.start();
        await this.handshake(KernelState.IDLE, 'launch');
      } catch (e) {
        await this.release();
        throw e;
      }
      this.transition('launch');
    });
  }

  activate(): Promise<void> {
    return this.serial(async () => {
      nextState(this.def.name, this.state, 'activate');
      await this.handshake(KernelState.ACTIVE, 'activate');
      this.transition('activate');
    });
  }

  deactivate(): Promise<void> {
    return this.serial(async () => {
      nextState(this.def.name, this.state, 'deactivate');
      await this.handshake(KernelState.PAUSED, 'deactivate');
      this.transition('deactivate');
    });
  }

  /**
   * Stops the kernel and frees its memory. `keepMemory` (the system's shutdown): stop only; the memory
   * is freed by `release()` once every kernel has stopped — on a GPU a running kernel may still write
   * K2K messages into a stopped peer's queues, and freeing device memory may wait for every running
   * kernel (it does under compute-sanitizer: a multi-kernel shutdown then never ended).
   */
  terminate(opts: TerminateOptions & { keepMemory?: boolean } = {}): Promise<void> {
    return this.serial(async () => {
      nextState(this.def.name, this.state, 'terminate');
      const timeoutMs = opts.timeoutMs ?? this.host.handshakeTimeoutMs;
      const wasActive = this.state === 'active';
      // Stop taking new messages first, so "drained" has a fixed end.
      const prior = this.state;
      this.state = 'terminated';
      if ((opts.mode ?? 'drain') === 'drain' && wasActive && this.impl?.health().fault === undefined) {
        // Sends accepted before terminate that wait in the host for ring space are part of the drain:
        // the system keeps moving them into the ring while `draining` (they were cancelled before).
        this.draining = true;
        try {
          await waitUntil(
            () =>
              (this.host.waitingSendsOf?.(this) ?? 0) === 0 &&
              this.inboundDepth() === 0 &&
              this.host.pendingAsksOf(this) === 0,
            timeoutMs,
          );
        } finally {
          this.draining = false;
        }
      }
      // The actors deactivated and written while the kernel still runs (where the backend asks), then STOP.
      if (wasActive && this.impl?.deactivateBeforeStop && this.impl.health().fault === undefined) {
        await this.host.beforeStop?.(this);
      }
      let stopped = false;
      if (prior !== 'faulted' && this.impl?.health().fault === undefined) {
        try {
          await this.handshake(KernelState.STOPPED, 'terminate', timeoutMs);
          stopped = true;
        } catch (e) {
          this.logger.warn({ err: e }, `kernel ${this.def.name} did not acknowledge STOP; forcing it down`);
        }
      }
      if (stopped) await this.host.stopped?.(this);
      const unprocessed = this.inboundDepth();
      this.hostRejected += unprocessed;
      this.host.rejectAsksOf(
        this,
        new KernelTerminatedError(
          this.def.name,
          stopped ? 'the kernel was terminated before answering' : 'the kernel was terminated without acknowledging',
        ),
      );
      this.carry();
      if (!opts.keepMemory) await this.release();
      this.state = prior;
      this.transition('terminate');
    });
  }

  /** Called by the system when the backend reports a fault: every pending ask fails typed, now. */
  markFaulted(error: Error): void {
    if (this.state === 'faulted' || !accepting(this.state)) return;
    this.transition('fault');
    this.logger.error({ err: error }, `kernel ${this.def.name} faulted`);
    this.emit('fault', { grain: this.def.name, error });
    this.host.rejectAsksOf(
      this,
      error instanceof RinggrainError ? error : new KernelFaultError(this.def.name, error.message, { cause: error }),
    );
  }

  health(): Error | undefined {
    return this.impl?.health().fault;
  }

  /**
   * The backend's whole report (backend.ts KernelHealth: the fault, each lane's restarts, the lanes being
   * started again), read once: the sweep's checks all come from one call.
   */
  healthReport(): KernelHealth | undefined {
    return this.impl?.health();
  }

  inspect(key: number | string): Promise<unknown> {
    if (!this.impl?.inspect) return Promise.resolve(undefined);
    return this.impl.inspect(key);
  }

  counters(): KernelCounters {
    const out = {
      sent: this.sent,
      hostRejected: this.hostRejected,
      cancelled: this.cancelled,
      inboundDepth: this.inboundDepth(),
      heartbeat: 0,
    } as KernelCounters;
    const lanes = this.laneSnapshot();
    COUNTERS.forEach((name, i) => (out[name] = (this.carried[name] ?? 0) + lanes[i]!));
    out.heartbeat = this.laneSum('heartbeat') >>> 0;
    out.sent += this.carriedSent;
    out.hostRejected += this.carriedHostRejected;
    return out;
  }

  private carriedSent = 0;
  private carriedHostRejected = 0;

  /** Each lane's heartbeat (a stalled lane shows even while the others beat). */
  heartbeats(): number[] {
    return this.lanes.map((l) => Atomics.load(l.control, CONTROL.heartbeat) >>> 0);
  }

  /**
   * Every counter summed over the lanes (COUNTERS order). What was finished (processed, rejected) is
   * read before the rest: counters only grow, so a read spread over a publication can then show more in
   * flight than there was, never less (a turn counted processed with the K2K message it sent not yet
   * counted would let system.idle pass early). Two passes that agree are returned as they are.
   */
  private laneSnapshot(): number[] {
    const read = () => {
      const out = new Array<number>(COUNTERS.length);
      for (const i of DONE_FIRST) out[i] = this.laneSum(COUNTERS[i]!);
      return out;
    };
    let a = read();
    for (let tries = 0; tries < 4; tries++) {
      const b = read();
      if (b.every((v, i) => v === a[i])) return b;
      a = b;
    }
    return a;
  }

  /** A control-block word summed over the lanes (each read as u32). */
  private laneSum(word: CounterName | 'heartbeat'): number {
    let v = 0;
    for (const l of this.lanes) v += Atomics.load(l.control, CONTROL[word]) >>> 0;
    return v;
  }

  private carry(): void {
    if (this.lanes.length === 0) return;
    for (const name of COUNTERS) this.carried[name] = (this.carried[name] ?? 0) + this.laneSum(name);
    this.carriedSent += this.sent;
    this.carriedHostRejected += this.hostRejected;
    this.sent = 0;
    this.hostRejected = 0;
  }

  /** Frees what a terminate with `keepMemory` left (nothing else); idempotent. */
  releaseMemory(): Promise<void> {
    return this.serial(() => this.release());
  }

  private async release(): Promise<void> {
    const impl = this.impl;
    this.impl = undefined;
    // The rings may live in memory the backend frees now (pinned host memory on CUDA): no view of
    // them may outlive the kernel.
    this.lanes = [];
    this.producers = [];
    this.replies = [];
    if (!impl) return;
    this.disposing = true;
    try {
      await impl.dispose();
    } finally {
      this.disposing = false;
    }
    // K2K messages left in its rings (senders no longer write there): received and rejected, as the
    // inbound ring's leftovers are hostRejected, so metrics() balances and system.idle() passes after it.
    const left = impl.k2kLeft?.() ?? 0;
    if (left > 0) {
      this.carried.k2kReceived = (this.carried.k2kReceived ?? 0) + left;
      this.carried.received = (this.carried.received ?? 0) + left;
      this.carried.rejected = (this.carried.rejected ?? 0) + left;
    }
  }

  /**
   * What the backend still holds for this kernel (signal shutdown logs it when its deadline passes):
   * undefined once released, else the kernel's phase ("running", "dispose has not returned").
   */
  heldBy(): string | undefined {
    if (this.disposing) return 'its dispose has not returned';
    return this.impl ? `${this.state}, not released` : undefined;
  }

  /** Writes the requested state, wakes the kernel and waits for its acknowledgment (bounded). */
  private async handshake(want: number, action: string, timeoutMs = this.host.handshakeTimeoutMs): Promise<void> {
    const lanes = this.lanes;
    if (lanes.length === 0) throw new KernelNotRunningError(this.def.name, this.state);
    const request = want === KernelState.STOPPED ? KernelState.STOP : want;
    const epoch = (this.epoch + 1) >>> 0;
    this.epoch = epoch;
    if (want !== KernelState.IDLE) {
      for (const [i, l] of lanes.entries()) {
        Atomics.store(l.control, CONTROL.requested, request);
        Atomics.store(l.control, CONTROL.requestEpoch, epoch | 0);
        this.impl?.wake(i);
      }
    }
    const laneAcked = (c: Int32Array) =>
      want === KernelState.IDLE
        ? Atomics.load(c, CONTROL.observed) >= KernelState.IDLE
        : Atomics.load(c, CONTROL.ackEpoch) >>> 0 === epoch && Atomics.load(c, CONTROL.observed) === want;
    const acked = () => lanes.every((l) => laneAcked(l.control));
    const ok = await waitUntil(() => acked() || this.impl?.health().fault !== undefined, timeoutMs);
    const fault = this.impl?.health().fault;
    if (fault) throw new KernelFaultError(this.def.name, `${action} failed: ${fault.message}`, { cause: fault });
    if (!ok) {
      const late = lanes.flatMap((l, i) =>
        laneAcked(l.control) ? [] : [`lane ${i} observed state ${Atomics.load(l.control, CONTROL.observed)}`],
      );
      throw new KernelFaultError(
        this.def.name,
        `${action} was not acknowledged within ${timeoutMs} ms (${late.join(', ')})`,
      );
    }
  }
}
