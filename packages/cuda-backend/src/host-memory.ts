/**
 * Where a ring kernel's host-shared memory (control block, inbound ring, reply ring) comes from: pinned
 * buffers of this process (the default), or regions of a shared mapping that the application process
 * also maps (the GPU host process of IsolatedCudaBackend).
 */
import type { CudaContext, HostBuffer } from './driver/index.ts';

export interface HostRegion {
  /** The memory the host reads and writes; the region starts at `offset` in it. */
  readonly buffer: ArrayBuffer;
  readonly offset: number;
  /** Device address of the region's first byte. */
  readonly devPtr: bigint;
  readonly bytes: number;
}

export interface HostMemorySource {
  /** A zero-filled region of at least `bytes`, mapped into the device. */
  take(ctx: CudaContext, bytes: number): HostRegion;
  /** The region's kernel is gone; `running`: other kernels still run on the device. */
  give(ctx: CudaContext, region: HostRegion, running: boolean): void;
  /** No kernel runs on the device: free what had to be kept. */
  idle(ctx: CudaContext): void;
  /** The context went, with everything allocated or registered in it. */
  contextGone(): void;
}

/**
 * Pinned buffers (cuMemHostAlloc). cuMemFreeHost waits for every running kernel, so a buffer given back
 * while others run is pooled for the next launch and freed once none runs.
 */
export class PinnedHostMemory implements HostMemorySource {
  private readonly pool: HostBuffer[] = [];
  private readonly byRegion = new WeakMap<HostRegion, HostBuffer>();

  take(ctx: CudaContext, bytes: number): HostRegion {
    const i = this.pool.findIndex((b) => b.bytes === bytes);
    let b: HostBuffer;
    if (i >= 0) {
      b = this.pool.splice(i, 1)[0]!;
      new Uint8Array(b.buffer).fill(0);
    } else {
      b = ctx.allocHost(bytes);
    }
    const r: HostRegion = { buffer: b.buffer, offset: 0, devPtr: b.devPtr, bytes };
    this.byRegion.set(r, b);
    return r;
  }

  give(ctx: CudaContext, region: HostRegion, running: boolean): void {
    const b = this.byRegion.get(region);
    if (!b) return;
    this.byRegion.delete(region);
    if (running) this.pool.push(b);
    else ctx.freeHost(b);
  }

  idle(ctx: CudaContext): void {
    for (const b of this.pool.splice(0)) ctx.freeHost(b);
  }

  contextGone(): void {
    this.pool.length = 0;
  }
}
