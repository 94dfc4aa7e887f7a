import { gatherLayout } from '@ringgrain/core/backend';
import type { CudaContext, CudaFunction, CudaStream, DeviceBuffer } from './driver/index.ts';
import type { DeviceMemoryPool } from './device-memory.ts';
import type { HostMemorySource, HostRegion } from './host-memory.ts';
import { DirtyGather, type GatherTarget, type Gathered } from './state-gather.ts';

/** Where a kernel's state access takes its memory from (the backend's pools: frees wait for running kernels). */
export interface StatePools {
  readonly device: DeviceMemoryPool;
  readonly host: HostMemorySource;
  /** Whether any ring kernel still runs on the device (then buffers are pooled, not freed). */
  running(): boolean;
}

/**
 * A CUDA kernel's write-behind access, made on its first use: a stream of its own (so a gather never
 * waits behind the persistent kernel's stream), the device staging buffer and its pinned host mirror.
 */
export class KernelStateAccess {
  private readonly stream: CudaStream;
  private readonly staging: DeviceBuffer;
  private readonly host: HostRegion;
  private readonly gather: DirtyGather;

  constructor(
    private readonly ctx: CudaContext,
    gatherFn: CudaFunction,
    private readonly pools: StatePools,
    target: GatherTarget,
  ) {
    const bytes = gatherLayout(target.stateSize, target.maxActors).bytes;
    this.stream = ctx.createStream();
    try {
      this.staging = pools.device.take(ctx, bytes);
      try {
        this.host = pools.host.take(ctx, bytes);
      } catch (e) {
        pools.device.give(ctx, this.staging, pools.running());
        throw e;
      }
    } catch (e) {
      ctx.destroyStream(this.stream);
      throw e;
    }
    const { stream, staging } = this;
    this.gather = new DirtyGather(
      target,
      {
        staging: staging.devPtr,
        zero: (offset, n) => ctx.memsetDeviceAsync(staging, 0, stream, n, offset),
        launch: (blocks, threadsPerBlock, args) =>
          ctx.launch(gatherFn, { grid: blocks, block: threadsPerBlock, sharedMemBytes: 0, stream }, args),
        copyOut: (dst, offset) => ctx.copyFromDeviceAsync(dst, staging, stream, offset),
        sync: () => ctx.synchronize(stream),
      },
      new Uint8Array(this.host.buffer, this.host.offset, bytes),
    );
  }

  readDirty(): Promise<Gathered> {
    return this.gather.run();
  }

  /** The kernel is being freed (its stream idle): give the buffers back. */
  dispose(): void {
    const running = this.pools.running();
    this.pools.device.give(this.ctx, this.staging, running);
    this.pools.host.give(this.ctx, this.host, running);
    this.ctx.destroyStream(this.stream);
  }
}
