/**
 * The CUDA backend: one persistent ring kernel per grain class, all in one CUDA context per device (the
 * device's primary context). Host-shared memory (control block, inbound ring, reply ring) is pinned and
 * mapped; the partition queues, state table, directory, counters and routing table live in device memory.
 * Nothing on the per-message path calls the driver: the host writes rings and reads the control block.
 *
 * This class is the facade: options (options.ts), the device's context and pools (device-slot.ts), units
 * and modules (module-cache.ts), launch sizing (launch-fit.ts), layout (kernel-layout.ts), routes
 * (routes.ts) and the kernel's lifecycle (kernel.ts) each live in their own file.
 */
import { performance } from 'node:perf_hooks';
import type { Backend, KernelPlan, ProbeResult } from '@ringgrain/core';
import { DeviceSlot } from './device-slot.ts';
import { runningOn } from './device-registry.ts';
import { PinnedHostMemory, type HostMemorySource } from './host-memory.ts';
import { INTERNALS } from './internals.ts';
import { CudaKernel, type KernelOwner } from './kernel.ts';
import { fitLaunch } from './launch-fit.ts';
import { ModuleCache } from './module-cache.ts';
import { resolveOptions, type CudaBackendOptions, type ResolvedCudaOptions } from './options.ts';
import { fillRouteTable, routeTargets } from './routes.ts';
import { scaledPartitions, scaledQueueCapacity } from './sizing.ts';
import { probeCuda, type CudaContext, type CudaModule, type CudaStream } from './driver/index.ts';

export type { CudaBackendOptions } from './options.ts';
export { CudaKernel } from './kernel.ts';

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

export class CudaBackend implements Backend, KernelOwner {
  readonly name = 'cuda';
  /** placement 'auto' tries a GPU before backends of rank 0 (the CPU). */
  readonly autoRank = 10;
  readonly options: ResolvedCudaOptions;
  /** What the user set (undefined: the scaled defaults of partitionsFor / queueCapacityFor). */
  private readonly fixedPartitions: number | undefined;
  private readonly fixedQueueCapacity: number | undefined;
  /** Host-shared ring memory: pinned buffers (pooled while kernels run), or a shared mapping. */
  readonly hostMemory: HostMemorySource;
  /** The device this backend runs on: its context, pools, modules and live kernels. */
  private readonly slot: DeviceSlot;
  private readonly cache: ModuleCache;
  /** Launch facts of every kernel created (tests and benchmarks read these). */
  readonly launches: LaunchInfo[] = [];

  constructor(opts: CudaBackendOptions = {}) {
    this.options = resolveOptions(opts);
    this.fixedPartitions = opts.partitions;
    this.fixedQueueCapacity = opts.queueCapacity;
    this.hostMemory = opts.hostMemory ?? new PinnedHostMemory();
    this.slot = new DeviceSlot(this.options.device, this.hostMemory);
    this.cache = new ModuleCache(this.options.cacheDir);
  }

  /** Contexts created so far (1 + recoveries). */
  get contextsCreated(): number {
    return this.slot.contextsCreated;
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
    return this.slot.context();
  }

  /** Residency bookkeeping: blocks of live kernels. */
  residentBlocks(): number {
    return this.slot.residentBlocks();
  }

  async createKernel(plan: KernelPlan): Promise<CudaKernel> {
    const t0 = performance.now();
    const slot = this.slot;
    const ctx = slot.context();
    const grain = plan.grain.name;
    // Every grain placed here is compiled at once, and loaded now, while nothing runs: later launches must not load.
    const idle = runningOn(slot.ordinal).size === 0;
    await this.cache.compileAll(slot, ctx, idle ? plan.grains : [plan.grain], plan.grains);
    const own = this.cache.load(slot, ctx, plan.grain, plan.grains);
    if (idle) for (const def of plan.grains) if (def && def !== plan.grain) this.cache.load(slot, ctx, def, plan.grains);
    const { gen, fn } = own;
    slot.gathers.set(plan.grain, own.gather);
    const fit = fitLaunch(ctx, {
      grain,
      abi: gen.abi,
      fn,
      partitions: this.partitionsFor(plan.options.maxActors),
      fixed: this.fixedPartitions !== undefined,
      lanes: this.options.hostLanes,
      reserveSMs: this.options.reserveSMs,
      resident: slot.residentBlocks(),
    });
    const { launch } = fit;
    const kernel = new CudaKernel(this, slot, ctx, plan, gen.abi, fn, launch, fit.partitions);
    const info: LaunchInfo = {
      grain,
      cached: own.cached,
      compileMs: own.compileMs,
      generateMs: gen.generateMs,
      loadMs: own.loadMs,
      createMs: performance.now() - t0,
      blocks: launch.blocks,
      threadsPerBlock: launch.threadsPerBlock,
      blocksPerSM: fit.perSM,
      stackBytesPerThread: fit.stackBytesPerThread,
      registersPerThread: fit.registersPerThread,
      partitions: fit.partitions,
    };
    this.launches.push(info);
    plan.logger.info(
      { grain, cached: own.cached, compileMs: Math.round(own.compileMs), loadMs: +own.loadMs.toFixed(2), createMs: +info.createMs.toFixed(1), blocks: launch.blocks, perSM: fit.perSM, resident: fit.resident, capacity: fit.capacity },
      `cuda: ${grain} kernel ${own.cached ? 'from the compile cache' : `compiled in ${Math.round(own.compileMs)} ms`}, ${launch.blocks} blocks (${fit.resident} resident of ${fit.capacity})`,
    );
    slot.attach(kernel);
    try {
      this.updateRoutes();
    } catch (e) {
      slot.detach(kernel);
      kernel.freeAll();
      throw e;
    }
    return kernel;
  }

  /** Rewrites every live kernel's routing table on its device's setup stream (a kernel came or goes). */
  updateRoutes(): void {
    const slot = this.slot;
    const ctx = slot.current;
    if (!ctx || slot.poisonedBy || !slot.setup) return;
    for (const k of slot.live) {
      fillRouteTable(k.routeTable, k.abi.schemas.RouteEntry, k.routeStride, routeTargets(k, slot.live));
      ctx.copyToDeviceAsync(k.device, k.routeTable, slot.setup, k.routesAt);
    }
    ctx.synchronize(slot.setup);
  }

  get poisonedBy(): Error | undefined {
    return this.slot.poisonedBy;
  }

  detach(k: CudaKernel): void {
    k.slot.detach(k);
  }

  /** Whether any ring kernel runs on this backend's device (frees would wait for it). */
  anyRunning(): boolean {
    return this.slot.anyRunning();
  }

  /** The context's allocation statistics and device memory (leak tests). */
  memoryReport(): ReturnType<DeviceSlot['memoryReport']> {
    return this.slot.memoryReport();
  }

  async dispose(): Promise<void> {
    for (const k of [...this.slot.live]) await k.dispose();
    if (this.slot.current) this.slot.releaseContext();
  }

  /** The package's own tools (fault injection) reach the context and the live kernels through this. */
  [INTERNALS](): { ctx: CudaContext | undefined; setup: CudaStream | undefined; live: ReadonlySet<CudaKernel>; modules: ReadonlyMap<string, { mod: CudaModule }> } {
    return { ctx: this.slot.current, setup: this.slot.setup, live: this.slot.live, modules: this.slot.modules };
  }
}
