import {
  DecodeError,
  HOST_SENDER,
  IMAGE_AREA_EXTRA_WORD,
  IMAGE_AREA_RUNNING_WORD,
  type RingConsumer,
  SLOT,
  SLOT_HEADER_SIZE,
  SlotFlag,
  SlotReader,
  joinKey,
  readColumnImage,
  type ColumnImage,
  type GrainDef,
  type MethodDef,
} from '@ringgrain/core/backend';
import type { LaneReplies } from './lane-replies.ts';
import type { LaneTurns, TurnCounts } from './lane-turns.ts';
import { IMAGE_BUFFERS } from './memory.ts';

/** Messages taken from one ring before the loop looks at the other (host inbound, K2K): fairness, not protocol. */
export const DRAIN_BATCH = 64;

/** A lane's column-image area: header words (busy per buffer, IMAGE_AREA_EXTRA_WORD) and buffers. */
export interface LaneImages {
  readonly words: Int32Array;
  readonly buffers: readonly Uint8Array[];
}

/**
 * How a lane takes messages from a ring: in batches (decoded, the tail published once, then the turns in
 * ring order), one by one where the lane loads states (a message may have to wait for its actor's), and
 * column images (tellMany's rows) as that many turns.
 */
export class LaneIntake {
  private readonly reader = new SlotReader();
  /** drainBatch's taken messages, decoded (reused: no allocation per batch). */
  private readonly batch = {
    methodIds: new Uint32Array(DRAIN_BATCH),
    corrs: new Uint32Array(DRAIN_BATCH),
    times: new Float64Array(DRAIN_BATCH),
    keys: new Array<number | string>(DRAIN_BATCH).fill(0),
    msgs: new Array<unknown>(DRAIN_BATCH).fill(undefined),
    errors: new Array<string | undefined>(DRAIN_BATCH).fill(undefined),
  };
  /**
   * Per method: a function building row r's message from an image's columns as one object literal (one
   * shape, no per-field dispatch).
   */
  private readonly imageMessages = new Map<MethodDef, (cols: ReadonlyArray<ArrayLike<number>>, r: number) => unknown>();

  constructor(
    private readonly def: GrainDef,
    private readonly grainId: number,
    private readonly counts: TurnCounts,
    private readonly replies: LaneReplies,
    private readonly turns: LaneTurns,
    private readonly images: LaneImages | undefined,
    /** The lane loads states: messages are taken one by one. */
    private readonly oneByOne: boolean,
  ) {}

  /** Takes up to `max` messages from `consumer` and runs their turns; returns how many it took. */
  drain(consumer: RingConsumer, max: number): number {
    // A lane that loads states parks messages of actors it does not hold at take time: one by one.
    if (this.oneByOne) {
      let n = 0;
      while (n < max) {
        const slot = consumer.peek();
        if (slot < 0) break;
        this.turns.turn(consumer, slot);
        n++;
      }
      return n;
    }
    return this.drainBatch(consumer, max);
  }

  /**
   * Batch take: every published slot up to `max` is decoded (header and payload copied out) and skipped,
   * the ring's tail is published ONCE, then the turns run in ring order. Per message that saves a
   * sequentially consistent store to the line the producer polls when the ring is full (the store and
   * the line's trips between cores were a quarter of the lane's time draining tellMany). The tail is
   * published before any handler runs, as release() did one message at a time, so a lane that dies
   * mid-batch leaves the same account (taken = received; the host counts the unfinished as rejected).
   */
  private drainBatch(consumer: RingConsumer, max: number): number {
    const b = this.batch;
    const ring = consumer.ring;
    const dv = ring.dv;
    const def = this.def;
    const counts = this.counts;
    const fixedReads = this.turns.fixedReads;
    let n = 0;
    for (; n < max; n++) {
      const slot = consumer.peek();
      if (slot < 0) break;
      const methodId = dv.getUint32(slot + SLOT.method, true);
      const flags = dv.getUint32(slot + SLOT.flags, true);
      if (flags & SlotFlag.IMAGE) {
        // Its rows run after the messages taken before it, on their own (the next step takes what follows).
        if (n > 0) break;
        const buffer = dv.getUint32(slot + SLOT.keyLo, true);
        const rows = dv.getUint32(slot + SLOT.keyHi, true);
        const time = dv.getFloat64(slot + SLOT.time, true);
        // Taken in the same account as the tail (begin(resume) adds them): the rows beyond the slot first.
        if (this.images && rows > 0) Atomics.add(this.images.words, IMAGE_AREA_EXTRA_WORD, rows - 1);
        if (this.images && buffer < IMAGE_BUFFERS)
          Atomics.store(this.images.words, IMAGE_AREA_RUNNING_WORD, buffer + 1);
        consumer.skip();
        consumer.publishTail();
        return this.runImage(methodId, buffer, rows, time);
      }
      b.methodIds[n] = methodId;
      b.corrs[n] = dv.getUint32(slot + SLOT.corr, true);
      b.times[n] = dv.getFloat64(slot + SLOT.time, true);
      counts.received++;
      if (dv.getUint32(slot + SLOT.sender, true) !== HOST_SENDER) counts.k2kReceived++;
      const method = def.methods[methodId];
      try {
        if (!method)
          throw new DecodeError(`unknown method id ${methodId} (grain ${def.name} has ${def.methods.length})`);
        if (flags & SlotFlag.STRING_KEY) {
          if (def.keyKind !== 'string')
            throw new DecodeError(`grain ${def.name} has integer keys but got a string key`);
          b.keys[n] = this.reader.stringKey(ring, slot);
        } else {
          if (def.keyKind === 'string')
            throw new DecodeError(`grain ${def.name} has string keys but got an integer key`);
          b.keys[n] = joinKey(dv.getUint32(slot + SLOT.keyLo, true), dv.getUint32(slot + SLOT.keyHi, true));
        }
        // The host's fixed image is read at fixed offsets; any other payload through the general decoder.
        const length = dv.getUint32(slot + SLOT.length, true);
        const fixed = length <= ring.payloadCapacity ? fixedReads[methodId] : null;
        const msg = fixed ? fixed(ring.u8, dv, slot + SLOT_HEADER_SIZE, length) : undefined;
        b.msgs[n] = msg === undefined ? this.reader.payload(ring, slot, method.request) : msg;
        b.errors[n] = undefined;
      } catch (e) {
        b.msgs[n] = undefined;
        b.errors[n] = (e as Error).message;
      }
      consumer.skip();
    }
    if (n === 0) return 0;
    consumer.publishTail();
    this.replies.beginBatch();
    try {
      for (let i = 0; i < n; i++) {
        const methodId = b.methodIds[i]!;
        const error = b.errors[i];
        const msg = b.msgs[i];
        b.msgs[i] = undefined; // the batch holds no message past its turn
        if (error !== undefined) {
          counts.rejected++;
          this.replies.text(b.corrs[i]!, methodId, SlotFlag.REJECTED, error);
          continue;
        }
        this.turns.runTurn(def.methods[methodId]!, methodId, b.keys[i]!, msg, b.corrs[i]!, b.times[i]!);
      }
    } finally {
      this.replies.endBatch();
    }
    return n;
  }

  /**
   * A column image's rows (SlotFlag.IMAGE) as that many tells, in row order: decoded from the columns
   * (no msgpack), each a turn as a slot's would be (counters, handler errors as tellErrors). The buffer
   * goes back to the host after the last row. Returns the rows.
   */
  private runImage(methodId: number, buffer: number, rows: number, time: number): number {
    const counts = this.counts;
    const area = this.images;
    const def = this.def;
    counts.received += rows;
    let image: ColumnImage;
    const method = def.methods[methodId];
    try {
      if (!area || buffer >= area.buffers.length)
        throw new DecodeError(`image buffer ${buffer}: this lane has ${area ? area.buffers.length : 'no image area'}`);
      if (!method) throw new DecodeError(`unknown method id ${methodId} (grain ${def.name} has ${def.methods.length})`);
      image = readColumnImage(area.buffers[buffer]!);
      const names = method.request.fieldNames;
      if (
        image.rows !== rows ||
        image.method !== methodId ||
        image.grainId !== this.grainId ||
        image.columns.length !== names.length
      ) {
        throw new DecodeError(
          `image of ${image.rows} rows, method ${image.method}, ` +
            `grain ${image.grainId}, ${image.columns.length} columns does not match its slot (${rows} rows, ` +
            `method ${methodId}, grain ${this.grainId}, ${names.length} fields)`,
        );
      }
    } catch (e) {
      if (area && buffer < area.buffers.length) this.freeImage(buffer);
      counts.rejected += rows;
      this.replies.text(0, methodId, SlotFlag.REJECTED, `${rows} rows of a column image: ${(e as Error).message}`);
      return rows;
    }
    const cols = image.columns.map((c) => c.values);
    const make = this.imageMessage(method, image);
    const keys = image.keys;
    this.replies.beginBatch();
    try {
      for (let r = 0; r < rows; r++) {
        this.turns.runTurn(method, methodId, keys[r]!, make(cols, r), 0, time);
      }
    } finally {
      this.freeImage(buffer);
      this.replies.endBatch();
    }
    return rows;
  }

  /** Gives an image buffer back to the host (it packs the next image there). */
  freeImage(buffer: number): void {
    const w = this.images!.words;
    Atomics.store(w, IMAGE_AREA_RUNNING_WORD, 0);
    Atomics.store(w, buffer, 0);
  }

  private imageMessage(
    method: MethodDef,
    image: ColumnImage,
  ): (cols: ReadonlyArray<ArrayLike<number>>, r: number) => unknown {
    let make = this.imageMessages.get(method);
    if (!make) {
      // Field names go in as JSON string literals (never as code); bool columns hold 0/1 bytes.
      const props = method.request.fieldNames.map(
        (n, f) => `${JSON.stringify(n)}: ${image.columns[f]!.kind === 'bool' ? `c[${f}][r] !== 0` : `c[${f}][r]`}`,
      );
      make = new Function('c', 'r', `return { ${props.join(', ')} };`) as (
        cols: ReadonlyArray<ArrayLike<number>>,
        r: number,
      ) => unknown;
      this.imageMessages.set(method, make);
    }
    return make;
  }
}
