/**
 * One grain class's persistent ring kernel on one GPU (one lane group): its host region and device allocation
 * (kernel-layout.ts, formatted and zeroed by kernel-memory.ts), the launch (kernel-launch.ts), health
 * (kernel-health.ts), state access (inspect: kernel-inspect.ts, dirty gather: kernel-state.ts, residency:
 * kernel-residency.ts) and the stop (kernel-stop.ts) and free at dispose.
 */
import { performance } from 'node:perf_hooks';
import {
  type KernelHealth,
  type KernelMemory,
  type DeviceMemoryStats,
  type KernelPlan,
  type OverflowStats,
  type Ring,
  type StateBatch,
  type StateUpload,
  type TimerStats,
} from '@ringgrain/core/backend';
import type { Abi } from '@ringgrain/codegen';
import type { DeviceSlot } from './device-slot.ts';
import type { GroupKernel } from './lane-groups.ts';
import { GpuStateError } from './errors.ts';
import type { HostRegion } from './host-memory.ts';
import { queryKernel } from './kernel-health.ts';
import { inspectState, overflowStats, type KernelView } from './kernel-inspect.ts';
import { kernelLayout, type DeviceAt } from './kernel-layout.ts';
import { launchArgs } from './kernel-launch.ts';
import { formatHost, initDevice } from './kernel-memory.ts';
import { loadPump, openResidency, residencyTarget, warnPoll } from './kernel-residency.ts';
import { KernelStateAccess } from './kernel-state.ts';
import { stopKernel } from './kernel-stop.ts';
import type { LoadPump } from './load-pump.ts';
import type { ResolvedCudaOptions } from './options.ts';
import type { KernelResidency } from './residency-access.ts';
import { residencyExit } from './residency.ts';
import type { Gathered } from './state-gather.ts';
import { TimerHost } from './timer-host.ts';
import type { CudaContext, CudaFunction, CudaStream, DeviceBuffer } from './driver/index.ts';

/** What a kernel needs of the backend that made it. */
export interface KernelOwner {
  readonly options: ResolvedCudaOptions;
  queueCapacityFor(maxActors: number, partitions: number, slotSize: number): number;
  /** Rewrites every live kernel's route table (a kernel came or goes). */
  updateRoutes(): void;
  /** The kernel is gone (stopped and freed, or abandoned stuck). */
  detach(k: CudaKernel): void;
}

/** One grain class's persistent ring kernel on the GPU. */
export class CudaKernel implements GroupKernel {
  readonly memory: KernelMemory;
  readonly blocks: number;
  readonly partitions: number;
  readonly queueCapacity: number;
  /** Host lanes (control block + inbound ring + ingress warp each). */
  readonly hostLanes: number;
  private readonly inboundStride: number;
  readonly host: HostRegion;
  readonly device: DeviceBuffer;
  readonly queues: { readonly devPtr: bigint };
  readonly routeTable: Uint8Array;
  readonly routeStride: number;
  readonly routesAt: number;
  freed = false;
  private readonly stream: CudaStream;
  private readonly control: Int32Array;
  private readonly reply: Ring;
  private readonly at: DeviceAt;
  /** Byte offset of the residency host block in the host region (where the kernel has residency). */
  private readonly residencyHostAt: number;
  /** Deactivation and installs (residency.ts), where the class has persistence and the unit services them. */
  private residency: KernelResidency | undefined;
  /** core deactivateIdle: present when the plan has persistence and the unit services residency requests. */
  readonly deactivateIdle: ((before: number, now: number) => Promise<number>) | undefined;
  /** core writeStates: the same (residency.ts install board). */
  readonly writeStates: ((upload: StateUpload) => Promise<void>) | undefined;
  /**
   * core deactivates the actors before STOP, while the kernel runs: on the H200 at d4c1e90 a stopped kernel
   * (RG_MODE_RESIDENT) left the deactivation asked of it unanswered where the same request was answered while
   * active (bench/results/gpu/2026-11-28-h200-d4c1e90-cuda-lanes-residency-stop.json).
   */
  readonly deactivateBeforeStop: boolean;
  /** Reads the load-request and evict rings while the kernel runs (kernel-residency.ts loadPump). */
  private loadPoll: LoadPump | undefined;
  /** The timers' host block (timer-host.ts), where the class declares timers; its byte offset in the host region. */
  private readonly timerHost: TimerHost | undefined;
  private readonly timerHostAt: number;
  timerStats?: (() => TimerStats) | undefined;
  publishTime?: ((now: number) => void) | undefined;
  timersCaughtUp?: (() => boolean) | undefined;
  /**
   * Byte offset of the timers' host block in the host region's buffer (the isolated backend's application side reads it
   * there).
   */
  get timerHostOffset(): number | undefined {
    return this.timerHost ? this.host.offset + this.timerHostAt : undefined;
  }
  /** Nodes of this kernel's K2K overflow pool (0: none). */
  readonly overflowNodes: number;
  /** The GPU (device ordinal) this kernel runs on. */
  get ordinal(): number {
    return this.slot.ordinal;
  }
  /** Bytes of this kernel's device allocation. */
  get deviceBytes(): number {
    return this.device.bytes;
  }
  /** ClassMetrics.devices: this kernel's allocation on its GPU. */
  deviceMemory(): DeviceMemoryStats[] {
    return [{ device: this.slot.ordinal, group: this.group, deviceBytes: this.device.bytes }];
  }
  private readonly dirCapacity: number;
  private fault: Error | undefined;
  /** Write-behind access (made on the first gather). */
  private stateAccess: KernelStateAccess | undefined;
  /** core readDirty: present when the plan has persistence (state-gather.ts). */
  readonly readDirty: (() => Promise<StateBatch>) | undefined;
  private lastQuery = 0;
  private started = false;
  private exited = false;

  constructor(
    private readonly owner: KernelOwner,
    /** The device this kernel runs on (its context, pools and poison). */
    readonly slot: DeviceSlot,
    private readonly ctx: CudaContext,
    readonly plan: KernelPlan,
    readonly abi: Abi,
    private readonly fn: CudaFunction,
    private readonly launchCfg: { blocks: number; threadsPerBlock: number; sharedBytes: number },
    partitions: number,
    /** The class's lane group this kernel is (0 of 1 on one GPU), and how many the class has. */
    readonly group = 0,
    readonly groupCount = 1,
    /** Lane groups of the backend: the route table holds a block of entries per group (routes.ts). */
    readonly routeBlocks = groupCount,
  ) {
    const o = plan.options;
    const opts = owner.options;
    this.partitions = partitions;
    this.queueCapacity = owner.queueCapacityFor(o.maxActors, this.partitions, o.slotSize);
    this.blocks = launchCfg.blocks;
    this.hostLanes = opts.hostLanes;
    // After the gather, the actors deactivated to make room before it (evict ring): a flush then holds them too.
    this.readDirty = plan.persistence
      ? async () => {
          const { batch } = await this.gatherDirty();
          if (this.residency && !this.freed && !this.fault) this.residency.host.drainEvicted();
          return batch;
        }
      : undefined;
    // String keys are interned ids on the device: their states could not be named to the store (the system then refuses
    // the class).
    const residency =
      plan.persistence !== undefined && abi.residency && opts.residency && plan.grain.keyKind !== 'string';
    this.deactivateIdle = residency ? (before, now) => this.residencyAccess().deactivateIdle(before, now) : undefined;
    this.writeStates = residency ? (u) => this.residencyAccess().host.writeStates(u) : undefined;
    this.deactivateBeforeStop = residency;
    const timerCount = plan.timers ? plan.grain.timers.length : 0;
    const layout = kernelLayout(abi, {
      maxActors: o.maxActors,
      ringCapacity: o.ringCapacity,
      replyCapacity: o.replyCapacity,
      slotSize: o.slotSize,
      partitions: this.partitions,
      queueCapacity: this.queueCapacity,
      lanes: this.hostLanes,
      routeEntries: plan.grains.length * routeBlocks,
      timers: timerCount,
      residency,
      stateSize: abi.stateSize,
      overflowBytes: slot.overflowBytes(opts.overflowBytes),
    });
    const hl = layout.host;
    this.inboundStride = hl.inboundStride;
    this.dirCapacity = layout.dirCapacity;
    this.routeStride = layout.device.routeStride;
    this.timerHostAt = hl.timerHostAt;
    this.residencyHostAt = hl.residencyHostAt;
    this.host = slot.hostMemory.take(ctx, hl.bytes);
    this.overflowNodes = layout.device.overflowNodes;
    this.at = layout.device.at;
    this.routesAt = this.at.routes;
    this.stream = ctx.createStream();
    try {
      this.device = slot.deviceMemory.take(ctx, layout.device.bytes);
    } catch (e) {
      ctx.destroyStream(this.stream);
      slot.giveHost(ctx, this.host);
      throw e;
    }
    this.queues = { devPtr: this.device.devPtr + BigInt(this.at.queues) };
    this.routeTable = new Uint8Array(layout.device.routeBytes);

    const formatted = formatHost(this.host, hl, this.hostLanes, plan, residency);
    this.reply = formatted.reply;
    this.control = formatted.control;
    this.memory = formatted.memory;
    if (plan.timers && timerCount) {
      const th = new TimerHost(this.host.buffer, this.host.offset + this.timerHostAt, plan.timers);
      this.timerHost = th;
      this.timerStats = () => th.stats();
      this.publishTime = (now) => th.publish(now);
      this.timersCaughtUp = () => th.caughtUp();
    }
    initDevice({
      ctx,
      device: this.device,
      stream: this.stream,
      at: this.at,
      plan,
      options: opts,
      residency: residency
        ? { target: this.residencyTarget(), hostDevPtr: this.host.devPtr + BigInt(this.residencyHostAt) }
        : undefined,
    });
  }

  private residencyTarget() {
    return residencyTarget(this.plan, this.abi, this.partitions);
  }

  /** The residency access, made on first use (its stream and staging mirror). */
  private residencyAccess(): KernelResidency {
    if (this.fault || this.freed || this.slot.poisonedBy) {
      const why = this.freed ? 'the kernel was disposed' : 'the kernel faulted';
      throw new GpuStateError(this.plan.grain.name, 'GPU_STATE_UNAVAILABLE', why, {
        cause: this.fault ?? this.slot.poisonedBy,
      });
    }
    this.residency ??= openResidency({
      ctx: this.ctx,
      slot: this.slot,
      plan: this.plan,
      target: this.residencyTarget(),
      device: this.device,
      areaAt: this.at.residency,
      buffer: this.host.buffer,
      offset: this.host.offset + this.residencyHostAt,
      stopTimeoutMs: this.owner.options.stopTimeoutMs,
      // A kernel that ended (its stream complete) answers no request: fail it at once, not after the timeout.
      fault: () =>
        this.health().fault ??
        (this.freed ? new Error('the kernel was disposed') : this.exited ? new Error('the kernel exited') : undefined),
    });
    return this.residency;
  }

  async start(): Promise<void> {
    const lane0 = this.memory.lanes[0]!;
    const args = launchArgs({
      abi: this.abi,
      plan: this.plan,
      hostPtr: this.host.devPtr,
      devicePtr: this.device.devPtr,
      inboundAt: lane0.inbound.offset - this.host.offset,
      replyAt: lane0.replies[0]!.offset - this.host.offset,
      timerHostAt: this.timerHostAt,
      at: this.at,
      overflowNodes: this.overflowNodes,
      partitions: this.partitions,
      queueCapacity: this.queueCapacity,
      dirCapacity: this.dirCapacity,
      sendBudget: this.owner.options.sendBudget,
      lanes: this.hostLanes,
      laneBytes: this.inboundStride,
      hasTimers: this.timerHost !== undefined,
    });
    // The kernel clock's origin, as close to the launch as the host can write it.
    this.timerHost?.init();
    this.ctx.launch(
      this.fn,
      {
        grid: this.launchCfg.blocks,
        block: this.launchCfg.threadsPerBlock,
        sharedMemBytes: this.launchCfg.sharedBytes,
        stream: this.stream,
      },
      args,
    );
    this.started = true;
    // Keys the workers post for loading, and actors they deactivate to make room (a class with idleMs: the evict
    // ring), go to the plan's load and evicted: polled on the next event-loop turns after each message written to
    // this kernel (wake), else on a backed-off timer (load-pump.ts); health() polls too.
    if (this.writeStates) this.loadPoll = loadPump(this.plan, () => this.pollLoads());
  }

  wake(): void {
    // The GPU polls its inbound ring and control block; a message written may make it post a key to load soon.
    this.loadPoll?.kick();
  }

  /** One stream query (a driver call): a sticky error is a fault; a stream that ended before STOP is one too. */
  private query(): void {
    if (this.fault || !this.started || this.exited || this.freed) return;
    const v = queryKernel(this.plan.grain.name, this.slot, this.ctx, this.stream, this.control);
    if (v.exited) this.exited = true;
    if (v.fault) this.fault = v.fault;
  }

  /** Keys on the load-request ring to the plan's load, rows on the evict ring to its evicted: how many. */
  private pollLoads(): number {
    if (this.fault || this.freed || this.exited) return 0;
    const h = this.residencyAccess().host;
    const rows = h.drained;
    return h.pollLoads() + (h.drained - rows);
  }

  health(): KernelHealth {
    if (this.loadPoll) {
      try {
        this.pollLoads();
      } catch (e) {
        warnPoll(this.plan, e);
      }
    }
    if (!this.fault) {
      const now = performance.now();
      if (now - this.lastQuery >= this.owner.options.healthIntervalMs) {
        this.lastQuery = now;
        this.query();
      }
    }
    return { fault: this.fault };
  }

  /** Device address of the overflow pool (K2K senders of every kernel find it in their route table). */
  get overflowPool(): bigint {
    return this.device.devPtr + BigInt(this.at.overflow);
  }

  /** The overflow pool's counters (a small device → host copy on the setup stream; off the message path). */
  overflow(): OverflowStats | undefined {
    if (this.overflowNodes === 0 || this.freed || this.slot.poisonedBy) return undefined;
    return overflowStats(this.view(), this.overflowNodes, this.partitions);
  }

  async inspect(key: number | string): Promise<unknown> {
    if (typeof key !== 'number' || this.fault || this.freed || this.slot.poisonedBy) return undefined;
    return inspectState(this.view(), this.dirCapacity, key);
  }

  private view(): KernelView {
    return { slot: this.slot, device: this.device, at: this.at, abi: this.abi, plan: this.plan };
  }

  /**
   * Every dirty actor's key and state, their marks cleared (a turn after the gather marks its actor
   * again), with what each step took. readDirty's body; benchmarks call it on kernels without storage.
   */
  async gatherDirty(): Promise<Gathered> {
    const grain = this.plan.grain.name;
    if (this.fault || this.freed || this.slot.poisonedBy) {
      throw new GpuStateError(
        grain,
        'GPU_STATE_UNAVAILABLE',
        this.freed ? 'the kernel was disposed' : 'the kernel faulted',
        { cause: this.fault ?? this.slot.poisonedBy },
      );
    }
    if (!this.stateAccess) {
      const fn = this.slot.gathers.get(this.plan.grain);
      if (!fn) throw new GpuStateError(grain, 'GPU_STATE_UNAVAILABLE', 'its module has no dirty gather kernel loaded');
      const d = this.device.devPtr;
      const pools = {
        device: this.slot.deviceMemory,
        host: this.slot.stagingHost,
        running: () => this.slot.anyRunning(),
      };
      this.stateAccess = new KernelStateAccess(this.ctx, fn, pools, {
        grain,
        stateSize: this.abi.stateSize,
        maxActors: this.plan.options.maxActors,
        stringKeys: this.plan.grain.keyKind === 'string',
        states: d + BigInt(this.at.states),
        globals: d + BigInt(this.at.globals),
      });
    }
    return this.stateAccess.readDirty();
  }

  async dispose(): Promise<void> {
    if (this.freed) return;
    this.loadPoll?.stop();
    this.loadPoll = undefined;
    // A stopped kernel with residency serves requests until told to exit (residency.ts RES_OP.EXIT).
    if (this.deactivateIdle && this.started && !this.exited)
      residencyExit(this.host.buffer, this.host.offset + this.residencyHostAt);
    this.routesOut();
    if (this.started && !this.exited && !this.fault && !this.slot.poisonedBy) {
      const timeoutMs = this.owner.options.stopTimeoutMs;
      const { slot, ctx, stream, control, reply } = this;
      const out = await stopKernel(this.plan.grain.name, slot, ctx, stream, control, reply, timeoutMs);
      if (out === 'exited') this.exited = true;
      else if (out !== 'poisoned') {
        this.plan.logger.error({ err: out }, out.message);
        this.slot.poisoned(out);
        this.fault = out;
        // Leave the memory: freeing it under a running kernel blocks until the kernel ends.
        this.freed = true;
        this.owner.detach(this);
        return;
      }
    }
    this.freeAll();
    this.owner.detach(this);
  }

  /** Clear this kernel's route everywhere before its queues go away. */
  private routesOut(): void {
    this.freed = true;
    try {
      this.owner.updateRoutes();
    } catch (e) {
      this.slot.poisoned(e as Error);
    }
  }

  freeAll(): void {
    this.freed = true;
    if (this.ctx.disposed) return;
    const attempt = (f: () => void) => {
      try {
        f();
      } catch (e) {
        if (!this.slot.poisonedBy) throw e;
      }
    };
    // The kernel has exited (or never started): its stream is idle, so this free and sync are finite.
    if (this.stateAccess) attempt(() => this.stateAccess!.dispose());
    if (this.residency) attempt(() => this.residency!.dispose());
    attempt(() => this.slot.giveDevice(this.ctx, this.device));
    attempt(() => this.ctx.destroyStream(this.stream));
    attempt(() => this.slot.giveHost(this.ctx, this.host));
  }
}
