import {
  CONTROL,
  CONTROL_BLOCK_SIZE,
  IMAGE_AREA_HEADER,
  RING,
  Ring,
  alignUp,
  ringBytes,
  type ImageArea,
  type KernelOptions,
  type RegionRef,
} from '@ringgrain/core/backend';

/**
 * One lane of a CPU kernel (the share of its actors one pool thread consumes): its control block, the
 * host → lane ring, the lane → host reply ring, and the K2K ring every thread may produce into.
 */
export interface LaneBuffers {
  readonly control: RegionRef;
  readonly inbound: RegionRef;
  readonly reply: RegionRef;
  readonly k2k: RegionRef;
  /** The lane's column-image area (core ImageArea), when the kernel takes images. */
  readonly images?: ImageArea;
}

/** Image buffers per lane: the host packs the next while the lane runs one. */
export const IMAGE_BUFFERS = 4;
/** Bytes per image buffer (tens of thousands of rows; a new SharedArrayBuffer commits pages as they are written). */
export const IMAGE_BUFFER_BYTES = 1 << 20;

/** One SharedArrayBuffer per CPU kernel: its lanes, and its K2K overflow figures. */
export interface KernelBuffers {
  readonly sab: SharedArrayBuffer;
  readonly lanes: readonly LaneBuffers[];
  /** K2K overflow figures of this kernel as a target (OVERFLOW_WORD), Atomics-updated by every sender. */
  readonly overflow: RegionRef;
}

/**
 * Int32 words of a kernel's overflow region: messages other workers hold for it (in their per-target
 * overflow queues, waiting for room in its K2K rings), the most ever held at once, and sends that waited;
 * then, from `heldBy`, one word per pool thread: how many of those that thread holds (so what a thread
 * that dies held is known and counted, not lost silently).
 */
export const OVERFLOW_WORD = { inUse: 0, highWater: 1, overflowed: 2, heldBy: 4 } as const;
/** Int32 words of a kernel's overflow region with `lanes` pool threads. */
export function overflowWords(lanes: number): number {
  return OVERFLOW_WORD.heldBy + lanes;
}

export function allocateKernelBuffers(o: KernelOptions, lanes: number, images = false): KernelBuffers {
  let at = 0;
  const take = (bytes: number) => {
    const here = at;
    at = alignUp(at + bytes, 128);
    return here;
  };
  const layout = Array.from({ length: lanes }, () => ({
    control: take(CONTROL_BLOCK_SIZE),
    inbound: take(ringBytes(o.ringCapacity, o.slotSize)),
    reply: take(ringBytes(o.replyCapacity, o.slotSize)),
    k2k: take(ringBytes(o.ringCapacity, o.slotSize)),
    images: images ? take(IMAGE_AREA_HEADER + IMAGE_BUFFERS * IMAGE_BUFFER_BYTES) : -1,
  }));
  const overflowAt = take(4 * overflowWords(lanes));
  const sab = new SharedArrayBuffer(at);
  const region = (offset: number): RegionRef => ({ buffer: sab, offset });
  return {
    sab,
    lanes: layout.map((l) => {
      // A new SharedArrayBuffer is all zeros: big rings commit memory only as they fill.
      Ring.format(sab, l.inbound, o.ringCapacity, o.slotSize, { zeroed: true });
      Ring.format(sab, l.reply, o.replyCapacity, o.slotSize, { zeroed: true });
      Ring.format(sab, l.k2k, o.ringCapacity, o.slotSize, { zeroed: true });
      const lane = {
        control: region(l.control),
        inbound: region(l.inbound),
        reply: region(l.reply),
        k2k: region(l.k2k),
      };
      return l.images < 0
        ? lane
        : { ...lane, images: { region: region(l.images), buffers: IMAGE_BUFFERS, bufferBytes: IMAGE_BUFFER_BYTES } };
    }),
    overflow: region(overflowAt),
  };
}

/** A word a parked consumer sleeps on (Atomics.wait); producers that find it parked bump and notify it. */
export interface Doorbell {
  readonly buffer: SharedArrayBuffer;
  /** Int32 index of the word. */
  readonly index: number;
  /**
   * Int32 index of the consumer's parked flag (1 while it sleeps on the word), on the doorbell's own line;
   * absent for a consumer that never parks (the inline backend's).
   */
  readonly parked?: number;
}

/**
 * A producer that made work visible wakes a consumer that parked: only the producer that takes the flag
 * from 1 to 0 rings, so one futex wake per park, not one per send. The flag sits on the doorbell's line,
 * written only when the consumer parks and when it is woken, so the load every send makes is of a line
 * that stays shared, not one the consumer writes per message (a ring's tail line, where the flag was).
 */
export function wakeIfParked(words: Int32Array, index: number, parked: number): void {
  if (Atomics.load(words, parked) !== 0 && Atomics.compareExchange(words, parked, 1, 0) === 1) {
    Atomics.add(words, index, 1);
    Atomics.notify(words, index);
  }
}

/** A lane's own control-block doorbell (a consumer that parks per lane, as the inline backend's). */
export function controlDoorbell(b: KernelBuffers, lane: number): Doorbell {
  return { buffer: b.sab, index: (b.lanes[lane]!.control.offset >> 2) + CONTROL.doorbell };
}

/**
 * What a worker needs to reach one lane of another kernel: its K2K ring, and its consumer's doorbell and parked flag.
 */
export interface PeerLane {
  readonly k2kOffset: number;
  readonly doorbell: Doorbell;
}

/** What a worker needs to send K2K to a kernel: its lanes (a key's lane: core laneOfKey) and overflow figures. */
export interface PeerInfo {
  readonly grainId: number;
  readonly sab: SharedArrayBuffer;
  readonly overflowOffset: number;
  readonly lanes: readonly PeerLane[];
}

export function peerInfo(grainId: number, b: KernelBuffers, doorbells: readonly Doorbell[]): PeerInfo {
  return {
    grainId,
    sab: b.sab,
    overflowOffset: b.overflow.offset,
    lanes: b.lanes.map((l, i) => ({ k2kOffset: l.k2k.offset, doorbell: doorbells[i]! })),
  };
}

/**
 * K2K messages written into a kernel's K2K rings and never taken (head − tail of each lane's ring). Exact
 * once no peer writes there any more: after its dispose (every thread applied the peer list without it).
 */
export function k2kLeft(buffers: KernelBuffers): number {
  let n = 0;
  for (const l of buffers.lanes) {
    const w = new Ring(buffers.sab, l.k2k.offset).words;
    n += ((Atomics.load(w, RING.head) >>> 0) - (Atomics.load(w, RING.tail) >>> 0)) >>> 0;
  }
  return n;
}
