/**
 * Where a ring kernel's device memory (partition queues, state table, directory, counters, routes,
 * scratch) comes from.
 *
 * Plain cuMemAlloc, not the stream-ordered allocator: other kernels read a kernel's partition queues
 * (K2K sends) from their own streams, and they were launched before those queues existed. Memory from
 * cuMemAllocAsync is valid only in its allocating stream until something orders the other streams
 * after it, which nothing can do for a kernel that is already running; compute-sanitizer's memcheck
 * reported every such cross-kernel read as an invalid global read. cuMemAlloc memory is valid in every
 * stream as soon as the call returns, and cuMemAlloc returns at once while kernels run.
 *
 * cuMemFree, though, waits for every running kernel (forever, for a persistent one): a buffer given
 * back while other kernels run is pooled for the next launch of the same size and freed once none runs.
 */
import type { CudaContext, DeviceBuffer } from './driver/index.ts';

export class DeviceMemoryPool {
  private readonly pool: DeviceBuffer[] = [];

  /** A buffer of exactly `bytes` (contents undefined: the kernel zeroes it on its own stream). */
  take(ctx: CudaContext, bytes: number): DeviceBuffer {
    const i = this.pool.findIndex((b) => b.bytes === bytes);
    if (i >= 0) return this.pool.splice(i, 1)[0]!;
    return ctx.allocDevice(bytes);
  }

  /** The buffer's kernel is gone; `running`: other kernels still run on the device. */
  give(ctx: CudaContext, buf: DeviceBuffer, running: boolean): void {
    if (running) this.pool.push(buf);
    else ctx.freeDevice(buf);
  }

  /** No kernel runs on the device: free what had to be kept. */
  idle(ctx: CudaContext): void {
    for (const b of this.pool.splice(0)) ctx.freeDevice(b);
  }

  /** Bytes held for reuse (reported with the memory figures). */
  get pooledBytes(): number {
    return this.pool.reduce((n, b) => n + b.bytes, 0);
  }

  /** The context went, with everything allocated in it. */
  contextGone(): void {
    this.pool.length = 0;
  }
}
