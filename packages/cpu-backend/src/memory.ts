import { CONTROL_BLOCK_SIZE, Ring, alignUp, ringBytes, type KernelOptions, type RegionRef } from '@ringgrain/core';

/**
 * One SharedArrayBuffer per CPU kernel: control block, host → kernel ring, kernel → host reply ring,
 * the K2K ring that every worker of the backend (this one included) may produce into, and its overflow figures.
 */
export interface KernelBuffers {
  readonly sab: SharedArrayBuffer;
  readonly control: RegionRef;
  readonly inbound: RegionRef;
  readonly reply: RegionRef;
  readonly k2k: RegionRef;
  /** K2K overflow figures of this kernel as a target (OVERFLOW_WORD), Atomics-updated by every sender. */
  readonly overflow: RegionRef;
}

/**
 * Int32 words of a kernel's overflow region: messages other workers hold for it (in their per-target
 * overflow queues, waiting for room in its K2K ring), the most ever held at once, and sends that waited.
 */
export const OVERFLOW_WORD = { inUse: 0, highWater: 1, overflowed: 2 } as const;
const OVERFLOW_BYTES = 16;

export function allocateKernelBuffers(o: KernelOptions): KernelBuffers {
  const controlAt = 0;
  const inboundAt = alignUp(controlAt + CONTROL_BLOCK_SIZE, 128);
  const replyAt = alignUp(inboundAt + ringBytes(o.ringCapacity, o.slotSize), 128);
  const k2kAt = alignUp(replyAt + ringBytes(o.replyCapacity, o.slotSize), 128);
  const overflowAt = alignUp(k2kAt + ringBytes(o.ringCapacity, o.slotSize), 128);
  const total = alignUp(overflowAt + OVERFLOW_BYTES, 128);
  const sab = new SharedArrayBuffer(total);
  Ring.format(sab, inboundAt, o.ringCapacity, o.slotSize);
  Ring.format(sab, replyAt, o.replyCapacity, o.slotSize);
  Ring.format(sab, k2kAt, o.ringCapacity, o.slotSize);
  return {
    sab,
    control: { buffer: sab, offset: controlAt },
    inbound: { buffer: sab, offset: inboundAt },
    reply: { buffer: sab, offset: replyAt },
    k2k: { buffer: sab, offset: k2kAt },
    overflow: { buffer: sab, offset: overflowAt },
  };
}

/** What a worker needs to reach another kernel's K2K ring and doorbell. */
export interface PeerInfo {
  readonly grainId: number;
  readonly sab: SharedArrayBuffer;
  readonly k2kOffset: number;
  readonly controlOffset: number;
  readonly inboundOffset: number;
  readonly overflowOffset: number;
}
