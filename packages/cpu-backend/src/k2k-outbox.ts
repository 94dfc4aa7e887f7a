import { Deque, RING, Ring, RingProducer, SLOT } from '@ringgrain/core/backend';
import { OVERFLOW_WORD, overflowWords, wakeIfParked, type PeerInfo } from './memory.ts';

/**
 * A lane's K2K sending side (dispatcher.ts holds one): the kernels it may send to, the outboxes that
 * gather messages for other threads' lanes until the step's end, and the overflow queues of messages
 * waiting for room in a full target ring (in order, counted in the target's figures). The Dispatcher
 * checks and encodes a send; this writes it.
 */

/**
 * K2K messages for a lane of another thread gathered before they are written to its ring as one batch
 * (the step's end writes what is gathered, whatever the count). Each message written one by one cost a
 * CAS on the target ring's head and a load of its consumer's flag, both on lines the other core had just
 * written: on the 2-core machine a message cost twice the CPU with 2 threads (half the sends crossing)
 * as with 1. One CAS claims the batch; the slots are written in order, each published by its seq.
 */
const OUTBOX_SLOTS = 32;

/** One lane of a K2K target kernel, as this sender sees it. */
export interface PeerLaneEnd {
  readonly ring: Ring;
  readonly producer: RingProducer;
  /** The word its consumer sleeps on, and the consumer's parked flag (-1: a consumer that never parks). */
  readonly doorbell: Int32Array;
  readonly doorbellIndex: number;
  readonly parkedIndex: number;
  /** Messages waiting for room in the lane's K2K ring: each the slot image as 32-bit words (seq first). */
  readonly overflow: Deque<Int32Array>;
  /** The peer's overflow figures (Peer.stats). */
  readonly stats: Int32Array;
  /** Messages gathered for a lane another thread consumes (undefined: this thread's own lane, written at once). */
  readonly outbox: Outbox | undefined;
  /** The ring's tail as last read (batch claims re-read it only when it says full). */
  tailSeen: number;
  /**
   * The ring's head as this sender last saw it (its own claim, or what a failed claim returned): the batch
   * claim's first guess, so a claim is one CAS on the head's line (flushOutbox), not a load and then a CAS.
   */
  headSeen: number;
}

/**
 * Slot images gathered for one target lane, `stride` words apart (seq first, not written). The images'
 * memory is taken on the first send to that lane: a dispatcher has a box for every other thread's lane of
 * every kernel, and most pairs of kernels never talk.
 */
class Outbox {
  words = new Int32Array(0);
  readonly lengths = new Int32Array(OUTBOX_SLOTS);
  count = 0;
  constructor(readonly stride: number) {}
}

export interface Peer {
  readonly buffer: SharedArrayBuffer;
  readonly lanes: readonly PeerLaneEnd[];
  /** The peer's overflow figures (memory.ts OVERFLOW_WORD), shared by every sender to it. */
  readonly stats: Int32Array;
}

// K2K copies a finished slot minus its seq word, which publishShared writes last.
if (SLOT.seq !== 0) throw new Error('protocol: K2K copy expects seq to be the first slot word');

export class K2KOut {
  peers = new Map<number, Peer>();
  /** Target lanes whose outbox holds messages, in the order they got their first. */
  private readonly boxed: PeerLaneEnd[] = [];
  /** Messages this lane holds in overflow queues (for full target rings). */
  pending = 0;

  constructor(
    /**
     * The lane the owning dispatcher consumes: in the pool, also its thread (lane i of every kernel runs on thread i).
     */
    private readonly lane: number,
    private readonly slotSize: number,
    /** The word (heldBy + lane) of a target's overflow figures where this thread counts what it holds for it. */
    private readonly heldWord: number,
    /** The owning lane's counters: messages that can never be delivered count there as received back and rejected. */
    private readonly counts: { received: number; k2kReceived: number; rejected: number },
  ) {}

  /** The kernels this lane may send to (a new list from the host: relaunches, new classes). */
  setPeers(peers: readonly PeerInfo[]): void {
    // Gathered messages join their lanes' overflow queues first (in order): those follow the peer below.
    this.spillOutboxes();
    const next = new Map<number, Peer>();
    for (const [id, old] of this.peers) {
      const still = peers.find((p) => p.grainId === id);
      if (still && still.lanes.length === old.lanes.length) continue;
      // The target kernel went away with messages still waiting here: do not lose them quietly.
      // (Relaunched with as many lanes, it gets them: a key's lane is the same.)
      this.returnHeld(old);
    }
    for (const p of peers) {
      const old = this.peers.get(p.grainId);
      if (old && old.buffer === p.sab) {
        next.set(p.grainId, old);
        continue;
      }
      const stats = new Int32Array(p.sab, p.overflowOffset, overflowWords(p.lanes.length));
      next.set(p.grainId, {
        buffer: p.sab,
        stats,
        lanes: p.lanes.map((l, i) => {
          const ring = new Ring(p.sab, l.k2kOffset);
          return {
            ring,
            producer: new RingProducer(ring),
            doorbell: new Int32Array(l.doorbell.buffer),
            doorbellIndex: l.doorbell.index,
            parkedIndex: l.doorbell.parked ?? -1,
            overflow: old && old.lanes.length === p.lanes.length ? old.lanes[i]!.overflow : new Deque<Int32Array>(),
            stats,
            // Lane i of every kernel runs on pool thread i: only this dispatcher's own lane index is this thread.
            outbox: i === this.lane ? undefined : new Outbox(Math.max(ring.slotSize, this.slotSize) >> 2),
            tailSeen: Atomics.load(ring.words, RING.tail) >>> 0,
            headSeen: Atomics.load(ring.words, RING.head) >>> 0,
          };
        }),
      });
    }
    this.peers = next;
  }

  /**
   * A finished slot image (`words` words of `src` from word `at`, seq first) for `lane`: written at once
   * to this thread's own lane, gathered in the outbox for another thread's, or queued behind what already
   * waits for room, in order.
   */
  send(lane: PeerLaneEnd, src: Int32Array, at: number, words: number): void {
    if (lane.overflow.length === 0) {
      const box = lane.outbox;
      if (box === undefined) {
        if (this.enqueue(lane, src, at, words)) return;
      } else {
        // Another thread's lane: gathered, written with the rest at the step's end (or when the box is full).
        if (box.count === 0) {
          this.boxed.push(lane);
          if (box.words.length === 0) box.words = new Int32Array(OUTBOX_SLOTS * box.stride);
        }
        const dst = box.words;
        const d0 = box.count * box.stride;
        for (let w = 1; w < words; w++) dst[d0 + w] = src[at + w]!;
        box.lengths[box.count++] = words;
        if (box.count === OUTBOX_SLOTS) this.flushOutbox(lane);
        return;
      }
    }
    this.hold(lane, src.slice(at, at + words));
  }

  /** The step's end: gathered messages written, held overflow retried. */
  flush(): void {
    this.flushOutboxes();
    if (this.pending) this.flushOverflow();
  }

  /** STOP: what still waits for room in a target's ring goes nowhere now (counted, see returnHeld). */
  returnAll(): void {
    if (this.pending) for (const peer of this.peers.values()) this.returnHeld(peer);
  }

  /**
   * A message that waits in the lane's overflow queue (in order) until its ring has room; counted in the peer's
   * figures.
   */
  private hold(lane: PeerLaneEnd, image: Int32Array): void {
    lane.overflow.push(image);
    this.pending++;
    const stats = lane.stats;
    const used = Atomics.add(stats, OVERFLOW_WORD.inUse, 1) + 1;
    Atomics.add(stats, this.heldWord, 1);
    Atomics.add(stats, OVERFLOW_WORD.overflowed, 1);
    for (
      let hw = Atomics.load(stats, OVERFLOW_WORD.highWater);
      used > hw;
      hw = Atomics.load(stats, OVERFLOW_WORD.highWater)
    ) {
      if (Atomics.compareExchange(stats, OVERFLOW_WORD.highWater, hw, used) === hw) break;
    }
  }

  /** Every gathered message into its lane's K2K ring (the step's end). */
  flushOutboxes(): void {
    if (this.boxed.length === 0) return;
    const boxed = this.boxed;
    // flushOutbox removes the lane from `boxed` only when it empties the box; it always does.
    for (let i = 0; i < boxed.length; i++) this.flushOutbox(boxed[i]!, false);
    boxed.length = 0;
  }

  /**
   * Writes a lane's gathered messages into its K2K ring: one CAS claims as many slots as the ring has
   * free (up to all of them), each slot is copied and published by its seq, and the consumer is woken
   * once if it parked. What does not fit waits in the overflow queue, in order.
   *
   * The CAS goes first, on the head this sender saw last: a claim that loaded the head and then CASed it
   * made two transfers of that line (a shared copy, then ownership), and in a chain across threads
   * (issue 37) each hop's sender differs from the last, so the line comes from another core every time.
   * A stale guess fails and returns the head as it is, which the next try uses.
   */
  private flushOutbox(lane: PeerLaneEnd, unlist = true): void {
    const box = lane.outbox!;
    const n = box.count;
    box.count = 0;
    if (unlist) {
      const at = this.boxed.indexOf(lane);
      if (at >= 0) this.boxed.splice(at, 1);
    }
    if (n === 0) return;
    const ring = lane.ring;
    const hw = ring.words;
    const cap = ring.capacity;
    let head = lane.headSeen;
    let k = 0;
    for (;;) {
      let free = cap - ((head - lane.tailSeen) >>> 0);
      if (free < n) {
        // A cross-core read of the consumer's line: only when the cached tail says the batch does not fit.
        lane.tailSeen = Atomics.load(hw, RING.tail) >>> 0;
        free = cap - ((head - lane.tailSeen) >>> 0);
      }
      k = Math.min(n, free);
      if (k <= 0) {
        // Full as this guess shows it, or a guess so old it is behind the tail (free < 0): the head itself.
        const now = Atomics.load(hw, RING.head) >>> 0;
        if (now !== head) {
          head = now;
          continue;
        }
        k = 0;
        break;
      }
      const got = Atomics.compareExchange(hw, RING.head, head | 0, (head + k) | 0) >>> 0;
      if (got === head) break;
      head = got;
    }
    lane.headSeen = (head + k) >>> 0;
    const dst = ring.i32;
    const src = box.words;
    const stride = box.stride;
    for (let j = 0; j < k; j++) {
      const d0 = ring.slotAt(head + j) >> 2;
      const s0 = j * stride;
      const len = box.lengths[j]!;
      for (let w = 1; w < len; w++) dst[d0 + w] = src[s0 + w]!;
      Atomics.store(dst, d0 + (SLOT.seq >> 2), (head + j + 1) | 0);
    }
    if (k > 0 && lane.parkedIndex >= 0) wakeIfParked(lane.doorbell, lane.doorbellIndex, lane.parkedIndex);
    for (let j = k; j < n; j++) this.hold(lane, src.slice(j * stride, j * stride + box.lengths[j]!));
  }

  /**
   * K2K messages this lane holds for `peer` that will never reach it (the target kernel went away, or this
   * kernel stops): counted here as received back and rejected, so this kernel balances and K2K sent =
   * received in total (the target never counts them). The overflow queues are emptied.
   */
  private returnHeld(peer: Peer): void {
    for (const l of peer.lanes) {
      const n = l.overflow.length;
      if (n === 0) continue;
      this.counts.received += n;
      this.counts.k2kReceived += n;
      this.counts.rejected += n;
      this.pending -= n;
      Atomics.sub(peer.stats, OVERFLOW_WORD.inUse, n);
      Atomics.sub(peer.stats, this.heldWord, n);
      while (l.overflow.shift() !== undefined);
    }
  }

  /** Every gathered message into its lane's overflow queue, in order (the peer list is about to change). */
  private spillOutboxes(): void {
    for (const lane of this.boxed) {
      const box = lane.outbox!;
      for (let j = 0; j < box.count; j++)
        this.hold(lane, box.words.slice(j * box.stride, j * box.stride + box.lengths[j]!));
      box.count = 0;
    }
    this.boxed.length = 0;
  }

  /**
   * A slot image (`n` words of `src` from word `at`, seq first) copied word by word into the lane's K2K
   * ring: no view objects on the send path. Slots are 16-byte aligned; seq is written last, by publishShared.
   */
  private enqueue(lane: PeerLaneEnd, src: Int32Array, at: number, n: number): boolean {
    const slot = lane.producer.claimShared();
    if (slot < 0) return false;
    const dst = lane.ring.i32;
    const d0 = slot >> 2;
    for (let w = 1; w < n; w++) dst[d0 + w] = src[at + w]!;
    lane.producer.publishShared(slot);
    if (lane.parkedIndex >= 0) wakeIfParked(lane.doorbell, lane.doorbellIndex, lane.parkedIndex);
    return true;
  }

  private flushOverflow(): void {
    for (const peer of this.peers.values()) {
      for (const lane of peer.lanes) {
        while (lane.overflow.length) {
          const image = lane.overflow.peek()!;
          if (!this.enqueue(lane, image, 0, image.length)) break;
          lane.overflow.shift();
          this.pending--;
          Atomics.sub(peer.stats, OVERFLOW_WORD.inUse, 1);
          Atomics.sub(peer.stats, this.heldWord, 1);
        }
      }
    }
  }
}
