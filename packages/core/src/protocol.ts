import { layoutOf } from './schema/layout.ts';
import { t } from './schema/index.ts';
import type { StructSchema } from './schema/types.ts';

/**
 * Every structure shared between the host and a kernel (worker thread or CUDA) is defined here once,
 * as a schema. TS offsets come from `layoutOf`; the code generator emits the C structs and their
 * `static_assert`s from the same values. Nothing here is retyped anywhere else.
 *
 * Rule: every word has exactly one writer; producer- and consumer-written words sit
 * on separate 128-byte lines.
 */
const LINE_WORDS = 32; // 128 bytes of u32

export const RingHeader = t.struct({
  // Line 0, written by the producer(s) only: the next index to claim (CAS among CPU producers).
  head: t.u32,
  _pad0: t.array(t.u32, LINE_WORDS - 1),
  // Line 1, written by the consumer only.
  tail: t.u32,
  /** 1 while the consumer sleeps on its doorbell (CPU); producers then notify. */
  parked: t.u32,
  _pad1: t.array(t.u32, LINE_WORDS - 2),
  // Line 2, written once at creation.
  capacity: t.u32,
  slotSize: t.u32,
  _pad2: t.array(t.u32, LINE_WORDS - 2),
});

/**
 * Slot = this header then `length` bytes of standard msgpack; `slotSize` counts both.
 * A slot is published by writing `seq` last (release): slot i of the ring is readable when
 * seq == i + 1 (mod 2^32). Per-slot sequence numbers let several device warps share one reply ring
 * (reserving indices with a device atomic) while the host stays the single consumer.
 */
export const SlotHeader = t.struct({
  seq: t.u32,
  length: t.u32,
  method: t.u32,
  flags: t.u32,
  /** Correlation id of the ask this message belongs to (0 for tells). */
  corr: t.u32,
  /** Grain key: two's complement int64 split in halves; for string keys, the interned id. */
  keyLo: t.u32,
  keyHi: t.u32,
  /** Kernel (grain class) id that produced the message; HOST_SENDER for the host. */
  sender: t.u32,
  /** Target grain class id for requests; the replying class id for replies. */
  grain: t.u32,
  _pad: t.u32,
  /** Sender's clock in ms (host clock, or the sending handler's ctx.now()): handlers see it as ctx.now(). */
  time: t.f64,
});

export const SlotFlag = {
  ASK: 1,
  REPLY: 2,
  /** Reply carrying a handler error: payload is a msgpack str with the handler's message. */
  ERROR: 4,
  /** Reply saying the kernel refused the message (malformed, unknown method): msgpack str reason. */
  REJECTED: 8,
  /** String key: keyLo is the host-interned id, keyHi the UTF-8 byte length of the key stored after the payload. */
  STRING_KEY: 16,
  /**
   * Device partition queues only: a slot the CUDA ingress warp claimed but could not fill in host-ring
   * order (a later queue of the same batch was full); the host message is moved again in a later batch
   * and the worker passes over this slot without a turn.
   */
  SKIP: 32,
  /**
   * Host → CPU lane only: the slot carries no payload but a column image (column-image.ts) in buffer
   * `keyLo` of the lane's image area (ImageArea), with `keyHi` rows; the lane runs them as that many
   * tells, in row order, at this slot's place in the ring, then frees the buffer.
   */
  IMAGE: 64,
} as const;

/**
 * A lane's image area (LaneMemory.images): Int32 busy words (one per buffer, 1 while the lane holds an
 * image there) in the first IMAGE_AREA_HEADER bytes, then `buffers` buffers of `bufferBytes` each.
 */
export const IMAGE_AREA_HEADER = 128;
/**
 * Int32 word of the image area's header where the lane adds, per image it takes, its rows minus one: a
 * restarted lane's received count is its rings' tails plus this (Dispatcher.begin).
 */
export const IMAGE_AREA_EXTRA_WORD = 31;
/** Int32 word of the header: 1 + the buffer whose rows the lane is running (0: none), so a restarted lane frees it. */
export const IMAGE_AREA_RUNNING_WORD = 30;

export const HOST_SENDER = 0xffffffff;

/**
 * Requested/observed states of the handshake: the host writes requested + requestEpoch, the kernel answers with
 * observed + ackEpoch.
 */
export const KernelState = {
  NONE: 0,
  IDLE: 1,
  ACTIVE: 2,
  PAUSED: 3,
  STOP: 4,
  STOPPED: 5,
  FAULTED: 6,
} as const;

export const ControlBlock = t.struct({
  // Line 0, host-written.
  requested: t.u32,
  /** Bumped with every request so the kernel's acknowledgment can be matched. */
  requestEpoch: t.u32,
  /**
   * Bumped by the host's quiet barrier (system.idle): the kernel's next counter publication starts after
   * it reads the new value, and says so in publishEpoch.
   */
  publishRequest: t.u32,
  _pad0: t.array(t.u32, LINE_WORDS - 3),
  // Line 1, kernel-written.
  observed: t.u32,
  ackEpoch: t.u32,
  heartbeat: t.u32,
  faultCode: t.u32,
  /** The publishRequest read before the counters last published (written after them). */
  publishEpoch: t.u32,
  /**
   * With that publication (lane 0, CUDA): messages claimed into device partition queues or overflow
   * lists and not yet finished, turns under way included. Read before the sent counters.
   */
  queued: t.u32,
  _pad1: t.array(t.u32, LINE_WORDS - 6),
  // Line 2, kernel-written counters (u32, wrapping; readers take differences).
  received: t.u32,
  processed: t.u32,
  replied: t.u32,
  k2kSent: t.u32,
  k2kReceived: t.u32,
  handlerErrors: t.u32,
  rejected: t.u32,
  activations: t.u32,
  _pad2: t.array(t.u32, LINE_WORDS - 8),
  // Line 3, many writers on CPU (Atomics.add), unused on CUDA: the doorbell a parked consumer waits on.
  doorbell: t.u32,
  _pad3: t.array(t.u32, LINE_WORDS - 1),
});

export type CounterName =
  | 'received'
  | 'processed'
  | 'replied'
  | 'k2kSent'
  | 'k2kReceived'
  | 'handlerErrors'
  | 'rejected'
  | 'activations';
export const COUNTERS: readonly CounterName[] = [
  'received',
  'processed',
  'replied',
  'k2kSent',
  'k2kReceived',
  'handlerErrors',
  'rejected',
  'activations',
];

/** Byte offset of a field of a protocol struct, from the one layout function. */
export function offsetOf(schema: StructSchema, field: string): number {
  const f = layoutOf(schema).fields?.find((x) => x.name === field);
  if (!f) throw new Error(`no field ${field}`);
  return f.offset;
}

export const RING_HEADER_SIZE = layoutOf(RingHeader).size;
export const SLOT_HEADER_SIZE = layoutOf(SlotHeader).size;
export const CONTROL_BLOCK_SIZE = layoutOf(ControlBlock).size;

/** Word indices (u32) used on the hot path, derived once. */
export const RING = {
  head: offsetOf(RingHeader, 'head') >> 2,
  tail: offsetOf(RingHeader, 'tail') >> 2,
  parked: offsetOf(RingHeader, 'parked') >> 2,
  capacity: offsetOf(RingHeader, 'capacity') >> 2,
  slotSize: offsetOf(RingHeader, 'slotSize') >> 2,
} as const;

export const SLOT = {
  seq: offsetOf(SlotHeader, 'seq'),
  length: offsetOf(SlotHeader, 'length'),
  method: offsetOf(SlotHeader, 'method'),
  flags: offsetOf(SlotHeader, 'flags'),
  corr: offsetOf(SlotHeader, 'corr'),
  keyLo: offsetOf(SlotHeader, 'keyLo'),
  keyHi: offsetOf(SlotHeader, 'keyHi'),
  sender: offsetOf(SlotHeader, 'sender'),
  grain: offsetOf(SlotHeader, 'grain'),
  time: offsetOf(SlotHeader, 'time'),
} as const;

export const CONTROL = Object.fromEntries(
  (layoutOf(ControlBlock).fields ?? []).filter((f) => !f.name.startsWith('_')).map((f) => [f.name, f.offset >> 2]),
) as Record<
  | 'requested'
  | 'requestEpoch'
  | 'publishRequest'
  | 'observed'
  | 'ackEpoch'
  | 'heartbeat'
  | 'faultCode'
  | 'publishEpoch'
  | 'queued'
  | 'doorbell'
  | CounterName,
  number
>;

/** Bytes a ring of `capacity` slots of `slotSize` bytes occupies (header included). */
export function ringBytes(capacity: number, slotSize: number): number {
  return RING_HEADER_SIZE + capacity * slotSize;
}

/** The CUDA runtime's device-side layouts, defined beside these (cuda-layouts.ts imports nothing from this file). */
export * from './cuda-layouts.ts';
/** Actor residency's device and host layouts (cuda-residency-layouts.ts, likewise free of imports from here). */
export * from './cuda-residency-layouts.ts';
