/**
 * A backend that runs handlers on the calling thread: no worker threads, no GPU. For stepping through
 * handlers with a debugger's breakpoints, and for fast deterministic tests. It reuses the CPU backend's
 * consumer (rings in SharedArrayBuffers, the same encoding, K2K between its kernels), but instead of a
 * worker spinning and parking, the host thread runs each kernel's consumer in slices scheduled with
 * setImmediate whenever something was sent to it (an idle system costs nothing). A slice lasts at most
 * `sliceMs`, so the host's own event loop (reply pump, timers) keeps turning under load.
 */
import type {
  AnyGrainClass,
  Backend,
  BackendKernel,
  GrainDef,
  KernelPlan,
  OverflowStats,
  ProbeResult,
} from '@ringgrain/core/backend';
import {
  Dispatcher,
  OVERFLOW_WORD,
  StateAccess,
  k2kLeft,
  TimerClockHost,
  allocateTimerClock,
  allocateKernelBuffers,
  controlDoorbell,
  loadedGrain,
  peerInfo,
  type KernelBuffers,
  type PeerInfo,
  type TimerClockInit,
} from '@ringgrain/cpu-backend/consumer';
import { InlineBackendOptionsError, InlineConsumerError, InlineNoClassError } from './errors.ts';

export interface InlineBackendOptions {
  /** Longest a kernel's consumer runs before the event loop gets a turn (default 2 ms). */
  readonly sliceMs?: number;
}

class InlineKernel implements BackendKernel {
  readonly memory;
  /** The Dispatcher refuses K2K to keys this silo does not own (plan.ownership). */
  readonly checksOwnership = true;
  dispatcher: Dispatcher | undefined;
  stopped = false;
  fault: Error | undefined;
  /** State access for write-behind (plan.persistence): ops run between the dispatcher's turns. */
  private readonly states: StateAccess | undefined;
  readonly readDirty?: BackendKernel['readDirty'];
  readonly writeStates?: BackendKernel['writeStates'];
  readonly deactivateIdle?: BackendKernel['deactivateIdle'];
  /** Timer clock words (plan.timers): the dispatcher runs ticks in its slices. */
  private readonly timerInit: TimerClockInit | undefined;
  readonly timerStats?: BackendKernel['timerStats'];
  readonly publishTime?: BackendKernel['publishTime'];
  readonly timersCaughtUp?: BackendKernel['timersCaughtUp'];

  constructor(
    private readonly backend: InlineBackend,
    readonly plan: KernelPlan,
    readonly buffers: KernelBuffers,
  ) {
    const l = buffers.lanes[0]!;
    this.memory = { lanes: [{ control: l.control, inbound: l.inbound, replies: [l.reply] }] };
    if (plan.persistence) {
      const states = new StateAccess(plan, 1, (_lane, op) => {
        this.dispatcher?.queueOp(op);
        // A stopped consumer is no longer run in slices: its state requests run on their own.
        if (this.stopped) setImmediate(() => this.dispatcher?.serviceOps());
        else this.backend.schedule();
      });
      this.states = states;
      this.readDirty = () => states.readDirty();
      this.writeStates = (u) => states.writeStates(u);
      this.deactivateIdle = (before, now) => states.deactivateIdle(before, now);
    }
    if (plan.timers) {
      const init = allocateTimerClock(1, plan.timers.clock);
      const host = new TimerClockHost(init, 1);
      this.timerInit = init;
      this.timerStats = () => host.stats();
      this.timersCaughtUp = () => host.caughtUp();
      this.publishTime = (now) => {
        host.publish(now);
        this.backend.schedule();
      };
    }
  }

  peerInfo(): PeerInfo {
    return peerInfo(this.plan.grainId, this.buffers, [controlDoorbell(this.buffers, 0)]);
  }

  async start(): Promise<void> {
    const cls = this.plan.cls;
    if (!cls) throw new InlineNoClassError(this.plan.grain.name);
    const b = this.buffers.lanes[0]!;
    this.dispatcher = new Dispatcher({
      self: loadedGrain(cls, (method) => new InlineNoClassError(`${cls.grain.name}.${method}`)),
      grainId: this.plan.grainId,
      defsById: this.plan.grains,
      options: this.plan.options,
      sab: this.buffers.sab,
      controlOffset: b.control.offset,
      inboundOffset: b.inbound.offset,
      replyOffset: b.reply.offset,
      k2kOffset: b.k2k.offset,
      overflowOffset: this.buffers.overflow.offset,
      lane: 0,
      lanes: 1,
      replySignal: this.backend.replySignalBuffer,
      peers: [...this.backend.peers(), this.peerInfo()],
      timers: this.timerInit,
      ownership: this.plan.ownership,
      remoteSend: this.plan.remoteSend,
      persistence: this.plan.persistence &&
        this.states && {
          load: this.plan.persistence.load,
          idleMs: this.plan.persistence.idleMs,
          emit: (out) => this.states!.onOut(out),
        },
    });
    this.dispatcher.begin();
    this.backend.attach(this);
  }

  wake(): void {
    this.backend.schedule();
  }

  health() {
    return { fault: this.fault };
  }

  overflow(): OverflowStats {
    const w = new Int32Array(this.buffers.sab, this.buffers.overflow.offset, OVERFLOW_WORD.heldBy);
    return {
      capacity: Number.POSITIVE_INFINITY,
      inUse: Atomics.load(w, OVERFLOW_WORD.inUse),
      highWater: Atomics.load(w, OVERFLOW_WORD.highWater),
      overflowed: Atomics.load(w, OVERFLOW_WORD.overflowed) >>> 0,
      exhausted: 0,
    };
  }

  /** After dispose: K2K messages left in this kernel's ring (cpu-backend memory.ts k2kLeft). */
  k2kLeft(): number {
    return k2kLeft(this.buffers);
  }

  async dispose(): Promise<void> {
    this.stopped = true;
    this.states?.fail(new InlineConsumerError(this.plan.grain.name, new Error('the kernel was disposed')));
    this.backend.detach(this);
  }
}

export class InlineBackend implements Backend {
  readonly name = 'inline';
  readonly replySignalBuffer = new SharedArrayBuffer(128);
  readonly replySignal = { words: new Int32Array(this.replySignalBuffer), index: 0 };
  private readonly live = new Set<InlineKernel>();
  private readonly sliceMs: number;
  private scheduled = false;
  /** The wake-up for the earliest timer tick by the kernels' own clock (set after every round). */
  private timerWake: ReturnType<typeof setTimeout> | undefined;

  constructor(opts: InlineBackendOptions = {}) {
    this.sliceMs = opts.sliceMs ?? 2;
    if (typeof this.sliceMs !== 'number' || !(this.sliceMs > 0))
      throw new InlineBackendOptionsError(`sliceMs must be a number of milliseconds > 0, got ${String(opts.sliceMs)}`);
  }

  async probe(): Promise<ProbeResult> {
    return { ok: true, device: 'the calling thread' };
  }

  async createKernel(plan: KernelPlan): Promise<BackendKernel> {
    return new InlineKernel(this, plan, allocateKernelBuffers(plan.options, 1));
  }

  peers(): PeerInfo[] {
    return [...this.live].map((k) => k.peerInfo());
  }

  attach(k: InlineKernel): void {
    this.live.add(k);
    const peers = this.peers();
    for (const x of this.live) x.dispatcher?.setPeers(peers);
  }

  detach(k: InlineKernel): void {
    if (!this.live.delete(k)) return;
    const peers = this.peers();
    for (const x of this.live) x.dispatcher?.setPeers(peers);
  }

  /** Runs every kernel's consumer on the next turn of the event loop (once, however often it is asked). */
  schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.runAll());
  }

  private runAll(): void {
    this.scheduled = false;
    let again = false;
    for (const k of this.live) {
      if (k.stopped || k.fault || !k.dispatcher) continue;
      try {
        const r = k.dispatcher.runSlice(this.sliceMs);
        if (r === 'stopped') k.stopped = true;
        else if (r === 'busy') again = true;
      } catch (e) {
        k.fault = new InlineConsumerError(k.plan.grain.name, e);
      }
    }
    // A slice may have sent K2K messages to a kernel that already ran this round: one more round then.
    if (again || [...this.live].some((k) => !k.stopped && !k.fault && k.dispatcher?.hasWork())) this.schedule();
    else this.wakeForTimers();
  }

  /** Nothing to do now: run again when the earliest tick is due (timers by the kernels' own clock). */
  private wakeForTimers(): void {
    let wait = Number.POSITIVE_INFINITY;
    for (const k of this.live)
      if (!k.stopped && !k.fault && k.dispatcher) wait = Math.min(wait, k.dispatcher.timerWaitMs());
    if (this.timerWake) clearTimeout(this.timerWake);
    this.timerWake = undefined;
    if (wait === Number.POSITIVE_INFINITY) return;
    this.timerWake = setTimeout(
      () => {
        this.timerWake = undefined;
        this.schedule();
      },
      Math.min(wait, 2 ** 31 - 1),
    );
  }

  async dispose(): Promise<void> {
    for (const k of [...this.live]) await k.dispose();
    if (this.timerWake) clearTimeout(this.timerWake);
    this.timerWake = undefined;
  }
}
