import {
  CONTROL,
  CONTROL_BLOCK_SIZE,
  KernelState,
  Ring,
  RingConsumer,
  layoutOf,
  offsetOf,
  snapshot,
  viewAt,
  type Backend,
  type BackendKernel,
  type GrainDef,
  type KernelHealth,
  type KernelMemory,
  type KernelPlan,
  type StateBatch,
  type StateUpload,
  type OverflowStats,
  type ProbeResult,
  type TimerStats,
  scaledDefault,
} from '@ringgrain/core';
import { DeviceGlobals, MAX_HOST_LANES, TIMER_HOST_BYTES, generateKernel, isReadyDirState, overflowLayout, residencyHostBytes, residencyLayout, timerLayout, type Abi } from '@ringgrain/codegen';
import { KernelResidency } from './residency-access.ts';
import { residencyExit, residencyGlobalsImage } from './residency.ts';
import { TimerHost } from './timer-host.ts';
import { performance } from 'node:perf_hooks';
import { CoResidencyError, CudaBackendOptionsError, GpuFaultError, KernelStuckError, ModuleLoadWhileRunningError, StackFrameTooLargeError } from './errors.ts';
import { DeviceMemoryPool } from './device-memory.ts';
import { CuFunctionAttribute, CudaContext, CudaError, arg, compileCached, compileCachedAsync, probeCuda, type CompileCachedOptions, type CompileCachedResult, type CudaFunction, type CudaModule, type CudaStream, type DeviceBuffer } from './driver/index.ts';
import { unitCompileOptions } from './nvrtc-unit.ts';
import { DEFAULT_PARTITIONS, DEFAULT_QUEUE_CAPACITY, scaledPartitions, scaledQueueCapacity } from './sizing.ts';
import { deferredByDevice, runningOn, stickyByDevice } from './device-registry.ts';
import { PinnedHostMemory, type HostMemorySource, type HostRegion } from './host-memory.ts';
import { INTERNALS } from './internals.ts';
import { GpuStateError } from './errors.ts';
import { KernelStateAccess } from './kernel-state.ts';
import type { Gathered } from './state-gather.ts';

export interface CudaBackendOptions {
  /** CUDA device ordinal (default 0). */
  readonly device?: number;
  /**
   * Worker warps (= device partition queues) per ring kernel. Default: 32, and for a grain class of more
   * than 262,144 actors (`maxActors`) one per 2,048 actors, up to 512 (1,000,000 actors: 512), because a
   * big class's bursts need the warps (`partitionsFor`; the README's GPU section has the measurements);
   * scaled partitions halve (down to 32) where the kernels already resident leave too little room.
   */
  readonly partitions?: number;
  /**
   * Slots per device partition queue, a power of two. Default: 256, and for big grain classes enough for
   * half of `maxActors` over all partitions, up to 16,384 a queue (`queueCapacityFor`): a burst larger
   * than the queues waits in the overflow pool, which costs more per message. Either default is capped
   * at 64 MiB of slots a queue (at least 16 slots): vector-add's 8 MB slots took 256 × 8 MB a queue.
   */
  readonly queueCapacity?: number;
  /**
   * Host lanes per ring kernel, 1 to 32 (default 4): each is an inbound ring (ringCapacity slots) with
   * its own ingress warp, and the host sends a key's messages into lane laneOfKey(key, hostLanes), so
   * host → GPU throughput scales with lanes while FIFO per sender → actor holds. One warp moves about
   * 3 M small messages/s (measured on the H100), so more lanes help `tellMany` and many tells.
   */
  readonly hostLanes?: number;
  /** SMs left free for other launches (default max(4, SMs / 8)); the README says why the CUDA backend keeps SMs free. */
  readonly reserveSMs?: number;
  /**
   * Keep each actor's dirty mark and last-turn clock in every kernel, also of classes without storage
   * (default false: only classes with storage keep them, since a writing turn's marks cost two fences on
   * its K2K path). For tests and benchmarks of the dirty gather (`@ringgrain/cuda-backend/testing`).
   */
  readonly stateMarks?: boolean;
  /**
   * Run the class's onActivate at every activation, also of classes without persistence (default false:
   * as on the CPU backend, hooks run only for classes with storage or idleMs). For tests of the
   * translated hooks on the GPU (test/hooks/activation-hooks.test.ts).
   */
  readonly activationHooks?: boolean;
  /**
   * Actor residency on the device (issue 30; codegen README "Persistent state on CUDA"): a class with
   * storage or idleMs gets writeStates (load on first message, preload) and deactivateIdle (onDeactivate,
   * idle collection) from its kernel, so the system no longer refuses it with StorageUnsupportedError.
   * Default false until the CUDA conformance lanes have passed with it on a GPU (the host harness covers
   * the device code: codegen test/residency-device.test.ts).
   */
  readonly residency?: boolean;
  /** Most ms to wait for a kernel to exit after STOP before declaring its context poisoned (default 2000, times RINGGRAIN_TIMEOUT_SCALE). */
  readonly stopTimeoutMs?: number;
  /** Retries (≈256 ns apart) of a K2K send into a full queue before the turn fails QUEUE_FULL; only with overflowBytes 0 (default 65536). */
  readonly sendBudget?: number;
  /**
   * Device memory per kernel for K2K messages that find their target queue full (default: 1 GiB or a
   * sixteenth of the device's free memory at launch, whichever is less): they
   * wait there, in order, instead of failing the sending turn. A send fails (POOL_EXHAUSTED) only when
   * the pool is full. 0: no pool (a full queue is retried sendBudget times, then the turn fails QUEUE_FULL).
   */
  readonly overflowBytes?: number;
  /** Stream queries (driver calls) at most this often per kernel; health() is off the hot path (default 50). */
  readonly healthIntervalMs?: number;
  /** Compile cache directory (default: $RINGGRAIN_CACHE_DIR or ~/.cache/ringgrain/cubin). */
  readonly cacheDir?: string;
  /** Where rings live on the host (default: pinned buffers of this process; the GPU host process passes a shared mapping). */
  readonly hostMemory?: HostMemorySource;
}

/** Local memory (stack) a CUDA thread may have on current GPUs (CUDA programming guide, technical specifications). */
const MAX_LOCAL_BYTES_PER_THREAD = 512 * 1024;

/** How a kernel came to be: what compile and load cost (a cached launch compiles nothing). */
export interface LaunchInfo {
  readonly grain: string;
  readonly cached: boolean;
  readonly compileMs: number;
  readonly generateMs: number;
  readonly loadMs: number;
  /** createKernel from entry to return: generate + compile/cache + load + allocate. */
  readonly createMs: number;
  readonly blocks: number;
  readonly threadsPerBlock: number;
  readonly blocksPerSM: number;
  /** Local memory (stack) per thread the kernel needs (cuFuncGetAttribute LOCAL_SIZE_BYTES). */
  readonly stackBytesPerThread: number;
  /** Registers per thread (cuFuncGetAttribute NUM_REGS): with blocksPerSM, the kernel's occupancy. */
  readonly registersPerThread: number;
  readonly partitions: number;
}

const ALIGN_DEVICE = 256;
const ALIGN_HOST = 128;
const up = (n: number, a: number) => Math.ceil(n / a) * a;

interface Generated {
  readonly source: string;
  readonly abi: Abi;
  readonly generateMs: number;
}



/**
 * The CUDA backend: one persistent ring kernel per grain class, all in one CUDA context (the device's
 * primary context). Host-shared memory (control block, inbound ring, reply ring) is pinned and mapped;
 * the partition queues, state table, directory, counters and routing table live in device memory.
 * Nothing on the per-message path calls the driver: the host writes rings and reads the control block.
 */
export class CudaBackend implements Backend {
  readonly name = 'cuda';
  /** placement 'auto' tries a GPU before backends of rank 0 (the CPU). */
  readonly autoRank = 10;
  readonly options: Required<Omit<CudaBackendOptions, "reserveSMs" | "cacheDir" | "hostMemory">> & { readonly reserveSMs: number | undefined; readonly cacheDir: string | undefined };
  /** What the user set (undefined: the scaled defaults of partitionsFor / queueCapacityFor). */
  private readonly fixedPartitions: number | undefined;
  private readonly fixedQueueCapacity: number | undefined;
  private ctx: CudaContext | undefined;
  /** Non-blocking stream for setup copies (routes, inspect) while kernels run. */
  private setup: CudaStream | undefined;
  /** Why the current context may not be used again (sticky fault, stuck kernel). */
  private poison: Error | undefined;
  private readonly live = new Set<CudaKernel>();
  private readonly generated = new Map<GrainDef, { key: string; gen: Generated }>();
  /**
   * Loaded modules by generated source. Loading and unloading a module wait for every running kernel
   * (measured: test/gpu/blocking-probe.cu), so modules are loaded before the first ring kernel starts
   * and kept until the context goes (a relaunch reuses them).
   */
  private readonly modules = new Map<string, { mod: CudaModule; fn: CudaFunction; gather: CudaFunction; cached: boolean; compileMs: number; loadMs: number }>();
  /** Images compiled (or read from the disk cache) ahead of their load, by generated source: compileAll. */
  private readonly compiling = new Map<string, Promise<CompileCachedResult>>();
  /** Images compileAll finished, by generated source (taken by loadGrain). */
  private readonly compiled = new Map<string, CompileCachedResult>();
  /** Host-shared ring memory: pinned buffers (pooled while kernels run), or a shared mapping. */
  readonly hostMemory: HostMemorySource;
  /** Device buffers of terminated kernels, kept while other kernels run (cuMemFree would wait for them). */
  readonly deviceMemory = new DeviceMemoryPool();
  /** Each placed grain's dirty gather kernel (write-behind), from its loaded module. */
  private readonly gathers = new Map<GrainDef, CudaFunction>();
  /** Pinned staging of the kernels' dirty gathers (apart from hostMemory: an isolated backend's shared mapping holds rings only). */
  readonly stagingHost = new PinnedHostMemory();
  /** Launch facts of every kernel created (tests and benchmarks read these). */
  readonly launches: LaunchInfo[] = [];
  /** Contexts created so far (1 + recoveries). */
  contextsCreated = 0;

  constructor(opts: CudaBackendOptions = {}) {
    this.fixedPartitions = opts.partitions;
    this.fixedQueueCapacity = opts.queueCapacity;
    this.options = {
      device: opts.device ?? 0,
      partitions: opts.partitions ?? DEFAULT_PARTITIONS,
      queueCapacity: opts.queueCapacity ?? DEFAULT_QUEUE_CAPACITY,
      hostLanes: opts.hostLanes ?? 4,
      stopTimeoutMs: opts.stopTimeoutMs ?? scaledDefault(2_000),
      sendBudget: opts.sendBudget ?? 1 << 16,
      overflowBytes: opts.overflowBytes ?? -1,
      healthIntervalMs: opts.healthIntervalMs ?? 50,
      stateMarks: opts.stateMarks ?? false,
      activationHooks: opts.activationHooks ?? false,
      residency: opts.residency ?? false,
      reserveSMs: opts.reserveSMs,
      cacheDir: opts.cacheDir,
    };
    this.hostMemory = opts.hostMemory ?? new PinnedHostMemory();
    const q = this.options.queueCapacity;
    if (!Number.isInteger(q) || q < 2 || (q & (q - 1)) !== 0) throw new CudaBackendOptionsError(`queueCapacity must be a power of two ≥ 2, got ${q}`);
    if (!Number.isInteger(this.options.partitions) || this.options.partitions < 1) throw new CudaBackendOptionsError(`partitions must be a positive integer, got ${this.options.partitions}`);
    const h = this.options.hostLanes;
    if (!Number.isInteger(h) || h < 1 || h > MAX_HOST_LANES) throw new CudaBackendOptionsError(`hostLanes must be an integer from 1 to ${MAX_HOST_LANES}, got ${h}`);
    if (opts.overflowBytes !== undefined && (!Number.isInteger(opts.overflowBytes) || opts.overflowBytes < 0)) throw new CudaBackendOptionsError(`overflowBytes must be a non-negative integer, got ${this.options.overflowBytes}`);
  }

  /** Partitions of a kernel with this many actors: the `partitions` option, else the scaled default. */
  partitionsFor(maxActors: number): number {
    return this.fixedPartitions ?? scaledPartitions(maxActors);
  }

  /** Slots per partition queue of a kernel with this many actors: the `queueCapacity` option, else the scaled default. */
  queueCapacityFor(maxActors: number, partitions: number, slotSize: number): number {
    return this.fixedQueueCapacity ?? scaledQueueCapacity(maxActors, partitions, slotSize);
  }

  async probe(): Promise<ProbeResult> {
    const p = probeCuda({ device: this.options.device });
    if (!p.ok) return { ok: false, reason: p.reason };
    return { ok: true, device: `${p.device.name} (${p.device.arch}, driver ${p.driverVersionString}, NVRTC ${p.nvrtc?.version ?? '?'})` };
  }

  /** The live context (created on first use, and again after a poisoned one was released). */
  context(): CudaContext {
    if (this.poison) {
      if (this.live.size > 0) {
        throw new GpuFaultError('*', 'GPU_CONTEXT_POISONED', `the CUDA context is poisoned (${this.poison.message.split('\n')[0]}); terminate every grain on this backend first`, { cause: this.poison });
      }
      this.releaseContext();
    }
    const sticky = stickyByDevice.get(this.options.device);
    if (sticky) {
      throw new GpuFaultError('*', 'GPU_CONTEXT_POISONED', `CUDA device ${this.options.device} took a sticky fault in this process (${sticky.message.split('\n')[0]}); CUDA keeps that error until the process exits`, {
        cause: sticky,
        hint: 'restart the process to use the GPU again (run GPU grains in a supervised child process to recover without restarting the host application); other backends (cpu) keep working',
      });
    }
    if (!this.ctx) {
      this.ctx = CudaContext.create({ device: this.options.device });
      this.setup = this.ctx.createStream();
      this.contextsCreated++;
    }
    return this.ctx;
  }

  /** Residency bookkeeping: blocks of live kernels. */
  residentBlocks(): number {
    let n = 0;
    for (const k of runningOn(this.options.device)) n += k.blocks;
    return n;
  }

  private generate(def: GrainDef, grains: ReadonlyArray<GrainDef | undefined>): Generated {
    const key = grains.map((g) => g?.name ?? '').join('\u0000');
    const hit = this.generated.get(def);
    if (hit && hit.key === key) return hit.gen;
    const t0 = performance.now();
    const g = generateKernel(def, { grains });
    const gen = { source: g.source, abi: g.abi, generateMs: performance.now() - t0 };
    this.generated.set(def, { key, gen });
    return gen;
  }

  private compileOptions(ctx: CudaContext, def: GrainDef): CompileCachedOptions {
    return unitCompileOptions(def, ctx.device.arch, this.options.cacheDir);
  }

  /**
   * Compiles every grain class placed here whose module is not loaded yet, all at once: NVRTC runs on worker
   * threads (compileCachedAsync), so a system's first launch waits for its slowest class, not for the sum
   * of them (SIR's two classes were compiled one after the other: 17.5 s on the H100 host, where one took 6.3 s).
   */
  private async compileAll(ctx: CudaContext, which: ReadonlyArray<GrainDef | undefined>, grains: ReadonlyArray<GrainDef | undefined>): Promise<void> {
    const jobs: Promise<unknown>[] = [];
    // `which` says what to compile; every unit is generated against the system's whole grain list (`grains`,
    // the slot-header ids), or a class's K2K sends to another class would not translate.
    for (const def of which) {
      if (!def) continue;
      const gen = this.generate(def, grains);
      if (this.modules.has(gen.source) || this.compiled.has(gen.source)) continue;
      let job = this.compiling.get(gen.source);
      if (!job) {
        job = compileCachedAsync(gen.source, this.compileOptions(ctx, def));
        this.compiling.set(gen.source, job);
        const source = gen.source;
        job.then((r) => this.compiled.set(source, r), () => this.compiling.delete(source));
      }
      jobs.push(job);
    }
    await Promise.all(jobs);
  }

  /** Generates, compiles (or takes from the disk cache) and loads one grain's module. */
  private loadGrain(ctx: CudaContext, def: GrainDef, grains: ReadonlyArray<GrainDef | undefined>): { gen: Generated; mod: CudaModule; fn: CudaFunction; gather: CudaFunction; cached: boolean; compileMs: number; loadMs: number } {
    const gen = this.generate(def, grains);
    const hit = this.modules.get(gen.source);
    if (hit) return { gen, ...hit, cached: true, compileMs: 0, loadMs: 0 };
    const running = runningOn(this.options.device);
    if (running.size > 0) throw new ModuleLoadWhileRunningError(def.name, [...running].map((k) => k.plan.grain.name));
    const compiled = this.compiled.get(gen.source) ?? compileCached(gen.source, this.compileOptions(ctx, def));
    this.compiled.delete(gen.source);
    this.compiling.delete(gen.source);
    const l0 = performance.now();
    const mod = ctx.loadModule(compiled.cubin);
    let fn: CudaFunction;
    let gather: CudaFunction;
    try {
      fn = ctx.getFunction(mod, gen.abi.entry);
      gather = ctx.getFunction(mod, gen.abi.gatherEntry);
    } catch (e) {
      ctx.unloadModule(mod);
      throw e;
    }
    const entry = { mod, fn, gather, cached: compiled.cached, compileMs: compiled.compileMs, loadMs: performance.now() - l0 };
    this.modules.set(gen.source, entry);
    return { gen, ...entry };
  }

  async createKernel(plan: KernelPlan): Promise<CudaKernel> {
    const t0 = performance.now();
    const ctx = this.context();
    const grain = plan.grain.name;
    // Every grain placed here is compiled at once, and loaded now, while nothing runs: later launches must not load.
    await this.compileAll(ctx, runningOn(this.options.device).size === 0 ? plan.grains : [plan.grain], plan.grains);
    const own = this.loadGrain(ctx, plan.grain, plan.grains);
    if (runningOn(this.options.device).size === 0) for (const def of plan.grains) if (def && def !== plan.grain) this.loadGrain(ctx, def, plan.grains);
    const { gen, fn } = own;
    this.gathers.set(plan.grain, own.gather);
    const frame = ctx.functionAttribute(fn, CuFunctionAttribute.LOCAL_SIZE_BYTES);
    if (frame > MAX_LOCAL_BYTES_PER_THREAD) throw new StackFrameTooLargeError(grain, frame, MAX_LOCAL_BYTES_PER_THREAD);
    const { hostLanes } = this.options;
    let partitions = this.partitionsFor(plan.options.maxActors);
    let launch = gen.abi.launch({ partitions, lanes: hostLanes });
    const perSM = ctx.maxActiveBlocksPerMultiprocessor(fn, launch.threadsPerBlock, launch.sharedBytes);
    const sms = ctx.device.multiprocessorCount;
    const reservedSMs = Math.min(sms, this.options.reserveSMs ?? Math.max(4, Math.floor(sms / 8)));
    const capacity = perSM * (sms - reservedSMs);
    const resident = this.residentBlocks();
    // Scaled partitions (none set by the user) give way to the kernels already resident: halved down to
    // the small-class default rather than a CoResidencyError for a third or fourth big class.
    while (this.fixedPartitions === undefined && partitions > DEFAULT_PARTITIONS && resident + launch.blocks > capacity) {
      partitions /= 2;
      launch = gen.abi.launch({ partitions, lanes: hostLanes });
    }
    if (perSM === 0 || resident + launch.blocks > capacity) {
      throw new CoResidencyError(grain, { requested: launch.blocks, resident, capacity, perSM, sms, reservedSMs });
    }
    const kernel = new CudaKernel(this, ctx, plan, gen.abi, fn, launch, partitions);
    const info: LaunchInfo = {
      grain,
      cached: own.cached,
      compileMs: own.compileMs,
      generateMs: gen.generateMs,
      loadMs: own.loadMs,
      createMs: performance.now() - t0,
      blocks: launch.blocks,
      threadsPerBlock: launch.threadsPerBlock,
      blocksPerSM: perSM,
      stackBytesPerThread: frame,
      registersPerThread: ctx.functionAttribute(fn, CuFunctionAttribute.NUM_REGS),
      partitions,
    };
    this.launches.push(info);
    plan.logger.info(
      { grain, cached: own.cached, compileMs: Math.round(own.compileMs), loadMs: +own.loadMs.toFixed(2), createMs: +info.createMs.toFixed(1), blocks: launch.blocks, perSM, resident, capacity },
      `cuda: ${grain} kernel ${own.cached ? 'from the compile cache' : `compiled in ${Math.round(own.compileMs)} ms`}, ${launch.blocks} blocks (${resident} resident of ${capacity})`,
    );
    this.live.add(kernel);
    runningOn(this.options.device).add(kernel);
    try {
      this.updateRoutes();
    } catch (e) {
      this.live.delete(kernel);
      runningOn(this.options.device).delete(kernel);
      kernel.freeAll();
      throw e;
    }
    return kernel;
  }

  private overflowDefault: number | undefined;
  /** Bytes of each kernel's K2K overflow pool: the option, or a default fixed at the first launch (so relaunches reuse pooled buffers). */
  overflowBytes(ctx: CudaContext): number {
    if (this.options.overflowBytes >= 0) return this.options.overflowBytes;
    this.overflowDefault ??= Math.min(1 << 30, Math.floor(ctx.memInfo().freeBytes / 16));
    return this.overflowDefault;
  }

  /** Gives a kernel's device memory back: freed now if no kernel runs, else pooled until none does. */
  giveDevice(ctx: CudaContext, buf: DeviceBuffer): void {
    this.deviceMemory.give(ctx, buf, runningOn(this.options.device).size > 0);
  }

  /** Gives a kernel's host region back: freed now if no kernel runs, else as the source decides. */
  giveHost(ctx: CudaContext, region: HostRegion): void {
    this.hostMemory.give(ctx, region, runningOn(this.options.device).size > 0);
  }

  /** Nothing runs: free what could not be freed while kernels ran (pooled pinned memory, pool reservations). */
  private releaseIdle(): void {
    const ctx = this.ctx;
    if (!ctx || ctx.disposed || runningOn(this.options.device).size > 0) return;
    this.hostMemory.idle(ctx);
    this.stagingHost.idle(ctx);
    this.deviceMemory.idle(ctx);
    // Modules stay loaded (code, like the compile cache) until the context goes: a relaunch reuses them.
    ctx.trimMemoryPool();
  }

  /**
   * Routing tables (device memory, one per kernel): entry g = where grain id g's partition queues are.
   * Rewritten on a setup stream whenever a kernel comes or goes; a kernel's entry is cleared before its
   * queues are freed.
   */
  updateRoutes(): void {
    const ctx = this.ctx;
    if (!ctx || this.poison || !this.setup) return;
    for (const k of this.live) {
      const table = k.routeTable;
      table.fill(0);
      for (const peer of this.live) {
        if (peer.freed) continue;
        const id = peer.plan.grainId;
        if (k.plan.grains[id] !== peer.plan.grain) continue; // ids are per system: only peers of the same grain list
        const v = viewAt(k.abi.schemas.RouteEntry, table.buffer, table.byteOffset + id * k.routeStride) as Record<string, number>;
        v['queuesLo'] = Number(peer.queues.devPtr & 0xffffffffn);
        v['queuesHi'] = Number(peer.queues.devPtr >> 32n);
        v['partitions'] = peer.partitions;
        v['queueCapacity'] = peer.queueCapacity;
        v['slotSize'] = peer.plan.options.slotSize;
        v['poolLo'] = Number(peer.overflowPool & 0xffffffffn);
        v['poolHi'] = Number(peer.overflowPool >> 32n);
        v['poolNodes'] = peer.overflowNodes;
      }
      ctx.copyToDeviceAsync(k.device, table, this.setup, k.routesAt);
    }
    ctx.synchronize(this.setup);
  }

  /** Called by a kernel that saw a sticky fault or could not be stopped. */
  poisoned(error: Error): void {
    this.poison ??= error;
    if (error instanceof GpuFaultError || error instanceof CudaError) {
      if (!stickyByDevice.has(this.options.device)) stickyByDevice.set(this.options.device, error);
    }
  }

  get poisonedBy(): Error | undefined {
    return this.poison;
  }

  detach(k: CudaKernel): void {
    this.live.delete(k);
    const running = runningOn(this.options.device);
    running.delete(k);
    if (this.live.size === 0 && this.poison && this.ctx) this.releaseContext();
    else if (this.live.size === 0) this.releaseIdle();
    if (running.size > 0) return;
    // The last kernel on the device ended: what other backends had to leave behind can go now.
    for (const ctx of deferredByDevice.get(this.options.device)?.splice(0) ?? []) {
      try {
        ctx.dispose();
      } catch (e) {
        if (!stickyByDevice.has(this.options.device)) throw e;
      }
    }
  }

  /** The gather kernel of a grain placed here (its module is loaded). */
  gatherFunction(def: GrainDef): CudaFunction | undefined {
    return this.gathers.get(def);
  }

  /** Whether any ring kernel runs on this backend's device (frees would wait for it). */
  anyRunning(): boolean {
    return runningOn(this.options.device).size > 0;
  }

  /** Setup-stream device → host copy (inspect). */
  readDevice(buf: DeviceBuffer, offset: number, bytes: number): Uint8Array {
    const out = new Uint8Array(bytes);
    this.ctx!.copyFromDeviceAsync(out, buf, this.setup!, offset);
    this.ctx!.synchronize(this.setup!);
    return out;
  }

  /** Drop the context: frees what it still holds and releases the primary context (resetting it if poisoned). */
  private releaseContext(): void {
    const ctx = this.ctx;
    this.ctx = undefined;
    this.setup = undefined;
    const why = this.poison;
    this.poison = undefined;
    // The context's dispose frees (or, poisoned, abandons) these with everything else.
    this.modules.clear();
    this.hostMemory.contextGone();
    this.stagingHost.contextGone();
    this.gathers.clear();
    this.deviceMemory.contextGone();
    if (!ctx) return;
    if (!why && runningOn(this.options.device).size > 0) {
      // Other backends' kernels run in this primary context: freeing now would wait for them.
      let list = deferredByDevice.get(this.options.device);
      if (!list) deferredByDevice.set(this.options.device, (list = []));
      list.push(ctx);
      return;
    }
    try {
      ctx.dispose({ reset: why !== undefined });
    } catch (e) {
      // After a sticky fault every free fails; the primary context is released regardless.
      if (!why) throw e;
    }
  }

  /** The context's allocation statistics and device memory (leak tests). */
  memoryReport(): { stats: ReturnType<CudaContext['stats']>; mem: ReturnType<CudaContext['memInfo']> } | undefined {
    if (!this.ctx) return undefined;
    return { stats: this.ctx.stats(), mem: this.ctx.memInfo() };
  }

  async dispose(): Promise<void> {
    for (const k of [...this.live]) await k.dispose();
    if (this.ctx) this.releaseContext();
  }

  /** The package's own tools (fault injection) reach the context and the live kernels through this. */
  [INTERNALS](): { ctx: CudaContext | undefined; setup: CudaStream | undefined; live: ReadonlySet<CudaKernel>; modules: ReadonlyMap<string, { mod: CudaModule }> } {
    return { ctx: this.ctx, setup: this.setup, live: this.live, modules: this.modules };
  }
}

/** One grain class's persistent ring kernel on the GPU. */
export class CudaKernel implements BackendKernel {
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
  private readonly at: { queues: number; states: number; directory: number; globals: number; routes: number; scratch: number; overflow: number; timers: number; residency: number };
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
  /** Byte offset of the timers' host block in the host region's buffer (the isolated backend's application side reads it there). */
  get timerHostOffset(): number | undefined {
    return this.timerHost ? this.host.offset + this.timerHostAt : undefined;
  }
  /** Nodes of this kernel's K2K overflow pool (0: none). */
  readonly overflowNodes: number;
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
    private readonly backend: CudaBackend,
    private readonly ctx: CudaContext,
    readonly plan: KernelPlan,
    readonly abi: Abi,
    private readonly fn: CudaFunction,
    private readonly launchCfg: { blocks: number; threadsPerBlock: number; sharedBytes: number },
    partitions: number,
  ) {
    const o = plan.options;
    this.partitions = partitions;
    this.queueCapacity = backend.queueCapacityFor(o.maxActors, this.partitions, o.slotSize);
    this.blocks = launchCfg.blocks;
    this.hostLanes = backend.options.hostLanes;
    const sizes = abi.sizes({ maxActors: o.maxActors, ringCapacity: o.ringCapacity, replyCapacity: o.replyCapacity, slotSize: o.slotSize, partitions: this.partitions, queueCapacity: this.queueCapacity, lanes: this.hostLanes });
    this.inboundStride = sizes.inboundStride;
    this.readDirty = plan.persistence ? async () => (await this.gatherDirty()).batch : undefined;
    // String keys are interned ids on the device: their states could not be named to the store (the system then refuses the class).
    const residency = plan.persistence !== undefined && abi.residency && backend.options.residency && plan.grain.keyKind !== 'string';
    this.deactivateIdle = residency ? (before, now) => this.residencyAccess().deactivateIdle(before, now) : undefined;
    this.writeStates = residency ? (u) => this.residencyAccess().host.writeStates(u) : undefined;
    this.dirCapacity = abi.dirCapacity({ maxActors: o.maxActors });
    this.routeStride = sizes.routesPerGrain;

    // Pinned, mapped host memory: a control block per host lane, an inbound ring per host lane, the reply
    // ring (each 128-byte aligned; the strides are the ABI's, which the kernel uses too).
    const lanes = this.hostLanes;
    const inboundAt = up(sizes.controlStride * lanes, ALIGN_HOST);
    const replyAt = inboundAt + sizes.inboundStride * lanes;
    // Then the timers' host block (timer-host.ts), where the class declares timers.
    const timerCount = plan.timers ? plan.grain.timers.length : 0;
    this.timerHostAt = replyAt + up(sizes.replies, ALIGN_HOST);
    // Then the residency host block and load-request ring (residency.ts), where the kernel has residency.
    this.residencyHostAt = up(this.timerHostAt + (timerCount ? TIMER_HOST_BYTES : 0), ALIGN_HOST);
    this.host = backend.hostMemory.take(ctx, this.residencyHostAt + (residency ? residencyHostBytes().bytes : 0));
    // Device memory, one allocation (see device-memory.ts for why not stream-ordered):
    // queues | states | directory | globals + counters | routes | worker scratch.
    let off = 0;
    const take = (n: number) => {
      const at = off;
      off = up(off + n, ALIGN_DEVICE);
      return at;
    };
    // The pool's nodes: what overflowBytes holds after its header, if that is more than the lists' stubs.
    const nodeBytes = overflowLayout({ partitions: this.partitions, slotSize: o.slotSize, nodes: 0 });
    const poolBytes = backend.overflowBytes(ctx);
    const fit = Math.floor((poolBytes - nodeBytes.nodesAt) / nodeBytes.nodeBytes);
    this.overflowNodes = fit > this.partitions ? Math.min(fit, 0xffffffff - 1) : 0;
    const pool = overflowLayout({ partitions: this.partitions, slotSize: o.slotSize, nodes: Math.max(this.overflowNodes, 1) });
    this.at = { queues: take(sizes.queues), states: take(sizes.states), directory: take(sizes.directory), globals: take(sizes.globals), routes: take(sizes.routesPerGrain * plan.grains.length), scratch: take(sizes.scratch), overflow: take(pool.bytes), timers: take(timerLayout({ partitions: this.partitions, maxActors: o.maxActors, timers: timerCount }).bytes), residency: take(residency ? residencyLayout(this.residencyTarget()).bytes : 0) };
    this.routesAt = this.at.routes;
    this.stream = ctx.createStream();
    try {
      this.device = backend.deviceMemory.take(ctx, off);
    } catch (e) {
      ctx.destroyStream(this.stream);
      backend.giveHost(ctx, this.host);
      throw e;
    }
    this.queues = { devPtr: this.device.devPtr + BigInt(this.at.queues) };
    this.routeTable = new Uint8Array(sizes.routesPerGrain * plan.grains.length);

    const buf = this.host.buffer;
    const base = this.host.offset;
    // Control blocks start zeroed (host memory may be reused): every lane at epoch 0, nothing observed yet.
    new Uint8Array(buf, base, inboundAt).fill(0);
    // The residency host block starts zeroed too: request 0, nothing posted (the kernel reads it from its first loop).
    if (residency) new Uint8Array(buf, base + this.residencyHostAt, residencyHostBytes().bytes).fill(0);
    for (let l = 0; l < lanes; l++) Ring.format(buf, base + inboundAt + l * sizes.inboundStride, o.ringCapacity, o.slotSize);
    this.reply = Ring.format(buf, base + replyAt, o.replyCapacity, o.slotSize);
    this.control = new Int32Array(buf, base, CONTROL_BLOCK_SIZE >> 2);
    // Lane 0 carries the reply ring and the counters; every lane has its control block and inbound ring.
    this.memory = {
      lanes: Array.from({ length: lanes }, (_, l) => ({
        control: { buffer: buf, offset: base + l * sizes.controlStride },
        inbound: { buffer: buf, offset: base + inboundAt + l * sizes.inboundStride },
        replies: l === 0 ? [{ buffer: buf, offset: base + replyAt }] : [],
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
    if (plan.persistence || backend.options.stateMarks === true) ctx.copyToDeviceAsync(this.device, Uint32Array.of(1), this.stream, this.at.globals + offsetOf(DeviceGlobals, 'metaOn'));
    // Activation hooks run where the CPU backend runs them: in a class with persistence (DeviceGlobals.hooksOn).
    if (plan.persistence || backend.options.activationHooks === true) ctx.copyToDeviceAsync(this.device, Uint32Array.of(1), this.stream, this.at.globals + offsetOf(DeviceGlobals, 'hooksOn'));
    if (residency) {
      // The residency area's addresses (ResidencyGlobals line 2), and the area's address in DeviceGlobals.
      const area = this.device.devPtr + BigInt(this.at.residency);
      ctx.copyToDeviceAsync(this.device, residencyGlobalsImage(this.residencyTarget(), this.host.devPtr + BigInt(this.residencyHostAt), area), this.stream, this.at.residency);
      ctx.copyToDeviceAsync(this.device, Uint32Array.of(Number(area & 0xffffffffn), Number(area >> 32n), plan.persistence?.load ? 1 : 0), this.stream, this.at.globals + offsetOf(DeviceGlobals, 'residencyLo'));
    }
    ctx.synchronize(this.stream);
  }

  private residencyTarget(): { grain: string; stateSize: number; maxActors: number; partitions: number } {
    return { grain: this.plan.grain.name, stateSize: this.abi.stateSize, maxActors: this.plan.options.maxActors, partitions: this.partitions };
  }

  /** The residency access, made on first use (its stream and staging mirror). */
  private residencyAccess(): KernelResidency {
    const grain = this.plan.grain.name;
    if (this.fault || this.freed || this.backend.poisonedBy) {
      throw new GpuStateError(grain, 'GPU_STATE_UNAVAILABLE', this.freed ? 'the kernel was disposed' : 'the kernel faulted', { cause: this.fault ?? this.backend.poisonedBy });
    }
    if (!this.residency) {
      const stateHost = this.plan.persistence!.host;
      const pools = { device: this.backend.deviceMemory, host: this.backend.stagingHost, running: () => this.backend.anyRunning() };
      const place = { device: this.device, areaAt: this.at.residency, buffer: this.host.buffer, offset: this.host.offset + this.residencyHostAt };
      // A request waits for every worker's walk of the directory (a deactivation of a million actors, hooks
      // included): bounded by a minute (times RINGGRAIN_TIMEOUT_SCALE via stopTimeoutMs's scale), or the stop timeout if longer.
      const timeoutMs = Math.max(this.backend.options.stopTimeoutMs, scaledDefault(60_000));
      this.residency = new KernelResidency(this.ctx, pools, this.residencyTarget(), place, stateHost, () => this.health().fault ?? (this.freed ? new Error('the kernel was disposed') : undefined), timeoutMs);
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
      sendBudget: this.backend.options.sendBudget,
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
      if (v === undefined) throw new Error(`cuda-backend: no value for kernel parameter ${p.name} (codegen ABI changed?)`);
      return p.kind === 'ptr' ? arg.ptr(BigInt(v)) : p.kind === 'u64' ? arg.u64(v) : arg.u32(Number(v));
    });
    this.ctx.launch(this.fn, { grid: this.launchCfg.blocks, block: this.launchCfg.threadsPerBlock, sharedMemBytes: this.launchCfg.sharedBytes, stream: this.stream }, args);
    this.started = true;
    // Keys the workers post for loading go to the plan's load within a millisecond (health() polls too).
    if (this.writeStates && this.plan.persistence?.load) {
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
    const poison = this.backend.poisonedBy;
    if (poison) {
      this.fault = poison instanceof GpuFaultError ? poison : new GpuFaultError(this.plan.grain.name, 'GPU_CONTEXT_POISONED', `the CUDA context is poisoned: ${poison.message.split('\n')[0]}`, { cause: poison });
      return;
    }
    try {
      if (this.ctx.streamQuery(this.stream) === 'complete') {
        this.exited = true;
        if (!this.stopRequested() || Atomics.load(this.control, CONTROL.observed) !== KernelState.STOPPED) {
          this.fault = new GpuFaultError(this.plan.grain.name, 'GPU_KERNEL_EXITED', 'the persistent kernel exited without being asked to stop');
        }
      }
    } catch (e) {
      const result = e instanceof CudaError ? e.result : undefined;
      this.fault = new GpuFaultError(this.plan.grain.name, 'GPU_FAULT', `the GPU reported ${e instanceof CudaError ? `${e.code} (${e.result})` : String(e)}`, {
        cause: e,
        ...(result === undefined ? {} : { cudaResult: result }),
      });
      this.backend.poisoned(this.fault);
    }
  }

  /** Keys posted on the load-request ring, to the plan's load (residency.ts). */
  private pollLoads(): void {
    if (this.fault || this.freed || this.exited) return;
    try {
      this.residencyAccess().host.pollLoads();
    } catch (e) {
      this.plan.logger.warn({ err: e, grain: this.plan.grain.name }, `${this.plan.grain.name}: reading the load-request ring failed: ${(e as Error).message}`);
    }
  }

  health(): KernelHealth {
    if (this.loadPoll) this.pollLoads();
    if (!this.fault) {
      const now = performance.now();
      if (now - this.lastQuery >= this.backend.options.healthIntervalMs) {
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
    if (this.overflowNodes === 0 || this.freed || this.backend.poisonedBy) return undefined;
    const bytes = this.backend.readDevice(this.device, this.at.overflow, layoutOf(this.abi.schemas.OverflowHeader).size);
    const v = viewAt(this.abi.schemas.OverflowHeader, bytes.buffer, bytes.byteOffset) as Record<string, number>;
    return { capacity: this.overflowNodes - this.partitions, inUse: v['inUse']!, highWater: v['highWater']!, overflowed: v['overflowed']!, exhausted: v['exhausted']! };
  }

  async inspect(key: number | string): Promise<unknown> {
    if (typeof key !== 'number' || this.fault || this.freed || this.backend.poisonedBy) return undefined;
    const dirSchema = this.abi.schemas.DirEntry;
    const entry = layoutOf(dirSchema).size;
    const dir = this.backend.readDevice(this.device, this.at.directory, entry * this.dirCapacity);
    const lo = Number(BigInt.asUintN(32, BigInt(key)));
    const hi = Number(BigInt.asUintN(32, BigInt(key) >> 32n));
    for (let i = 0; i < this.dirCapacity; i++) {
      const e = snapshot(dirSchema, dir.buffer, i * entry) as { keyLo: number; keyHi: number; slot: number; state: number };
      if (!isReadyDirState(e.state) || e.keyLo !== lo || e.keyHi !== hi) continue;
      const size = this.abi.stateSize;
      const bytes = this.backend.readDevice(this.device, this.at.states + e.slot * size, size);
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
    if (this.fault || this.freed || this.backend.poisonedBy) {
      throw new GpuStateError(grain, 'GPU_STATE_UNAVAILABLE', this.freed ? 'the kernel was disposed' : 'the kernel faulted', { cause: this.fault ?? this.backend.poisonedBy });
    }
    if (!this.stateAccess) {
      const fn = this.backend.gatherFunction(this.plan.grain);
      if (!fn) throw new GpuStateError(grain, 'GPU_STATE_UNAVAILABLE', 'its module has no dirty gather kernel loaded');
      const d = this.device.devPtr;
      const pools = { device: this.backend.deviceMemory, host: this.backend.stagingHost, running: () => this.backend.anyRunning() };
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
    if (this.deactivateIdle && this.started && !this.exited) residencyExit(this.host.buffer, this.host.offset + this.residencyHostAt);
    this.routesOut();
    if (this.started && !this.exited && !this.fault && !this.backend.poisonedBy) {
      if (!this.stopRequested()) {
        // Core timed out before asking, or the launch handshake failed: ask now.
        Atomics.store(this.control, CONTROL.requested, KernelState.STOP);
        Atomics.store(this.control, CONTROL.requestEpoch, (Atomics.load(this.control, CONTROL.requestEpoch) + 1) | 0);
      }
      const consumer = new RingConsumer(this.reply);
      const deadline = performance.now() + this.backend.options.stopTimeoutMs;
      for (;;) {
        this.drainReplies(consumer);
        let done: boolean;
        try {
          done = this.ctx.streamQuery(this.stream) === 'complete';
        } catch (e) {
          this.backend.poisoned(e as Error);
          break;
        }
        if (done) {
          this.exited = true;
          break;
        }
        if (performance.now() > deadline) {
          const err = new KernelStuckError(this.plan.grain.name, this.backend.options.stopTimeoutMs);
          this.plan.logger.error({ err }, err.message);
          this.backend.poisoned(err);
          this.fault = err;
          // Leave the memory: freeing it under a running kernel blocks until the kernel ends.
          this.freed = true;
          this.backend.detach(this);
          return;
        }
        await new Promise<void>((r) => setTimeout(r, 1));
      }
    }
    this.freeAll();
    this.backend.detach(this);
  }

  /** Clear this kernel's route everywhere before its queues go away. */
  private routesOut(): void {
    this.freed = true;
    try {
      this.backend.updateRoutes();
    } catch (e) {
      this.backend.poisoned(e as Error);
    }
  }

  freeAll(): void {
    this.freed = true;
    if (this.ctx.disposed) return;
    const attempt = (f: () => void) => {
      try {
        f();
      } catch (e) {
        if (!this.backend.poisonedBy) throw e;
      }
    };
    // The kernel has exited (or never started): its stream is idle, so this free and sync are finite.
    if (this.stateAccess) attempt(() => this.stateAccess!.dispose());
    if (this.residency) attempt(() => this.residency!.dispose());
    attempt(() => this.backend.giveDevice(this.ctx, this.device));
    attempt(() => this.ctx.destroyStream(this.stream));
    attempt(() => this.backend.giveHost(this.ctx, this.host));
  }
}
