import { CONTROL_BLOCK_SIZE, Ring, alignUp, ringBytes, type KernelOptions, type RegionRef } from '@ringgrain/core';

/**
 * One SharedArrayBuffer per CPU kernel: control block, host → kernel ring, kernel → host reply ring,
 * and the K2K ring that every worker of the backend (this one included) may produce into.
 */
export interface KernelBuffers {
  readonly sab: SharedArrayBuffer;
  readonly control: RegionRef;
  readonly inbound: RegionRef;
  readonly reply: RegionRef;
  readonly k2k: RegionRef;
}

export function allocateKernelBuffers(o: KernelOptions): KernelBuffers {
  const controlAt = 0;
  const inboundAt = alignUp(controlAt + CONTROL_BLOCK_SIZE, 128);
  const replyAt = alignUp(inboundAt + ringBytes(o.ringCapacity, o.slotSize), 128);
  const k2kAt = alignUp(replyAt + ringBytes(o.replyCapacity, o.slotSize), 128);
  const total = alignUp(k2kAt + ringBytes(o.ringCapacity, o.slotSize), 128);
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
  };
}

/** What a worker needs to reach another kernel's K2K ring and doorbell. */
export interface PeerInfo {
  readonly grainId: number;
  readonly sab: SharedArrayBuffer;
  readonly k2kOffset: number;
  readonly controlOffset: number;
  readonly inboundOffset: number;
}
