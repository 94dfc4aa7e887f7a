import os from 'node:os';
import {
  CONTROL,
  CONTROL_BLOCK_SIZE,
  IMAGE_AREA_HEADER,
  KernelState,
  Ring,
  laneOfKey,
  type Backend,
  type BackendKernel,
  type KernelPlan,
  type OverflowStats,
  type ProbeResult,
} from '@ringgrain/core/backend';
import { CpuBackendOptionsError, GrainModuleError, WorkerDiedError } from './errors.ts';
import { countLostOfDeadLane } from './dead-lane.ts';
import {
  OVERFLOW_WORD,
  allocateKernelBuffers,
  k2kLeft,
  overflowWords,
  peerInfo,
  type KernelBuffers,
  type PeerInfo,
} from './memory.ts';
import { ThreadPool, type PoolStats, type PoolThread } from './pool.ts';
import type { LaneInit } from './protocol.ts';
import { StateAccess } from './state-access.ts';
import { TimerClockHost, allocateTimerClock, type TimerClockInit } from './timer-clock.ts';

export interface CpuBackendOptions {
  /**
   * Worker threads in the pool (default: the machine's available parallelism minus one, at least 1).
   * Every grain class on this backend spreads its actors over all of them (one lane per thread, chosen
   * by key), and grain classes share them.
   */
  readonly threads?: number;
  /** How long dispose waits for a thread to let go of a kernel before it restarts that thread (default 200 ms). */
  readonly releaseTimeoutMs?: number;
  /**
   * How many times a kernel's lane is moved to the replacement of a pool thread that died (default 3).
   * Each time, the asks waiting on that lane fail with WorkerDiedError and the lane's actors start from
   * fresh state; the other lanes never stop. One more death faults the kernel (relaunch it).
   */
  readonly laneRestarts?: number;
  /**
   * The longest an idle pool thread spins for work before it parks, in ms (default 1; 0.05 where the
   * threads outnumber the cores). The spin adapts: it grows (up to this) while the thread's sleeps are cut
   * short by new work within it — a chain of sends across actors, where each hop to a parked thread costs
   * a wake-up of tens of µs — and falls back to 0.05 ms once work stops coming that soon. 0.05 turns the
   * adaptation off (a thread then parks 50 µs after its last work).
   */
  readonly maxSpinMs?: number;
  /**
   * Pause steps between two looks at the lanes while an idle pool thread spins (default 0: none). A step
   * is a dependent floating-point division (pool-worker.ts pace), so a spinning thread issues few
   * instructions and leaves a core it shares (a hyperthread sibling) and the power budget to a thread with
   * work, at the cost of noticing new work a little later (4 steps: about 0.1 µs on the 2-core development
   * VM). JavaScript has no pause instruction; this is its stand-in. Integer from 0 to 1000.
   */
  readonly spinPause?: number;
}

let nextKernelId = 1;

class CpuKernel implements BackendKernel {
  readonly memory;
  /** The Dispatcher refuses K2K to keys this silo does not own (plan.ownership). */
  readonly checksOwnership = true;
  readonly kernelId = nextKernelId++;
  private fault: Error | undefined;
  private readonly controls: Int32Array[];
  /** Each lane's thread generation when the lane was added (a different one: the thread died since). */
  private generations: number[] | undefined;
  /** Per lane: how often it moved to a replacement thread, and why last (core fails that lane's asks). */
  private readonly restarts: Array<{ restarts: number; error: Error | undefined }>;
  /** Per lane: its new thread is loading it after a restart (KernelHealth.starting). */
  private readonly starting: boolean[];
  /** State access for write-behind (plan.persistence), or undefined. */
  private readonly states: StateAccess | undefined;

  /** Timer clock words shared with the lanes (plan.timers), or undefined. */
  private readonly timerInit: TimerClockInit | undefined;
  readonly timerStats?: BackendKernel['timerStats'];
  readonly publishTime?: BackendKernel['publishTime'];
  readonly timersCaughtUp?: BackendKernel['timersCaughtUp'];

  constructor(
    private readonly backend: CpuBackend,
    private readonly plan: KernelPlan,
    readonly buffers: KernelBuffers,
    private readonly threads: readonly PoolThread[],
  ) {
    if (plan.timers) {
      const init = allocateTimerClock(threads.length, plan.timers.clock);
      const host = new TimerClockHost(init, threads.length);
      this.timerInit = init;
      this.timerStats = () => host.stats();
      this.timersCaughtUp = () => host.caughtUp();
      this.publishTime = (now) => {
        host.publish(now);
        // One wake per lane per publication (never per tick): a parked lane reads the new time.
        for (const t of this.threads) this.backend.pool.ring(t.index);
      };
    }
    this.memory = {
      lanes: buffers.lanes.map((l) => ({
        control: l.control,
        inbound: l.inbound,
        replies: [l.reply],
        ...(l.images ? { images: l.images } : {}),
      })),
    };
    this.controls = buffers.lanes.map((l) => new Int32Array(buffers.sab, l.control.offset, CONTROL_BLOCK_SIZE >> 2));
    this.restarts = buffers.lanes.map(() => ({ restarts: 0, error: undefined }));
    this.starting = buffers.lanes.map(() => false);
    if (plan.remoteSend) backend.pool.remoteSend.set(this.kernelId, plan.remoteSend);
    if (plan.persistence) {
      const states = new StateAccess(plan, threads.length, (lane, op) => this.threads[lane]!.state(this.kernelId, op));
      this.states = states;
      backend.pool.stateOut.set(this.kernelId, (_lane, out) => states.onOut(out));
      this.readDirty = () => states.readDirty();
      this.writeStates = (u) => states.writeStates(u);
      this.deactivateIdle = (before, now) => states.deactivateIdle(before, now);
    }
  }

  readonly readDirty?: BackendKernel['readDirty'];
  readonly writeStates?: BackendKernel['writeStates'];
  readonly deactivateIdle?: BackendKernel['deactivateIdle'];

  private laneInit(i: number, resume: boolean): LaneInit {
    const l = this.buffers.lanes[i]!;
    const grains = this.plan.grains.map((g) => (g ? { name: g.name, module: g.module } : null));
    const p = this.plan.persistence;
    return {
      ...(p
        ? { persistence: { load: p.load, idleMs: p.idleMs, ...(p.laneLoad ? { laneLoad: p.laneLoad } : {}) } }
        : {}),
      ...(this.timerInit ? { timers: this.timerInit } : {}),
      ...(this.plan.ownership ? { ownership: this.plan.ownership } : {}),
      ...(this.plan.remoteSend ? { remoteSends: true } : {}),
      kernelId: this.kernelId,
      grainId: this.plan.grainId,
      grains,
      options: this.plan.options,
      sab: this.buffers.sab,
      controlOffset: l.control.offset,
      ...(l.images ? { imageOffset: l.images.region.offset } : {}),
      inboundOffset: l.inbound.offset,
      replyOffset: l.reply.offset,
      k2kOffset: l.k2k.offset,
      overflowOffset: this.buffers.overflow.offset,
      lane: i,
      lanes: this.buffers.lanes.length,
      ...(resume ? { resume } : {}),
    };
  }

  peerInfo(): PeerInfo {
    return peerInfo(
      this.plan.grainId,
      this.buffers,
      this.threads.map((t) => t.doorbell),
    );
  }

  /** K2K messages other workers hold for this kernel until its rings have room (their queues are heap: unbounded). */
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

  /** After dispose: K2K messages left in this kernel's rings (memory.ts k2kLeft). */
  k2kLeft(): number {
    return k2kLeft(this.buffers);
  }

  async start(): Promise<void> {
    const grain = this.plan.grain;
    const peers = [...this.backend.peers(), this.peerInfo()];
    const results = await Promise.allSettled(this.threads.map((t, i) => t.add(this.laneInit(i, false), peers)));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      await Promise.all(this.threads.map((t) => t.remove(this.kernelId, this.backend.releaseTimeoutMs)));
      const e = failed.reason as Error & { code?: string };
      this.fault = /pool thread \d+ ended/.test(e.message)
        ? new WorkerDiedError(grain.name, e.message, { cause: e })
        : new GrainModuleError(grain.name, grain.module, e.message, { cause: e });
      throw this.fault;
    }
    this.generations = this.threads.map((t) => t.generation);
    this.backend.attach(this);
  }

  wake(lane: number): void {
    // Only the producer that takes the thread's parked flag from 1 to 0 rings: one futex wake per park, not
    // one per send (measured on the 16-core GPU host: a tell into a paused kernel cost 3.4 µs, a notify each).
    this.backend.pool.wake(this.threads[lane]!.index);
  }

  /**
   * A lane whose thread died moves to the thread's replacement (the pool starts one at once) and resumes
   * its rings there; the other lanes never stop. Past `laneRestarts` moves of one lane, the kernel faults.
   */
  health() {
    if (!this.fault && this.generations) {
      for (const t of this.threads) t.checkExiting();
      for (const [i, t] of this.threads.entries()) {
        if (t.generation === this.generations[i]) continue;
        // Exiting after this kernel's STOP is not a fault of this kernel.
        if (Atomics.load(this.controls[i]!, CONTROL.observed) === KernelState.STOPPED) continue;
        this.generations[i] = t.generation;
        const why =
          `pool thread ${t.index} (lane ${i} of ${this.threads.length}) ` +
          `ended: ${t.lastDeath?.detail ?? 'unknown'}`;
        const r = this.restarts[i]!;
        if (r.restarts >= this.backend.laneRestarts) {
          this.settleDeadLane(i);
          this.fault = new WorkerDiedError(
            this.plan.grain.name,
            `${why}; the lane was already restarted ${r.restarts} times (laneRestarts)`,
            t.lastDeath?.cause ? { cause: t.lastDeath.cause } : {},
          );
          break;
        }
        r.restarts++;
        this.states?.fail(new WorkerDiedError(this.plan.grain.name, `${why}: its state requests were lost`), i);
        r.error = new WorkerDiedError(
          this.plan.grain.name,
          `${why}; the lane moved to a new thread and its actors start from fresh state`,
          t.lastDeath?.cause ? { cause: t.lastDeath.cause } : {},
        );
        this.starting[i] = true;
        t.add(this.laneInit(i, true), this.backend.peers()).then(
          () => (this.starting[i] = false),
          (e: Error) => {
            this.starting[i] = false;
            this.fault ??= new WorkerDiedError(
              this.plan.grain.name,
              `${why}; restarting the lane failed: ${e.message}`,
              { cause: e },
            );
          },
        );
      }
    }
    return { fault: this.fault, laneRestarts: this.restarts, starting: this.starting };
  }

  /**
   * A lane that dies for good (its kernel faults; nothing resumes it): what its thread took and never
   * counted is counted received and rejected on its control block, as a resumed lane does (dead-lane.ts
   * countLostOfDeadLane), so metrics() still balances and system.idle() passes after terminate + launch.
   */
  private settleDeadLane(i: number): void {
    const l = this.buffers.lanes[i]!;
    const c = this.controls[i]!;
    const n = {
      received: Atomics.load(c, CONTROL.received) >>> 0,
      k2kReceived: Atomics.load(c, CONTROL.k2kReceived) >>> 0,
      rejected: Atomics.load(c, CONTROL.rejected) >>> 0,
    };
    const images = l.images
      ? new Int32Array(this.buffers.sab, l.images.region.offset, IMAGE_AREA_HEADER >> 2)
      : undefined;
    const ownStats = new Int32Array(
      this.buffers.sab,
      this.buffers.overflow.offset,
      overflowWords(this.buffers.lanes.length),
    );
    countLostOfDeadLane(
      n,
      new Ring(this.buffers.sab, l.inbound.offset).words,
      new Ring(this.buffers.sab, l.k2k.offset).words,
      images,
      ownStats,
      OVERFLOW_WORD.heldBy + i,
    );
    Atomics.store(c, CONTROL.received, n.received | 0);
    Atomics.store(c, CONTROL.k2kReceived, n.k2kReceived | 0);
    Atomics.store(c, CONTROL.rejected, n.rejected | 0);
  }

  inspect(key: number | string): Promise<unknown> {
    if (this.fault) return Promise.resolve(undefined);
    const lane = laneOfKey(key, this.threads.length);
    return this.threads[lane]!.inspect(this.kernelId, key);
  }

  async dispose(): Promise<void> {
    this.backend.detach(this);
    this.backend.pool.stateOut.delete(this.kernelId);
    this.backend.pool.remoteSend.delete(this.kernelId);
    this.states?.fail(new WorkerDiedError(this.plan.grain.name, 'the kernel was disposed'));
    if (!this.generations) return;
    this.generations = undefined;
    // After STOP every lane has left its thread's loop and the remove is answered at once; a thread still
    // inside a handler (one that never returns) is restarted: the other kernels' lanes there fault.
    await Promise.all(
      this.threads.map(async (t) => {
        if (await t.remove(this.kernelId, this.backend.releaseTimeoutMs)) return;
        await t.restart(`restarted: a handler of ${this.plan.grain.name} held it past dispose`);
      }),
    );
  }
}

/**
 * CPU backend: a pool of worker threads (pool.ts); each grain class is one kernel with one lane per
 * thread. Rings, control blocks and state tables live in SharedArrayBuffers; no postMessage per message.
 */
export class CpuBackend implements Backend {
  readonly name = 'cpu';
  readonly replySignalBuffer = new SharedArrayBuffer(128);
  readonly replySignal = { words: new Int32Array(this.replySignalBuffer), index: 0 };
  readonly threads: number;
  readonly releaseTimeoutMs: number;
  readonly laneRestarts: number;
  private poolInstance: ThreadPool | undefined;
  private readonly live = new Set<CpuKernel>();

  constructor(opts: CpuBackendOptions = {}) {
    const threads = opts.threads ?? Math.max(1, os.availableParallelism() - 1);
    if (!Number.isInteger(threads) || threads < 1 || threads > 1024)
      throw new CpuBackendOptionsError(`threads must be an integer from 1 to 1024, got ${threads}`);
    this.threads = threads;
    this.releaseTimeoutMs = opts.releaseTimeoutMs ?? 200;
    const restarts = opts.laneRestarts ?? 3;
    if (!Number.isInteger(restarts) || restarts < 0)
      throw new CpuBackendOptionsError(`laneRestarts must be a non-negative integer, got ${restarts}`);
    this.laneRestarts = restarts;
    const spin = opts.maxSpinMs;
    if (spin !== undefined && !(typeof spin === 'number' && spin >= 0 && spin <= 1000))
      throw new CpuBackendOptionsError(
        `maxSpinMs must be a number of milliseconds from 0 to 1000, got ${String(spin)}`,
      );
    this.maxSpinMs = spin;
    const pause = opts.spinPause ?? 0;
    if (!Number.isInteger(pause) || pause < 0 || pause > 1000)
      throw new CpuBackendOptionsError(`spinPause must be an integer from 0 to 1000, got ${String(opts.spinPause)}`);
    this.spinPause = pause;
  }

  private readonly maxSpinMs: number | undefined;
  private readonly spinPause: number;

  get pool(): ThreadPool {
    return (this.poolInstance ??= new ThreadPool(this.threads, this.replySignalBuffer, this.maxSpinMs, this.spinPause));
  }

  /** How often the pool's threads parked, and how many sleeps new work cut short (a diagnostic for benchmarks). */
  poolStats(): PoolStats | undefined {
    return this.poolInstance?.stats();
  }

  async probe(): Promise<ProbeResult> {
    return { ok: true, device: `${process.arch}, ${this.threads} worker thread${this.threads === 1 ? '' : 's'}` };
  }

  async createKernel(plan: KernelPlan): Promise<BackendKernel> {
    return new CpuKernel(
      this,
      plan,
      allocateKernelBuffers(plan.options, this.threads, !plan.persistence),
      this.pool.threads,
    );
  }

  peers(): PeerInfo[] {
    return [...this.live].map((k) => k.peerInfo());
  }

  attach(k: CpuKernel): void {
    this.live.add(k);
    this.broadcastPeers();
  }

  detach(k: CpuKernel): void {
    if (this.live.delete(k)) this.broadcastPeers();
  }

  private broadcastPeers(): void {
    const peers = this.peers();
    for (const t of this.pool.threads) t.peers(peers);
  }

  async dispose(): Promise<void> {
    for (const k of [...this.live]) await k.dispose();
    await this.poolInstance?.close();
    this.poolInstance = undefined;
  }
}
