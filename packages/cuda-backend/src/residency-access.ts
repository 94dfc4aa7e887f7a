import { residencyLayout, type KernelStateHost } from '@ringgrain/core/backend';
import type { CudaContext, CudaStream, DeviceBuffer } from './driver/index.ts';
import type { HostRegion } from './host-memory.ts';
import type { StatePools } from './kernel-state.ts';
import { ResidencyHost, type ResidencyTarget } from './residency.ts';

/** Where a kernel keeps its residency parts: the device area inside its allocation, the host block inside its pinned region. */
export interface ResidencyPlace {
  readonly device: DeviceBuffer;
  /** Byte offset of the residency area (residencyLayout) in `device`. */
  readonly areaAt: number;
  /** The pinned host part (residencyHostBytes) at `offset` of `buffer`. */
  readonly buffer: ArrayBufferLike;
  readonly offset: number;
}

/**
 * A CUDA kernel's residency access (residency.ts on its driver calls): a stream of its own, so a request
 * never waits behind the persistent kernel's stream, and the pinned mirror of the staging batch.
 */
export class KernelResidency {
  readonly host: ResidencyHost;
  private readonly stream: CudaStream;
  private readonly staging: HostRegion;

  constructor(
    private readonly ctx: CudaContext,
    private readonly pools: StatePools,
    target: ResidencyTarget,
    place: ResidencyPlace,
    stateHost: KernelStateHost,
    fault: () => Error | undefined,
    timeoutMs: number,
  ) {
    const bytes = residencyLayout(target).staging.bytes;
    this.stream = ctx.createStream();
    try {
      this.staging = pools.host.take(ctx, bytes);
    } catch (e) {
      ctx.destroyStream(this.stream);
      throw e;
    }
    const { stream } = this;
    this.host = new ResidencyHost(
      target,
      {
        copyIn: (src, offset) => ctx.copyToDeviceAsync(place.device, src, stream, place.areaAt + offset),
        copyOut: (dst, offset) => ctx.copyFromDeviceAsync(dst, place.device, stream, place.areaAt + offset),
        sync: () => ctx.synchronize(stream),
        fault,
        // A request is answered within a few of the kernel's loops: poll on the event loop's next turn,
        // then every millisecond once it takes longer (a worker busy with long turns). Counted per request:
        // a count kept across requests (reset only by deactivations) made every install after the 64th
        // wait a millisecond a poll, which was most of a first message's ~1 ms on the H200 at ade95fb.
        pause: (attempt) => new Promise<void>((r) => (attempt < 64 ? setImmediate(r) : setTimeout(r, 1))),
      },
      place.buffer,
      place.offset,
      new Uint8Array(this.staging.buffer, this.staging.offset, bytes),
      stateHost,
      { timeoutMs },
    );
  }

  deactivateIdle(before: number, now: number): Promise<number> {
    return this.host.deactivateIdle(before, now);
  }

  /** The kernel is being freed (its stream idle): give the staging mirror back. */
  dispose(): void {
    this.host.close();
    this.pools.host.give(this.ctx, this.staging, this.pools.running());
    this.ctx.destroyStream(this.stream);
  }
}
