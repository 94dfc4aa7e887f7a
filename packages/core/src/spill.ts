/**
 * Sends that found their kernel's inbound ring full wait here, in order, until it has room. A waiting
 * message is encoded at once, as the slot image it will be (header + payload, seq left out), into a
 * byte chunk; when the ring drains, each image is copied into a slot and published. So waiting costs an
 * encode and a copy — no promise, closure or object per message (those made a full ring cost ~2 µs per
 * send, measured, and collapsed throughput exactly when the consumer fell behind) — and a bad payload
 * still throws at the call, as on the direct path. tellMany's rows wait unencoded as one segment.
 */
import { Deque } from './deque.ts';
import { QueueLimitError } from './errors.ts';
import { SLOT, SLOT_HEADER_SIZE, SlotFlag } from './protocol.ts';
import type { RingProducer } from './ring.ts';

/** What SlotWriter needs of a place to encode a slot (a Ring, or a chunk here). */
export interface SlotTarget {
  readonly buffer: ArrayBufferLike;
  readonly u8: Uint8Array;
  readonly dv: DataView;
  readonly slotSize: number;
  readonly payloadCapacity: number;
}

/** A run of encoded slot images, and the promise the tells among them hand out (made on demand). */
class Chunk implements SlotTarget {
  readonly buffer: ArrayBuffer;
  readonly u8: Uint8Array;
  readonly dv: DataView;
  /** Word view: images start on 16-byte boundaries, so a fixed image (tell-image.ts) is written and copied by words. */
  readonly i32: Int32Array;
  /** Byte offset of each image, in order; `next` is the first not yet copied into the ring. */
  readonly at: number[] = [];
  /** The kernel lane each image goes to (lanes.ts). */
  readonly lane: number[] = [];
  next = 0;
  used = 0;
  private settle?: { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void };

  constructor(
    bytes: number,
    readonly slotSize: number,
  ) {
    this.buffer = new ArrayBuffer(bytes);
    this.u8 = new Uint8Array(this.buffer);
    this.dv = new DataView(this.buffer);
    this.i32 = new Int32Array(this.buffer);
  }

  get payloadCapacity(): number {
    return this.slotSize - SLOT_HEADER_SIZE;
  }

  /** Room to encode one more message of up to a slot? */
  fits(): boolean {
    return this.buffer.byteLength - this.used >= this.slotSize;
  }

  /** Resolves once every message of this chunk is in the ring; rejects if they are cancelled. */
  written(): Promise<void> {
    if (!this.settle) {
      let resolve!: () => void;
      let reject!: (e: Error) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      // Shared by many tells, most never awaited: a rejection must not surface as unhandled.
      promise.catch(() => undefined);
      this.settle = { promise, resolve, reject };
    }
    return this.settle.promise;
  }

  done(error?: Error): void {
    if (!this.settle) return;
    if (error) this.settle.reject(error);
    else this.settle.resolve();
  }

  /** Bytes the image at `off` occupies (header, payload, a string key's bytes). */
  imageBytes(off: number): number {
    const flags = this.dv.getUint32(off + SLOT.flags, true);
    const keyBytes = flags & SlotFlag.STRING_KEY ? this.dv.getUint32(off + SLOT.keyHi, true) : 0;
    return SLOT_HEADER_SIZE + this.dv.getUint32(off + SLOT.length, true) + keyBytes;
  }
}

/** tellMany rows that wait unencoded; the system writes them (it owns the column walk). */
export interface RowsSegment {
  readonly rows: { next: number; readonly end: number };
  readonly method: string;
}

type Segment = Chunk | RowsSegment;

/** What a cancelled message was: its method id, correlation id (0 for a tell) and flags. */
export interface SpilledMessage {
  method: number;
  corr: number;
}

const CHUNK_BYTES = 1 << 20;
/** What a waiting image costs besides its bytes: its entries in Chunk.at and Chunk.lane (8 bytes each in V8). */
const INDEX_BYTES = 16;
/** SystemOptions.maxQueuedBytes by default: per kernel, what its waiting sends' chunks may take. */
export const DEFAULT_MAX_QUEUED_BYTES = 256 << 20;
/** Images up to this many bytes are copied into the ring word by word. */
const WORD_COPY_UP_TO = 256;

export class Spill {
  private readonly segments = new Deque<Segment>();
  /** Messages waiting (rows of a tellMany segment count one each). */
  size = 0;
  /** When the head last moved (or the first message arrived): the queue-full timeout runs from here. */
  since = 0;
  /**
   * Bytes of the chunks held and of their images' index entries (freed as they drain): at most maxBytes
   * (give or take one chunk's index), so a sender that never yields cannot exhaust memory.
   */
  bytes = 0;
  private readonly chunkBytes: number;

  constructor(
    readonly slotSize: number,
    readonly grain = '?',
    readonly maxBytes = DEFAULT_MAX_QUEUED_BYTES,
  ) {
    this.chunkBytes = Math.max(Math.min(CHUNK_BYTES, maxBytes), 2 * slotSize);
  }

  get empty(): boolean {
    return this.size === 0;
  }

  /** A place to encode one message: the tail chunk, or a new one. Call `commit` after encoding. */
  target(): { chunk: Chunk; at: number } {
    let tail = this.segments.length ? this.segments.peekLast() : undefined;
    if (!(tail instanceof Chunk) || !tail.fits()) {
      // Refused at the call, before anything is encoded: what already waits stays and is sent.
      if (this.bytes + this.chunkBytes > this.maxBytes)
        throw new QueueLimitError(this.grain, this.size, this.bytes, this.maxBytes);
      tail = new Chunk(this.chunkBytes, this.slotSize);
      this.bytes += this.chunkBytes;
      this.segments.push(tail);
    }
    return { chunk: tail, at: tail.used };
  }

  /** The message encoded at `at` of `chunk` for lane `lane` now waits; returns the promise its tell hands out. */
  commit(chunk: Chunk, at: number, lane: number): Promise<void> {
    // The clock only when the queue starts (a read of it per message was a tenth of a full ring's send).
    if (this.size === 0) this.since = performance.now();
    chunk.at.push(at);
    chunk.lane.push(lane);
    this.bytes += INDEX_BYTES;
    chunk.used = at + ((chunk.imageBytes(at) + 15) & ~15);
    this.size++;
    return chunk.written();
  }

  pushRows(seg: RowsSegment, now: number): void {
    if (this.size === 0) this.since = now;
    this.segments.push(seg);
    this.size += seg.rows.end - seg.rows.next;
  }

  /**
   * Moves waiting messages into their lanes' rings, in order, while the next one's lane has room:
   * images are copied (all but the seq word) and published; a rows segment goes through `writeRows`
   * (which returns the rows it consumed and counts what it sent). Returns how many images were published.
   */
  drain(producers: readonly RingProducer[], writeRows: (seg: RowsSegment) => number, now: number): number {
    let images = 0;
    let rows = 0;
    for (let seg = this.segments.peek(); seg; seg = this.segments.peek()) {
      if (seg instanceof Chunk) {
        while (seg.next < seg.at.length) {
          const producer = producers[seg.lane[seg.next]!]!;
          const ring = producer.ring;
          const slot = producer.claim();
          if (slot < 0) break;
          const off = seg.at[seg.next]!;
          const end = off + seg.imageBytes(off);
          if (SLOT.seq === 0 && end - off <= WORD_COPY_UP_TO) {
            // A small image by words (both ends 16-byte aligned): cheaper than two views and a copy call.
            const dst = ring.i32;
            const src = seg.i32;
            const d = slot >> 2;
            for (let w = (off >> 2) + 1, last = (end + 3) >> 2, k = d + 1; w < last; w++, k++) dst[k] = src[w]!;
          } else {
            if (SLOT.seq > 0) ring.u8.set(seg.u8.subarray(off, off + SLOT.seq), slot);
            ring.u8.set(seg.u8.subarray(off + SLOT.seq + 4, end), slot + SLOT.seq + 4);
          }
          producer.publishSeq(slot);
          seg.next++;
          images++;
        }
        for (const p of producers) p.flushHead();
        if (seg.next < seg.at.length) break;
        this.segments.shift();
        this.bytes -= seg.buffer.byteLength + INDEX_BYTES * seg.at.length;
        seg.done();
      } else {
        const consumed = writeRows(seg);
        rows += consumed;
        if (seg.rows.next < seg.rows.end) break;
        this.segments.shift();
      }
    }
    this.size -= images + rows;
    if (images + rows > 0) this.since = now;
    return images;
  }

  /**
   * Drops everything waiting (the kernel stopped accepting, or the ring stayed full too long): each
   * encoded message is reported to `each`, chunk promises reject with `error`. Returns how many.
   */
  cancel(error: Error, each: (m: SpilledMessage) => void, rows: (seg: RowsSegment, count: number) => void): number {
    let n = 0;
    for (let seg = this.segments.shift(); seg; seg = this.segments.shift()) {
      if (seg instanceof Chunk) {
        for (let i = seg.next; i < seg.at.length; i++) {
          const off = seg.at[i]!;
          each({ method: seg.dv.getUint32(off + SLOT.method, true), corr: seg.dv.getUint32(off + SLOT.corr, true) });
          n++;
        }
        this.bytes -= seg.buffer.byteLength + INDEX_BYTES * seg.at.length;
        seg.done(error);
      } else {
        const count = seg.rows.end - seg.rows.next;
        rows(seg, count);
        n += count;
      }
    }
    this.size = 0;
    return n;
  }
}
