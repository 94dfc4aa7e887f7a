/**
 * What the parts of a CudaContext (context-streams.ts, context-memory.ts, context-modules.ts) share: the
 * driver, the device, every handle created through the context (so stats() measures leaks and dispose()
 * frees all), the checks each call makes, and scratch out-parameters.
 */
import type { CudaDriver } from './driver.ts';
import { CudaUsageError } from './errors.ts';
import type { ContextStats, DeviceBuffer, HostBuffer, ModuleGlobal } from './context-types.ts';

/** The context made current on this thread by the last CudaContext call (CUDA's current context is per thread). */
let currentOnThisThread: bigint | null = null;

export class ContextCore {
  readonly host = new Map<bigint, HostBuffer>();
  /** Host memory registered (not allocated) here: unregistered, never freed, at dispose. */
  readonly registered = new Map<bigint, HostBuffer>();
  readonly dev = new Map<bigint, DeviceBuffer>();
  readonly modules = new Set<bigint>();
  /** Device allocations made with cuMemAllocAsync (a subset of dev). */
  readonly async = new Set<bigint>();
  readonly streams = new Set<bigint>();
  released = false;

  // Scratch out-parameters (synchronous calls on one thread: no one else uses them meanwhile).
  readonly out64 = new BigUint64Array(1);
  readonly out64b = new BigUint64Array(1);
  readonly out32 = new Int32Array(1);

  constructor(
    readonly driver: CudaDriver,
    /** The CUdevice handle. */
    readonly cuDevice: number,
    /** The CUcontext handle (the device's primary context). */
    readonly handle: bigint,
  ) {}

  makeCurrent(): void {
    this.alive();
    if (currentOnThisThread === this.handle) return;
    this.driver.check('cuCtxSetCurrent', this.driver.api.cuCtxSetCurrent(this.handle));
    currentOnThisThread = this.handle;
  }

  /** After release the primary context may be gone (last reference): never assume it is still current. */
  forgetCurrent(): void {
    if (currentOnThisThread === this.handle) currentOnThisThread = null;
  }

  alive(): void {
    if (this.released)
      throw new CudaUsageError('RG_CUDA_DISPOSED', 'this CudaContext was disposed', {
        hint: 'create a new CudaContext',
      });
  }

  check(call: string, result: number): void {
    this.driver.check(call, result);
  }

  ownedMemory(m: DeviceBuffer | ModuleGlobal): void {
    if ('module' in m) this.owned(this.modules, m.module.handle, 'global (its module)');
    else this.owned(this.dev, m.devPtr, 'device buffer');
  }

  owned(set: ReadonlySet<bigint> | ReadonlyMap<bigint, unknown>, handle: bigint, what: string): void {
    this.alive();
    if (!set.has(handle)) {
      throw new CudaUsageError(
        'RG_CUDA_FOREIGN_HANDLE',
        `this ${what} does not belong to this CudaContext (or was already freed)`,
        {
          hint: 'use handles only with the context that created them, and only once freed',
        },
      );
    }
  }

  stats(): ContextStats {
    let pinnedBytes = 0;
    for (const b of this.host.values()) pinnedBytes += b.bytes;
    let deviceBytes = 0;
    for (const b of this.dev.values()) deviceBytes += b.bytes;
    return {
      pinnedBytes,
      pinnedAllocations: this.host.size,
      deviceBytes,
      deviceAllocations: this.dev.size,
      streams: this.streams.size,
      modules: this.modules.size,
    };
  }

  /**
   * Unloads, frees, unregisters and destroys every tracked handle, each call attempted even after another
   * failed (`attempt` keeps the first error), then forgets them all.
   */
  releaseAll(attempt: (call: string, r: number) => void): void {
    const api = this.driver.api;
    for (const m of this.modules) attempt('cuModuleUnload', api.cuModuleUnload(m));
    for (const d of this.dev.keys()) attempt('cuMemFree_v2', api.cuMemFree_v2(d));
    for (const h of this.host.keys()) attempt('cuMemFreeHost', api.cuMemFreeHost(h));
    for (const h of this.registered.keys()) attempt('cuMemHostUnregister', api.cuMemHostUnregister(h));
    for (const s of this.streams) attempt('cuStreamDestroy_v2', api.cuStreamDestroy_v2(s));
    this.modules.clear();
    this.async.clear();
    this.dev.clear();
    this.host.clear();
    this.registered.clear();
    this.streams.clear();
  }
}

export function positiveSize(bytes: number, call: string): void {
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new CudaUsageError(
      'RG_CUDA_BAD_SIZE',
      `${call}: size must be a positive integer number of bytes, got ${bytes}`,
    );
  }
}

export function inRange(offset: number, len: number, cap: number, call: string): void {
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(len) || offset < 0 || len < 0 || offset + len > cap) {
    throw new CudaUsageError(
      'RG_CUDA_OUT_OF_BOUNDS',
      `${call}: [${offset}, ${offset + len}) is outside the ${cap}-byte buffer`,
    );
  }
}
