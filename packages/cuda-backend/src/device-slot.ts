/**
 * One GPU of a CUDA backend: its context (the device's primary context), the setup stream, the memory
 * pools, the loaded modules and the kernels running there, and what a fault or a stuck kernel leaves
 * (the poison). A backend has one per device ordinal it uses; lane groups on the same ordinal share it.
 */
import type { GrainDef } from '@ringgrain/core/backend';
import type { CudaKernel } from './kernel.ts';
import { DeviceMemoryPool } from './device-memory.ts';
import { deferredByDevice, runningOn, stickyByDevice } from './device-registry.ts';
import { GpuFaultError } from './errors.ts';
import { PinnedHostMemory, type HostMemorySource, type HostRegion } from './host-memory.ts';
import {
  CudaContext,
  CudaError,
  type CudaFunction,
  type CudaModule,
  type CudaStream,
  type DeviceBuffer,
} from './driver/index.ts';

export interface LoadedModule {
  readonly mod: CudaModule;
  readonly fn: CudaFunction;
  readonly gather: CudaFunction;
  readonly cached: boolean;
  readonly compileMs: number;
  readonly loadMs: number;
}

export class DeviceSlot {
  private ctx: CudaContext | undefined;
  /** Non-blocking stream for setup copies (routes, inspect) while kernels run. */
  private setupStream: CudaStream | undefined;
  /** Why the current context may not be used again (sticky fault, stuck kernel). */
  private poison: Error | undefined;
  /** This backend's kernels on this device. */
  readonly live = new Set<CudaKernel>();
  /**
   * Loaded modules by generated source. Loading and unloading a module wait for every running kernel
   * (measured: test/gpu/blocking-probe.cu), so modules are loaded before the first ring kernel starts
   * and kept until the context goes (a relaunch reuses them).
   */
  readonly modules = new Map<string, LoadedModule>();
  /** Each placed grain's dirty gather kernel (write-behind), from its loaded module. */
  readonly gathers = new Map<GrainDef, CudaFunction>();
  /** Device buffers of terminated kernels, kept while other kernels run (cuMemFree would wait for them). */
  readonly deviceMemory = new DeviceMemoryPool();
  /**
   * Pinned staging of the kernels' dirty gathers (apart from hostMemory: an isolated backend's shared mapping holds
   * rings only).
   */
  readonly stagingHost = new PinnedHostMemory();
  /** Contexts created so far (1 + recoveries). */
  contextsCreated = 0;
  private overflowDefault: number | undefined;

  constructor(
    readonly ordinal: number,
    /** Host-shared ring memory: pinned buffers (pooled while kernels run), or a shared mapping. */
    readonly hostMemory: HostMemorySource,
  ) {}

  /** The live context (created on first use, and again after a poisoned one was released). */
  context(): CudaContext {
    if (this.poison) {
      if (this.live.size > 0) {
        throw new GpuFaultError(
          '*',
          'GPU_CONTEXT_POISONED',
          `the CUDA context of device ${this.ordinal} is poisoned (${this.poison.message.split('\n')[0]}); ` +
            `terminate every grain on this backend first`,
          { cause: this.poison },
        );
      }
      this.releaseContext();
    }
    const sticky = stickyByDevice.get(this.ordinal);
    if (sticky) {
      throw new GpuFaultError(
        '*',
        'GPU_CONTEXT_POISONED',
        `CUDA device ${this.ordinal} took a sticky fault in this process (${sticky.message.split('\n')[0]}); ` +
          `CUDA keeps that error until the process exits`,
        {
          cause: sticky,
          hint:
            'restart the process to use the GPU again (run GPU grains in a supervised child process to ' +
            'recover without restarting the host application); other backends (cpu) keep working',
        },
      );
    }
    if (!this.ctx) {
      this.ctx = CudaContext.create({ device: this.ordinal });
      this.setupStream = this.ctx.createStream();
      this.contextsCreated++;
    }
    return this.ctx;
  }

  /** The context if one is live (no creation). */
  get current(): CudaContext | undefined {
    return this.ctx;
  }

  get setup(): CudaStream | undefined {
    return this.setupStream;
  }

  /** Residency bookkeeping: blocks of every live kernel on the device (all backends of the process). */
  residentBlocks(): number {
    let n = 0;
    for (const k of runningOn(this.ordinal)) n += k.blocks;
    return n;
  }

  /**
   * Bytes of each kernel's K2K overflow pool: the option, or a default fixed at the first launch (so relaunches reuse
   * pooled buffers).
   */
  overflowBytes(option: number): number {
    if (option >= 0) return option;
    this.overflowDefault ??= Math.min(1 << 30, Math.floor(this.context().memInfo().freeBytes / 16));
    return this.overflowDefault;
  }

  /** Whether any ring kernel runs on this device (frees would wait for it). */
  anyRunning(): boolean {
    return runningOn(this.ordinal).size > 0;
  }

  /** Gives a kernel's device memory back: freed now if no kernel runs, else pooled until none does. */
  giveDevice(ctx: CudaContext, buf: DeviceBuffer): void {
    this.deviceMemory.give(ctx, buf, this.anyRunning());
  }

  /** Gives a kernel's host region back: freed now if no kernel runs, else as the source decides. */
  giveHost(ctx: CudaContext, region: HostRegion): void {
    this.hostMemory.give(ctx, region, this.anyRunning());
  }

  /** A kernel starts running here. */
  attach(k: CudaKernel): void {
    this.live.add(k);
    runningOn(this.ordinal).add(k);
  }

  /** Called by a kernel that saw a sticky fault or could not be stopped. */
  poisoned(error: Error): void {
    this.poison ??= error;
    if (error instanceof GpuFaultError || error instanceof CudaError) {
      if (!stickyByDevice.has(this.ordinal)) stickyByDevice.set(this.ordinal, error);
    }
  }

  get poisonedBy(): Error | undefined {
    return this.poison;
  }

  /** A kernel is gone: free what waited for the device to go quiet. */
  detach(k: CudaKernel): void {
    this.live.delete(k);
    const running = runningOn(this.ordinal);
    running.delete(k);
    if (this.live.size === 0 && this.poison && this.ctx) this.releaseContext();
    else if (this.live.size === 0) this.releaseIdle();
    if (running.size > 0) return;
    // The last kernel on the device ended: what other backends had to leave behind can go now.
    for (const ctx of deferredByDevice.get(this.ordinal)?.splice(0) ?? []) {
      try {
        ctx.dispose();
      } catch (e) {
        if (!stickyByDevice.has(this.ordinal)) throw e;
      }
    }
  }

  /** Setup-stream device → host copy (inspect, overflow figures). */
  readDevice(buf: DeviceBuffer, offset: number, bytes: number): Uint8Array {
    const out = new Uint8Array(bytes);
    this.ctx!.copyFromDeviceAsync(out, buf, this.setupStream!, offset);
    this.ctx!.synchronize(this.setupStream!);
    return out;
  }

  /** Nothing runs: free what could not be freed while kernels ran (pooled pinned memory, pool reservations). */
  private releaseIdle(): void {
    const ctx = this.ctx;
    if (!ctx || ctx.disposed || this.anyRunning()) return;
    this.hostMemory.idle(ctx);
    this.stagingHost.idle(ctx);
    this.deviceMemory.idle(ctx);
    // Modules stay loaded (code, like the compile cache) until the context goes: a relaunch reuses them.
    ctx.trimMemoryPool();
  }

  /** Drop the context: frees what it still holds and releases the primary context (resetting it if poisoned). */
  releaseContext(): void {
    const ctx = this.ctx;
    this.ctx = undefined;
    this.setupStream = undefined;
    const why = this.poison;
    this.poison = undefined;
    // The context's dispose frees (or, poisoned, abandons) these with everything else.
    this.modules.clear();
    this.hostMemory.contextGone();
    this.stagingHost.contextGone();
    this.gathers.clear();
    this.deviceMemory.contextGone();
    if (!ctx) return;
    if (!why && this.anyRunning()) {
      // Other backends' kernels run in this primary context: freeing now would wait for them.
      let list = deferredByDevice.get(this.ordinal);
      if (!list) deferredByDevice.set(this.ordinal, (list = []));
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

  /** The context's allocation statistics and device memory (leak tests, metrics). */
  memoryReport(): { stats: ReturnType<CudaContext['stats']>; mem: ReturnType<CudaContext['memInfo']> } | undefined {
    if (!this.ctx) return undefined;
    return { stats: this.ctx.stats(), mem: this.ctx.memInfo() };
  }
}
