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
import type { Backend, KernelPlan, ProbeResult } from '@ringgrain/core/backend';
import { DeviceSlot } from './device-slot.ts';
import { LaneGroupError } from './errors.ts';
import { LaneGroupKernel } from './lane-groups.ts';
import { runningOn } from './device-registry.ts';
import { PinnedHostMemory, type HostMemorySource } from './host-memory.ts';
import { INTERNALS } from './internals.ts';
import { CudaKernel, type KernelOwner } from './kernel.ts';
import { fitLaunch } from './launch-fit.ts';
import { ModuleCache } from './module-cache.ts';
import { MAX_LANE_GROUPS, resolveOptions, type CudaBackendOptions, type ResolvedCudaOptions } from './options.ts';
import { fillRouteTable, routeTargets } from './routes.ts';
import { scaledPartitions, scaledQueueCapacity } from './sizing.ts';
import { probeCuda, type CudaContext, type CudaModule, type CudaStream } from './driver/index.ts';

export type { CudaBackendOptions } from './options.ts';
export { CudaKernel } from './kernel.ts';
export { LaneGroupKernel } from './lane-groups.ts';

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
  /** With several lane groups (`devices`): the group this kernel is, and its GPU. */
  readonly group?: number;
  readonly device?: number;
}

export class CudaBackend implements Backend, KernelOwner {
  readonly name = 'cuda';
  /** placement 'auto' tries a GPU before backends of rank 0 (the CPU). */
  readonly autoRank = 10;
  readonly options: ResolvedCudaOptions;
  /** What the user set (undefined: the scaled defaults of partitionsFor / queueCapacityFor). */
  private readonly fixedPartitions: number | undefined;
  private readonly fixedQueueCapacity: number | undefined;
  /** Host-shared ring memory given in the options (a shared mapping), else each device pins its own. */
  private readonly sharedHostMemory: HostMemorySource | undefined;
  /** The GPUs this backend runs on, by ordinal: context, pools, modules and live kernels of each. */
  private readonly slots = new Map<number, DeviceSlot>();
  /** Lane group g's device ordinal (resolved at the first launch for devices: 'all'). */
  private groupDevices: readonly number[] | undefined;
  private readonly cache: ModuleCache;
  /** Every live kernel of this backend, on every device (route tables span them all). */
  private readonly live = new Set<CudaKernel>();
  /** Launch facts of every kernel created (tests and benchmarks read these). */
  readonly launches: LaunchInfo[] = [];

  constructor(opts: CudaBackendOptions = {}) {
    this.options = resolveOptions(opts);
    this.fixedPartitions = opts.partitions;
    this.fixedQueueCapacity = opts.queueCapacity;
    this.sharedHostMemory = opts.hostMemory;
    this.cache = new ModuleCache(this.options.cacheDir, this.options.compileThreads);
    if (this.options.devices !== 'all') this.groupDevices = this.options.devices;
  }

  /** The device slot of an ordinal (made on first use). */
  private slot(ordinal: number): DeviceSlot {
    let s = this.slots.get(ordinal);
    if (!s) this.slots.set(ordinal, (s = new DeviceSlot(ordinal, this.sharedHostMemory ?? new PinnedHostMemory())));
    return s;
  }

  /** The first device's slot (the one-GPU accessors below). */
  private get main(): DeviceSlot {
    return this.slot(this.groupDevices?.[0] ?? this.options.device);
  }

  /** Lane group g's device ordinal; 'all' is resolved here from the driver's device count. */
  private devicesOfGroups(): readonly number[] {
    if (!this.groupDevices) {
      const p = probeCuda({ requireNvrtc: false });
      const n = p.ok ? p.deviceCount : 1;
      this.groupDevices = Array.from({ length: Math.min(n, MAX_LANE_GROUPS) }, (_, i) => i);
    }
    return this.groupDevices;
  }

  /** Host-shared ring memory of the first device (pinned buffers, or the shared mapping given). */
  get hostMemory(): HostMemorySource {
    return this.main.hostMemory;
  }

  /** Contexts created so far (1 + recoveries), over every device. */
  get contextsCreated(): number {
    let n = 0;
    for (const s of this.slots.values()) n += s.contextsCreated;
    return n;
  }

  /** Partitions of a kernel with this many actors: the `partitions` option, else the scaled default. */
  partitionsFor(maxActors: number): number {
    return this.fixedPartitions ?? scaledPartitions(maxActors);
  }

  /**
   * Slots per partition queue of a kernel with this many actors: the `queueCapacity` option, else the scaled default.
   */
  queueCapacityFor(maxActors: number, partitions: number, slotSize: number): number {
    return this.fixedQueueCapacity ?? scaledQueueCapacity(maxActors, partitions, slotSize);
  }

  async probe(): Promise<ProbeResult> {
    const p = probeCuda({ device: this.options.device });
    if (!p.ok) return { ok: false, reason: p.reason };
    const devices = this.options.devices;
    if (devices !== 'all') {
      const missing = devices.filter((d) => d >= p.deviceCount);
      if (missing.length)
        return {
          ok: false,
          reason: `CUDA device ${missing.join(', ')} does not exist (this machine has ${p.deviceCount})`,
        };
    }
    const groups =
      devices === 'all'
        ? `, ${p.deviceCount} GPUs`
        : devices.length > 1
          ? `, lane groups on GPUs ${devices.join(', ')}`
          : '';
    return {
      ok: true,
      device:
        `${p.device.name} (${p.device.arch}, driver ${p.driverVersionString}, NVRTC ` +
        `${p.nvrtc?.version ?? '?'})${groups}`,
    };
  }

  /** The first device's live context (created on first use, and again after a poisoned one was released). */
  context(): CudaContext {
    return this.main.context();
  }

  /** Residency bookkeeping: blocks of live kernels on the first device. */
  residentBlocks(): number {
    return this.main.residentBlocks();
  }

  /**
   * One ring kernel per lane group (one group: the kernel itself; several: LaneGroupKernel over them). Every
   * device's contexts, modules and peer mappings come first, while nothing of this class runs; then each
   * group is sized against what is resident on its GPU (groups on one GPU count each other) and allocated.
   */
  async createKernel(plan: KernelPlan): Promise<CudaKernel | LaneGroupKernel> {
    const t0 = performance.now();
    const grain = plan.grain.name;
    const all = this.devicesOfGroups();
    // A string key's lane hashes its text, which a K2K sender on the GPU does not have (it holds the interned
    // id): a string-keyed class runs as one lane group, on the first listed GPU.
    const devices = plan.grain.keyKind === 'string' ? all.slice(0, 1) : all;
    if (devices.length < all.length) {
      plan.logger.warn(
        { grain, devices: all },
        `cuda: ${grain} has string keys: it runs as one lane group on GPU ${devices[0]} of the ${all.length} ` +
          `listed (a GPU-side K2K sender cannot hash a string key's text)`,
      );
    }
    const ctxs = new Map<number, CudaContext>();
    for (const d of new Set(all)) ctxs.set(d, this.slot(d).context());
    const ordinals = [...new Set(devices)];
    // Any class of a backend on several GPUs may send to a key on another one: peers mapped, units built for it.
    const peer = ctxs.size > 1;
    if (peer) this.enablePeers(grain, ctxs);
    const loaded = new Map<number, ReturnType<ModuleCache['load']>>();
    for (const d of ordinals) {
      const slot = this.slot(d);
      const ctx = ctxs.get(d)!;
      // Every grain placed here is compiled at once, and loaded now, while nothing runs: later launches must not load.
      const idle = runningOn(d).size === 0;
      await this.cache.compileAll(slot, ctx, idle ? plan.grains : [plan.grain], plan.grains, peer);
      loaded.set(d, this.cache.load(slot, ctx, plan.grain, plan.grains, peer));
      if (idle)
        for (const def of plan.grains)
          if (def && def !== plan.grain) this.cache.load(slot, ctx, def, plan.grains, peer);
      slot.gathers.set(plan.grain, loaded.get(d)!.gather);
    }
    const made: CudaKernel[] = [];
    try {
      for (let g = 0; g < devices.length; g++) {
        const d = devices[g]!;
        const slot = this.slot(d);
        const ctx = ctxs.get(d)!;
        const own = loaded.get(d)!;
        const { gen, fn } = own;
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
        const kernel = new CudaKernel(
          this,
          slot,
          ctx,
          plan,
          gen.abi,
          fn,
          launch,
          fit.partitions,
          g,
          devices.length,
          all.length,
        );
        made.push(kernel);
        this.live.add(kernel);
        slot.attach(kernel);
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
          ...(devices.length > 1 ? { group: g, device: d } : {}),
        };
        this.launches.push(info);
        const where = devices.length > 1 ? ` (lane group ${g} on GPU ${d})` : '';
        plan.logger.info(
          {
            grain,
            cached: own.cached,
            compileMs: Math.round(own.compileMs),
            loadMs: +own.loadMs.toFixed(2),
            createMs: +info.createMs.toFixed(1),
            blocks: launch.blocks,
            perSM: fit.perSM,
            resident: fit.resident,
            capacity: fit.capacity,
            ...(where ? { group: g, device: d } : {}),
          },
          `cuda: ${grain} kernel${where} ` +
            `${own.cached ? 'from the compile cache' : `compiled in ${Math.round(own.compileMs)} ms`}, ` +
            `${launch.blocks} blocks (${fit.resident} resident of ${fit.capacity})`,
        );
      }
      this.updateRoutes();
    } catch (e) {
      for (const k of made) {
        this.live.delete(k);
        k.slot.detach(k);
        k.freeAll();
      }
      throw e;
    }
    return made.length === 1 ? made[0]! : new LaneGroupKernel(grain, made, this.options.hostLanes);
  }

  /** Every listed GPU maps every other's memory (K2K between lane groups), or the class is refused typed. */
  private enablePeers(grain: string, ctxs: ReadonlyMap<number, CudaContext>): void {
    for (const [a, ca] of ctxs) {
      for (const [b, cb] of ctxs) {
        if (a === b) continue;
        if (!ca.canAccessPeer(cb)) {
          throw new LaneGroupError(
            grain,
            'GPU_NO_PEER_ACCESS',
            `GPU ${a} cannot access GPU ${b}'s memory (cuDeviceCanAccessPeer: 0), so K2K sends between their ` +
              `lane groups would have to cross the host`,
            [a, b],
          );
        }
        ca.enablePeerAccess(cb);
      }
    }
  }

  /** Rewrites every live kernel's routing table on its device's setup stream (a kernel came or goes). */
  updateRoutes(): void {
    const touched = new Set<DeviceSlot>();
    for (const k of this.live) {
      const slot = k.slot;
      const ctx = slot.current;
      if (!ctx || slot.poisonedBy || !slot.setup) continue;
      fillRouteTable(
        k.routeTable,
        k.abi.schemas.RouteEntry,
        k.routeStride,
        k.plan.grains.length,
        routeTargets(k, this.live),
      );
      ctx.copyToDeviceAsync(k.device, k.routeTable, slot.setup, k.routesAt);
      touched.add(slot);
    }
    for (const slot of touched) slot.current!.synchronize(slot.setup!);
  }

  /** The first poison of any device this backend uses. */
  get poisonedBy(): Error | undefined {
    for (const s of this.slots.values()) if (s.poisonedBy) return s.poisonedBy;
    return undefined;
  }

  detach(k: CudaKernel): void {
    this.live.delete(k);
    k.slot.detach(k);
  }

  /** Whether any ring kernel runs on this backend's first device (frees would wait for it). */
  anyRunning(): boolean {
    return this.main.anyRunning();
  }

  /** The first device's allocation statistics and memory (leak tests). */
  memoryReport(): ReturnType<DeviceSlot['memoryReport']> {
    return this.main.memoryReport();
  }

  /** Per device this backend has a context on: its allocation statistics and memory. */
  memoryByDevice(): Array<{ device: number } & NonNullable<ReturnType<DeviceSlot['memoryReport']>>> {
    const out: Array<{ device: number } & NonNullable<ReturnType<DeviceSlot['memoryReport']>>> = [];
    for (const [device, s] of this.slots) {
      const r = s.memoryReport();
      if (r) out.push({ device, ...r });
    }
    return out;
  }

  async dispose(): Promise<void> {
    for (const k of [...this.live]) await k.dispose();
    for (const s of this.slots.values()) if (s.current) s.releaseContext();
  }

  /** The package's own tools (fault injection) reach the first device's context and every live kernel through this. */
  [INTERNALS](): {
    ctx: CudaContext | undefined;
    setup: CudaStream | undefined;
    live: ReadonlySet<CudaKernel>;
    modules: ReadonlyMap<string, { mod: CudaModule }>;
  } {
    const main = this.main;
    return { ctx: main.current, setup: main.setup, live: this.live, modules: main.modules };
  }
}
