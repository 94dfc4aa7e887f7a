import { RingError } from './errors.ts';
import { RING, RING_HEADER_SIZE, SLOT, SLOT_HEADER_SIZE, ringBytes } from './protocol.ts';

/**
 * Ring of fixed-size slots over any ArrayBuffer: a SharedArrayBuffer between threads, or pinned mapped
 * host memory shared with a GPU. One consumer always. Producers: one (`claim`), or several CPU threads
 * (`claimShared`, a CAS on head — never used across PCIe, where there are no host atomics).
 *
 * Publication is per slot: the producer writes header and payload, then stores `seq = index + 1`
 * (sequentially consistent). The consumer loads `seq` before reading the slot and publishes `tail` after
 * copying it out. `head` and `tail` sit on separate 128-byte lines (protocol.ts).
 */
export class Ring {
  readonly buffer: ArrayBufferLike;
  readonly offset: number;
  readonly words: Int32Array;
  /** Whole-buffer views, so slot offsets are absolute. */
  readonly u8: Uint8Array;
  readonly i32: Int32Array;
  readonly dv: DataView;
  readonly capacity: number;
  readonly slotSize: number;
  readonly mask: number;
  readonly slotsAt: number;

  /**
   * Writes a fresh header and clears every slot's seq; call once, before either end touches the ring.
   * `zeroed`: the memory is known to be all zeros (a new SharedArrayBuffer), so it is not written over —
   * the OS then commits a big ring's pages only as they are used.
   */
  static format(
    buffer: ArrayBufferLike,
    offset: number,
    capacity: number,
    slotSize: number,
    opts: { zeroed?: boolean } = {},
  ): Ring {
    if (!Number.isInteger(capacity) || capacity < 2 || (capacity & (capacity - 1)) !== 0) {
      throw new RingError(`ring capacity must be a power of two ≥ 2, got ${capacity}`);
    }
    if (!Number.isInteger(slotSize) || slotSize < SLOT_HEADER_SIZE + 16 || slotSize % 16 !== 0) {
      throw new RingError(`slotSize must be a multiple of 16 and at least ${SLOT_HEADER_SIZE + 16}, got ${slotSize}`);
    }
    if (offset % 128 !== 0) throw new RingError(`ring offset ${offset} must be 128-byte aligned`);
    if (offset + ringBytes(capacity, slotSize) > buffer.byteLength) {
      throw new RingError(
        `buffer of ${buffer.byteLength} bytes cannot hold a ring of ${ringBytes(capacity, slotSize)} ` +
          `bytes at ${offset}`,
      );
    }
    if (!opts.zeroed) new Uint8Array(buffer, offset, ringBytes(capacity, slotSize)).fill(0);
    const words = new Int32Array(buffer, offset, RING_HEADER_SIZE >> 2);
    words[RING.capacity] = capacity;
    words[RING.slotSize] = slotSize;
    return new Ring(buffer, offset);
  }

  constructor(buffer: ArrayBufferLike, offset: number) {
    this.buffer = buffer;
    this.offset = offset;
    this.words = new Int32Array(buffer, offset, RING_HEADER_SIZE >> 2);
    this.capacity = this.words[RING.capacity] as number;
    this.slotSize = this.words[RING.slotSize] as number;
    if (this.capacity < 2 || (this.capacity & (this.capacity - 1)) !== 0 || this.slotSize <= SLOT_HEADER_SIZE) {
      throw new RingError(
        `no formatted ring at offset ${offset} (capacity ${this.capacity}, slotSize ${this.slotSize})`,
      );
    }
    this.mask = this.capacity - 1;
    this.u8 = new Uint8Array(buffer);
    this.i32 = new Int32Array(buffer, 0, buffer.byteLength >> 2);
    this.dv = new DataView(buffer);
    this.slotsAt = offset + RING_HEADER_SIZE;
  }

  /** Largest payload a slot can carry. */
  get payloadCapacity(): number {
    return this.slotSize - SLOT_HEADER_SIZE;
  }

  slotAt(index: number): number {
    return this.slotsAt + (index & this.mask) * this.slotSize;
  }

  /** Messages claimed and not yet released (a snapshot; both ends move). */
  depth(): number {
    return (Atomics.load(this.words, RING.head) - Atomics.load(this.words, RING.tail)) >>> 0;
  }
}

/**
 * A producer claims a free slot, writes it, then publishes it. Claims return the absolute byte offset
 * of the slot, or -1 when the ring is full. A single producer's claim reserves nothing, so a write that
 * fails (bad payload) simply leaves the slot unused.
 */
export class RingProducer {
  readonly ring: Ring;
  private index = 0;
  private tailSeen = 0;
  /** Head after publishSeq calls not yet flushed (flushHead), else undefined. */
  private pendingHead: number | undefined;

  constructor(ring: Ring) {
    this.ring = ring;
    this.tailSeen = Atomics.load(ring.words, RING.tail) >>> 0;
  }

  /** Slots claimed by claimHeld, written and not yet published (releaseHeld publishes them in order). */
  private heldSlots = 0;

  get held(): number {
    return this.heldSlots;
  }

  /** Gives back the last slot claimHeld returned (its write failed): the next claim takes it again. */
  dropHeld(): void {
    if (this.heldSlots === 0) throw new RingError('dropHeld: no held slot');
    this.heldSlots--;
  }

  /**
   * Single producer, deferred publication: the next free slot after the held ones (-1 when full). The
   * caller writes it completely; releaseHeld then publishes every held slot in claim order. Writing a
   * run of slots before the first seq store lets their cache-line transfers overlap: a sequentially
   * consistent store waits for every earlier store, so one per slot written stalls on each line in turn.
   */
  claimHeld(): number {
    const r = this.ring;
    const base = this.pendingHead === undefined ? Atomics.load(r.words, RING.head) >>> 0 : this.pendingHead >>> 0;
    const head = (base + this.heldSlots) >>> 0;
    if ((head - this.tailSeen) >>> 0 >= r.capacity) {
      this.tailSeen = Atomics.load(r.words, RING.tail) >>> 0;
      if ((head - this.tailSeen) >>> 0 >= r.capacity) return -1;
    }
    this.heldSlots++;
    return r.slotAt(head);
  }

  /** Publishes the held slots' seqs in claim order (head for observers at flushHead). */
  releaseHeld(): void {
    const n = this.heldSlots;
    if (n === 0) return;
    const r = this.ring;
    let i = this.pendingHead === undefined ? Atomics.load(r.words, RING.head) >>> 0 : this.pendingHead >>> 0;
    for (let k = 0; k < n; k++) {
      i = (i + 1) >>> 0;
      Atomics.store(r.i32, (r.slotAt(i - 1) + SLOT.seq) >> 2, i | 0);
    }
    this.heldSlots = 0;
    this.pendingHead = i;
  }

  /** Single producer: the slot at head, if free. Call publish(slot) after writing it. */
  claim(): number {
    const r = this.ring;
    if (this.heldSlots !== 0) this.releaseHeld();
    const head = this.pendingHead === undefined ? Atomics.load(r.words, RING.head) >>> 0 : this.pendingHead >>> 0;
    if ((head - this.tailSeen) >>> 0 >= r.capacity) {
      // Re-read the consumer's line only when the cached tail says full: it is a cross-core (or PCIe) read.
      this.tailSeen = Atomics.load(r.words, RING.tail) >>> 0;
      if ((head - this.tailSeen) >>> 0 >= r.capacity) return -1;
    }
    this.index = head;
    return r.slotAt(head);
  }

  /** Single producer: publish the slot of the last claim (seq, then head for observers). */
  publish(slot: number): void {
    const next = (this.index + 1) | 0;
    Atomics.store(this.ring.i32, (slot + SLOT.seq) >> 2, next);
    Atomics.store(this.ring.words, RING.head, next);
    this.pendingHead = undefined;
  }

  /**
   * Single producer, in a batch: publishes the slot's seq only (what the consumer waits on) and moves
   * head locally; call flushHead() once after the batch so observers (depth, idle) see it. One
   * sequentially consistent store a message instead of two (each drains the store buffer on x86).
   */
  publishSeq(slot: number): void {
    const next = (this.index + 1) | 0;
    Atomics.store(this.ring.i32, (slot + SLOT.seq) >> 2, next);
    this.pendingHead = next;
  }

  /**
   * Single producer, chunked: how many slots from head on are free, up to `want`. The consumer's tail
   * (a cross-core, or PCIe, read) is loaded at most once, only when the cached one shows fewer than
   * `want`. Then write the slots in order with claimNext / publishReserved, and flushHead once.
   */
  reserve(want: number): number {
    const r = this.ring;
    if (this.heldSlots !== 0) this.releaseHeld();
    const head = this.pendingHead === undefined ? Atomics.load(r.words, RING.head) >>> 0 : this.pendingHead >>> 0;
    this.index = head;
    let free = r.capacity - ((head - this.tailSeen) >>> 0);
    if (free < want) {
      this.tailSeen = Atomics.load(r.words, RING.tail) >>> 0;
      free = r.capacity - ((head - this.tailSeen) >>> 0);
    }
    return free < want ? free : want;
  }

  /** After reserve: the next reserved slot (no check: the caller writes at most what reserve granted). */
  claimNext(): number {
    return this.ring.slotAt(this.index);
  }

  /** Publishes the slot of claimNext: its seq (what the consumer waits on); head at flushHead. */
  publishReserved(slot: number): void {
    const next = (this.index + 1) | 0;
    Atomics.store(this.ring.i32, (slot + SLOT.seq) >> 2, next);
    this.index = next >>> 0;
    this.pendingHead = next;
  }

  /** The index after the last slot this producer wrote (held ones included): moves when it writes. */
  position(): number {
    const base =
      this.pendingHead === undefined ? Atomics.load(this.ring.words, RING.head) >>> 0 : this.pendingHead >>> 0;
    return (base + this.heldSlots) >>> 0;
  }

  /**
   * Messages this producer wrote that the consumer has not released: Ring.depth() as the producer sees
   * it, counting what it holds or has not yet flushed into head (Ring.depth alone would then lag).
   */
  depth(): number {
    const r = this.ring;
    const base = this.pendingHead === undefined ? Atomics.load(r.words, RING.head) >>> 0 : this.pendingHead >>> 0;
    return (base + this.heldSlots - (Atomics.load(r.words, RING.tail) >>> 0)) >>> 0;
  }

  /** After publishSeq calls: head for observers. */
  flushHead(): void {
    if (this.heldSlots !== 0) this.releaseHeld();
    if (this.pendingHead === undefined) return;
    Atomics.store(this.ring.words, RING.head, this.pendingHead);
    this.pendingHead = undefined;
  }

  /**
   * Several CPU producers: reserve an index with CAS, never past a full ring, so nobody waits while
   * holding one. The slot must then be written and published with publishShared without fail.
   */
  claimShared(): number {
    const r = this.ring;
    for (;;) {
      const head = Atomics.load(r.words, RING.head) >>> 0;
      if ((head - this.tailSeen) >>> 0 >= r.capacity) {
        this.tailSeen = Atomics.load(r.words, RING.tail) >>> 0;
        if ((head - this.tailSeen) >>> 0 >= r.capacity) return -1;
      }
      if (Atomics.compareExchange(r.words, RING.head, head | 0, (head + 1) | 0) === (head | 0)) {
        this.index = head;
        return r.slotAt(head);
      }
    }
  }

  publishShared(slot: number): void {
    Atomics.store(this.ring.i32, (slot + SLOT.seq) >> 2, (this.index + 1) | 0);
  }

  /** True when the consumer said it is about to sleep on its doorbell. */
  consumerParked(): boolean {
    return Atomics.load(this.ring.words, RING.parked) !== 0;
  }
}

export class RingConsumer {
  readonly ring: Ring;
  private tail: number;

  constructor(ring: Ring) {
    this.ring = ring;
    this.tail = Atomics.load(ring.words, RING.tail) >>> 0;
  }

  /** Byte offset of the oldest published slot, or -1 when none is ready. */
  peek(): number {
    const r = this.ring;
    const slot = r.slotAt(this.tail);
    return Atomics.load(r.i32, (slot + SLOT.seq) >> 2) === ((this.tail + 1) | 0) ? slot : -1;
  }

  /** Frees the slot returned by peek(); its bytes must not be read afterwards. */
  release(): void {
    this.tail = (this.tail + 1) >>> 0;
    Atomics.store(this.ring.words, RING.tail, this.tail | 0);
  }

  /** Frees the slot returned by peek() without telling the producer yet (publishTail does, once for many). */
  skip(): void {
    this.tail = (this.tail + 1) >>> 0;
  }

  /** Tells the producer every slot freed so far. */
  publishTail(): void {
    Atomics.store(this.ring.words, RING.tail, this.tail | 0);
  }

  setParked(parked: boolean): void {
    Atomics.store(this.ring.words, RING.parked, parked ? 1 : 0);
  }
}
