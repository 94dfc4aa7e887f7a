import type { CudaContext } from '../driver/index.ts';
import type { HostMemorySource, HostRegion } from '../host-memory.ts';
import type { Arena } from './arena.ts';
import type { SharedMapping } from './shm.ts';

/**
 * Regions of one shared mapping, registered with the context once (before the first kernel starts:
 * registration, like other pinning, must not meet a running kernel). Giving a region back is arena
 * bookkeeping, never a driver call.
 */
export class SharedHostMemory implements HostMemorySource {
  /** Device address of the mapping, registered with the current context on first use. */
  private devPtr: bigint | undefined;

  constructor(
    private readonly mapping: SharedMapping,
    private readonly arena: Arena,
  ) {}

  take(ctx: CudaContext, bytes: number): HostRegion {
    this.devPtr ??= ctx.registerHost(this.mapping.address, this.mapping.bytes).devPtr;
    const offset = this.arena.alloc(bytes);
    new Uint8Array(this.mapping.buffer, offset, bytes).fill(0);
    return { buffer: this.mapping.buffer, offset, devPtr: this.devPtr + BigInt(offset), bytes };
  }

  give(_ctx: CudaContext, region: HostRegion): void {
    this.arena.release(region.offset);
  }

  idle(): void {}

  contextGone(): void {
    this.devPtr = undefined;
  }
}
