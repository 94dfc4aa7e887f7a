/**
 * One grain class's persistent ring kernel on one GPU (one lane group): its host region and device
 * allocation (kernel-layout.ts), the launch, health, state access (inspect, dirty gather, residency) and
 * the stop and free at dispose.
 */
import { performance } from 'node:perf_hooks';
import {
  CONTROL,
  CONTROL_BLOCK_SIZE,
  DeviceGlobals,
  KernelState,
  Ring,
  RingConsumer,
  isReadyDirState,
  layoutOf,
  offsetOf,
  scaledDefault,
  snapshot,
  viewAt,
  type KernelHealth,
  type KernelMemory,
  type DeviceMemoryStats,
  type KernelPlan,
  type OverflowStats,
  type StateBatch,
  type StateUpload,
  type TimerStats,
} from '@ringgrain/core/backend';
import type { Abi } from '@ringgrain/codegen';
import type { DeviceSlot } from './device-slot.ts';
import type { GroupKernel } from './lane-groups.ts';
import { GpuFaultError, GpuStateError, KernelStuckError } from './errors.ts';
import type { HostRegion } from './host-memory.ts';
import { kernelLayout, type DeviceAt } from './kernel-layout.ts';
import { KernelStateAccess } from './kernel-state.ts';
import type { ResolvedCudaOptions } from './options.ts';
import { KernelResidency } from './residency-access.ts';
import { residencyExit, residencyGlobalsImage } from './residency.ts';
import type { Gathered } from './state-gather.ts';
import { TimerHost } from './timer-host.ts';
import {
  CudaError,
  arg,
  type CudaContext,
  type CudaFunction,
  type CudaStream,
  type DeviceBuffer,
} from './driver/index.ts';

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
  /** Polls the load-request ring while the kernel runs (a class that loads: the plan's load). */
  private loadPoll: NodeJS.Timeout | undefined;
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

    const buf = this.host.buffer;
    const base = this.host.offset;
    const lanes = this.hostLanes;
    // Control blocks start zeroed (host memory may be reused): every lane at epoch 0, nothing observed yet.
    new Uint8Array(buf, base, hl.inboundAt).fill(0);
    // The residency host block starts zeroed too: request 0, nothing posted (the kernel reads it from its first loop).
    if (residency) new Uint8Array(buf, base + this.residencyHostAt, hl.bytes - this.residencyHostAt).fill(0);
    for (let l = 0; l < lanes; l++)
      Ring.format(buf, base + hl.inboundAt + l * hl.inboundStride, o.ringCapacity, o.slotSize);
    this.reply = Ring.format(buf, base + hl.replyAt, o.replyCapacity, o.slotSize);
    this.control = new Int32Array(buf, base, CONTROL_BLOCK_SIZE >> 2);
    // Lane 0 carries the reply ring and the counters; every lane has its control block and inbound ring.
    this.memory = {
      lanes: Array.from({ length: lanes }, (_, l) => ({
        control: { buffer: buf, offset: base + l * hl.controlStride },
        inbound: { buffer: buf, offset: base + hl.inboundAt + l * hl.inboundStride },
        replies: l === 0 ? [{ buffer: buf, offset: base + hl.replyAt }] : [],
      })),
    };
    if (plan.timers && timerCount) {
      const th = new TimerHost(buf, base + this.timerHostAt, plan.timers);
      this.timerHost = th;
      this.timerStats = () => th.stats();
      this.publishTime = (now) => th.publish(now);
      this.timersCaughtUp = () => th.caughtUp();
    }
    // Zero every device word on the kernel's own (non-blocking) stream; finite work, so waiting is safe.
    ctx.memsetDeviceAsync(this.device, 0, this.stream);
    // A class with persistent state keeps dirty marks in its turns (DeviceGlobals.metaOn, state-meta.ts).
    if (plan.persistence || opts.stateMarks === true)
      ctx.copyToDeviceAsync(
        this.device,
        Uint32Array.of(1),
        this.stream,
        this.at.globals + offsetOf(DeviceGlobals, 'metaOn'),
      );
    // Activation hooks run where the CPU backend runs them: in a class with persistence (DeviceGlobals.hooksOn).
    if (plan.persistence || opts.activationHooks === true)
      ctx.copyToDeviceAsync(
        this.device,
        Uint32Array.of(1),
        this.stream,
        this.at.globals + offsetOf(DeviceGlobals, 'hooksOn'),
      );
    if (residency) {
      // The residency area's addresses (ResidencyGlobals line 2), and the area's address in DeviceGlobals.
      const area = this.device.devPtr + BigInt(this.at.residency);
      ctx.copyToDeviceAsync(
        this.device,
        residencyGlobalsImage(this.residencyTarget(), this.host.devPtr + BigInt(this.residencyHostAt), area),
        this.stream,
        this.at.residency,
      );
      ctx.copyToDeviceAsync(
        this.device,
        Uint32Array.of(Number(area & 0xffffffffn), Number(area >> 32n), plan.persistence?.load ? 1 : 0),
        this.stream,
        this.at.globals + offsetOf(DeviceGlobals, 'residencyLo'),
      );
    }
    ctx.synchronize(this.stream);
  }

  private residencyTarget(): {
    grain: string;
    stateSize: number;
    maxActors: number;
    partitions: number;
    idleMs: number | undefined;
  } {
    return {
      grain: this.plan.grain.name,
      stateSize: this.abi.stateSize,
      maxActors: this.plan.options.maxActors,
      partitions: this.partitions,
      idleMs: this.plan.persistence?.idleMs,
    };
  }

  /** The residency access, made on first use (its stream and staging mirror). */
  private residencyAccess(): KernelResidency {
    const grain = this.plan.grain.name;
    if (this.fault || this.freed || this.slot.poisonedBy) {
      throw new GpuStateError(
        grain,
        'GPU_STATE_UNAVAILABLE',
        this.freed ? 'the kernel was disposed' : 'the kernel faulted',
        { cause: this.fault ?? this.slot.poisonedBy },
      );
    }
    if (!this.residency) {
      const stateHost = this.plan.persistence!.host;
      const pools = {
        device: this.slot.deviceMemory,
        host: this.slot.stagingHost,
        running: () => this.slot.anyRunning(),
      };
      const place = {
        device: this.device,
        areaAt: this.at.residency,
        buffer: this.host.buffer,
        offset: this.host.offset + this.residencyHostAt,
      };
      // A request waits for every worker's walk of the directory (a deactivation of a million actors, hooks
      // included): bounded by a minute (times RINGGRAIN_TIMEOUT_SCALE via stopTimeoutMs's scale), or the stop timeout
      // if longer.
      const timeoutMs = Math.max(this.owner.options.stopTimeoutMs, scaledDefault(60_000));
      this.residency = new KernelResidency(
        this.ctx,
        pools,
        this.residencyTarget(),
        place,
        stateHost,
        () => this.health().fault ?? (this.freed ? new Error('the kernel was disposed') : undefined),
        timeoutMs,
      );
    }
    return this.residency;
  }

  async start(): Promise<void> {
    const o = this.plan.options;
    const h = this.host.devPtr;
    const d = this.device.devPtr;
    const values: Record<string, bigint | number> = {
      control: h,
      inbound: h + BigInt(this.memory.lanes[0]!.inbound.offset - this.host.offset),
      replies: h + BigInt(this.memory.lanes[0]!.replies[0]!.offset - this.host.offset),
      queues: d + BigInt(this.at.queues),
      states: d + BigInt(this.at.states),
      directory: d + BigInt(this.at.directory),
      globals: d + BigInt(this.at.globals),
      routes: d + BigInt(this.at.routes),
      scratch: d + BigInt(this.at.scratch),
      overflow: d + BigInt(this.at.overflow),
      overflowNodes: this.overflowNodes,
      routeCount: this.plan.grains.length,
      partitions: this.partitions,
      queueCapacity: this.queueCapacity,
      ringCapacity: o.ringCapacity,
      replyCapacity: o.replyCapacity,
      slotSize: o.slotSize,
      maxActors: o.maxActors,
      dirCapacity: this.dirCapacity,
      turnBudget: Math.min(o.turnBudget, 0xffffffff),
      sendBudget: this.owner.options.sendBudget,
      lanes: this.hostLanes,
      laneBytes: this.inboundStride,
      timers: this.timerHost ? d + BigInt(this.at.timers) : 0n,
      timerHost: this.timerHost ? h + BigInt(this.timerHostAt) : 0n,
    };
    // The kernel clock's origin, as close to the launch as the host can write it.
    this.timerHost?.init();
    // The argument list follows the ABI's one parameter list, in order.
    const args = this.abi.params.map((p) => {
      const v = values[p.name];
      if (v === undefined)
        throw new Error(`cuda-backend: no value for kernel parameter ${p.name} (codegen ABI changed?)`);
      return p.kind === 'ptr' ? arg.ptr(BigInt(v)) : p.kind === 'u64' ? arg.u64(v) : arg.u32(Number(v));
    });
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
    // Keys the workers post for loading go to the plan's load within a millisecond (health() polls too),
    // and so do actors they deactivate to make room (a class with idleMs: the evict ring, residency.ts).
    if (this.writeStates && (this.plan.persistence?.load || this.plan.persistence?.idleMs !== undefined)) {
      this.loadPoll = setInterval(() => this.pollLoads(), 1);
      this.loadPoll.unref();
    }
  }

  wake(): void {
    // The GPU polls its inbound ring and control block: nothing to wake.
  }

  private stopRequested(): boolean {
    return Atomics.load(this.control, CONTROL.requested) === KernelState.STOP;
  }

  /** One stream query (a driver call): a sticky error is a fault; a stream that ended before STOP is one too. */
  private query(): void {
    if (this.fault || !this.started || this.exited || this.freed) return;
    const poison = this.slot.poisonedBy;
    if (poison) {
      this.fault =
        poison instanceof GpuFaultError
          ? poison
          : new GpuFaultError(
              this.plan.grain.name,
              'GPU_CONTEXT_POISONED',
              `the CUDA context is poisoned: ${poison.message.split('\n')[0]}`,
              { cause: poison },
            );
      return;
    }
    try {
      if (this.ctx.streamQuery(this.stream) === 'complete') {
        this.exited = true;
        if (!this.stopRequested() || Atomics.load(this.control, CONTROL.observed) !== KernelState.STOPPED) {
          this.fault = new GpuFaultError(
            this.plan.grain.name,
            'GPU_KERNEL_EXITED',
            'the persistent kernel exited without being asked to stop',
          );
        }
      }
    } catch (e) {
      const result = e instanceof CudaError ? e.result : undefined;
      this.fault = new GpuFaultError(
        this.plan.grain.name,
        'GPU_FAULT',
        `the GPU reported ${e instanceof CudaError ? `${e.code} (${e.result})` : String(e)}`,
        {
          cause: e,
          ...(result === undefined ? {} : { cudaResult: result }),
        },
      );
      this.slot.poisoned(this.fault);
    }
  }

  /** Keys posted on the load-request ring, to the plan's load (residency.ts). */
  private pollLoads(): void {
    if (this.fault || this.freed || this.exited) return;
    try {
      this.residencyAccess().host.pollLoads();
    } catch (e) {
      this.plan.logger.warn(
        { err: e, grain: this.plan.grain.name },
        `${this.plan.grain.name}: reading the load-request ring failed: ${(e as Error).message}`,
      );
    }
  }

  health(): KernelHealth {
    if (this.loadPoll) this.pollLoads();
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
    const bytes = this.slot.readDevice(this.device, this.at.overflow, layoutOf(this.abi.schemas.OverflowHeader).size);
    const v = viewAt(this.abi.schemas.OverflowHeader, bytes.buffer, bytes.byteOffset) as Record<string, number>;
    return {
      capacity: this.overflowNodes - this.partitions,
      inUse: v['inUse']!,
      highWater: v['highWater']!,
      overflowed: v['overflowed']!,
      exhausted: v['exhausted']!,
    };
  }

  async inspect(key: number | string): Promise<unknown> {
    if (typeof key !== 'number' || this.fault || this.freed || this.slot.poisonedBy) return undefined;
    const dirSchema = this.abi.schemas.DirEntry;
    const entry = layoutOf(dirSchema).size;
    const dir = this.slot.readDevice(this.device, this.at.directory, entry * this.dirCapacity);
    const lo = Number(BigInt.asUintN(32, BigInt(key)));
    const hi = Number(BigInt.asUintN(32, BigInt(key) >> 32n));
    for (let i = 0; i < this.dirCapacity; i++) {
      const e = snapshot(dirSchema, dir.buffer, i * entry) as {
        keyLo: number;
        keyHi: number;
        slot: number;
        state: number;
      };
      if (!isReadyDirState(e.state) || e.keyLo !== lo || e.keyHi !== hi) continue;
      const size = this.abi.stateSize;
      const bytes = this.slot.readDevice(this.device, this.at.states + e.slot * size, size);
      return snapshot(this.plan.grain.state, bytes.buffer, 0);
    }
    return undefined;
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

  /** Discards replies nobody will read, so a kernel finishing its drain never waits on a full reply ring. */
  private drainReplies(c: RingConsumer): void {
    while (c.peek() >= 0) c.release();
  }

  async dispose(): Promise<void> {
    if (this.freed) return;
    if (this.loadPoll) clearInterval(this.loadPoll);
    this.loadPoll = undefined;
    // A stopped kernel with residency serves requests until told to exit (residency.ts RES_OP.EXIT).
    if (this.deactivateIdle && this.started && !this.exited)
      residencyExit(this.host.buffer, this.host.offset + this.residencyHostAt);
    this.routesOut();
    if (this.started && !this.exited && !this.fault && !this.slot.poisonedBy) {
      if (!this.stopRequested()) {
        // Core timed out before asking, or the launch handshake failed: ask now.
        Atomics.store(this.control, CONTROL.requested, KernelState.STOP);
        Atomics.store(this.control, CONTROL.requestEpoch, (Atomics.load(this.control, CONTROL.requestEpoch) + 1) | 0);
      }
      const consumer = new RingConsumer(this.reply);
      const deadline = performance.now() + this.owner.options.stopTimeoutMs;
      for (;;) {
        this.drainReplies(consumer);
        let done: boolean;
        try {
          done = this.ctx.streamQuery(this.stream) === 'complete';
        } catch (e) {
          this.slot.poisoned(e as Error);
          break;
        }
        if (done) {
          this.exited = true;
          break;
        }
        if (performance.now() > deadline) {
          const err = new KernelStuckError(this.plan.grain.name, this.owner.options.stopTimeoutMs);
          this.plan.logger.error({ err }, err.message);
          this.slot.poisoned(err);
          this.fault = err;
          // Leave the memory: freeing it under a running kernel blocks until the kernel ends.
          this.freed = true;
          this.owner.detach(this);
          return;
        }
        await new Promise<void>((r) => setTimeout(r, 1));
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
