/**
 * Generated units, their compiled images and the modules loaded from them. Generation is per class and
 * grain list; compiles run side by side (NVRTC on worker threads) and are shared by every device of the
 * same architecture; a module is loaded per device (DeviceSlot.modules) before the first ring kernel there
 * starts, since loading waits for running kernels.
 */
import { performance } from 'node:perf_hooks';
import type { GrainDef } from '@ringgrain/core/backend';
import { generateKernel, type Abi } from '@ringgrain/codegen';
import { ModuleLoadWhileRunningError } from './errors.ts';
import { runningOn } from './device-registry.ts';
import type { DeviceSlot, LoadedModule } from './device-slot.ts';
import { unitCompileOptions } from './nvrtc-unit.ts';
import { compileCached, compileCachedAsync, type CompileCachedResult, type CudaContext } from './driver/index.ts';

export interface Generated {
  readonly source: string;
  readonly abi: Abi;
  readonly generateMs: number;
}

/** A loaded module's key on its device: the generated source, and whether it was built for peer access (RG_PEER). */
const moduleKey = (source: string, peer: boolean): string => (peer ? `RG_PEER\u0000${source}` : source);

export class ModuleCache {
  private readonly generated = new Map<GrainDef, { key: string; gen: Generated }>();
  /**
   * Images compiled (or read from the disk cache) ahead of their load, by architecture and generated source:
   * compileAll.
   */
  private readonly compiling = new Map<string, Promise<CompileCachedResult>>();
  /** Images compileAll finished, by architecture and generated source (taken by load). */
  private readonly compiled = new Map<string, CompileCachedResult>();

  /** compileThreads: the NVRTC pool's threads (undefined: its default; 0: no pool), nvrtc-pool.ts. */
  constructor(
    private readonly cacheDir: string | undefined,
    private readonly compileThreads?: number,
  ) {}

  generate(def: GrainDef, grains: ReadonlyArray<GrainDef | undefined>): Generated {
    const key = grains.map((g) => g?.name ?? '').join('\u0000');
    const hit = this.generated.get(def);
    if (hit && hit.key === key) return hit.gen;
    const t0 = performance.now();
    const g = generateKernel(def, { grains });
    const gen = { source: g.source, abi: g.abi, generateMs: performance.now() - t0 };
    this.generated.set(def, { key, gen });
    return gen;
  }

  /**
   * Compiles every grain class in `which` whose module is not loaded on `slot` yet (`peer`: built with RG_PEER for lane
   * groups on several GPUs, runtime/ring.cuh), all at once: NVRTC runs on the NVRTC pool's worker
   * threads, one per core (compileCachedAsync; a unit already in memory or in the disk cache never reaches them), so
   * a system's first launch waits for its slowest class, not for the sum
   * of them (SIR's two classes were compiled one after the other: 17.5 s on the H100 host, where one took 6.3 s).
   * `which` says what to compile; every unit is generated against the system's whole grain list (`grains`,
   * the slot-header ids), or a class's K2K sends to another class would not translate.
   */
  async compileAll(
    slot: DeviceSlot,
    ctx: CudaContext,
    which: ReadonlyArray<GrainDef | undefined>,
    grains: ReadonlyArray<GrainDef | undefined>,
    peer = false,
  ): Promise<void> {
    const jobs: Promise<unknown>[] = [];
    const arch = ctx.device.arch;
    for (const def of which) {
      if (!def) continue;
      const gen = this.generate(def, grains);
      const key = `${arch}\u0000${moduleKey(gen.source, peer)}`;
      if (slot.modules.has(moduleKey(gen.source, peer)) || this.compiled.has(key)) continue;
      let job = this.compiling.get(key);
      if (!job) {
        const threads = this.compileThreads === undefined ? {} : { threads: this.compileThreads };
        job = compileCachedAsync(gen.source, { ...unitCompileOptions(def, arch, this.cacheDir, peer), ...threads });
        this.compiling.set(key, job);
        job.then(
          (r) => this.compiled.set(key, r),
          () => this.compiling.delete(key),
        );
      }
      jobs.push(job);
    }
    await Promise.all(jobs);
  }

  /** Generates, compiles (or takes from the disk cache) and loads one grain's module on `slot`. */
  load(
    slot: DeviceSlot,
    ctx: CudaContext,
    def: GrainDef,
    grains: ReadonlyArray<GrainDef | undefined>,
    peer = false,
  ): LoadedModule & { gen: Generated } {
    const gen = this.generate(def, grains);
    const mk = moduleKey(gen.source, peer);
    const hit = slot.modules.get(mk);
    if (hit) return { gen, ...hit, cached: true, compileMs: 0, loadMs: 0 };
    const running = runningOn(slot.ordinal);
    if (running.size > 0)
      throw new ModuleLoadWhileRunningError(
        def.name,
        [...running].map((k) => k.plan.grain.name),
      );
    const key = `${ctx.device.arch}\u0000${mk}`;
    const compiled =
      this.compiled.get(key) ??
      compileCached(gen.source, unitCompileOptions(def, ctx.device.arch, this.cacheDir, peer));
    // Another device of this architecture (or a relaunch in a new context) reads it from the disk cache.
    this.compiled.delete(key);
    this.compiling.delete(key);
    const l0 = performance.now();
    const mod = ctx.loadModule(compiled.cubin);
    let fn;
    let gather;
    try {
      fn = ctx.getFunction(mod, gen.abi.entry);
      gather = ctx.getFunction(mod, gen.abi.gatherEntry);
    } catch (e) {
      ctx.unloadModule(mod);
      throw e;
    }
    const entry: LoadedModule = {
      mod,
      fn,
      gather,
      cached: compiled.cached,
      compileMs: compiled.compileMs,
      loadMs: performance.now() - l0,
    };
    slot.modules.set(mk, entry);
    return { gen, ...entry };
  }
}
