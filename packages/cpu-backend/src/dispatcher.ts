import {
  type RemoteSend,
  ClusterK2KUnsupportedError,
  OwnershipView,
  CONTROL,
  CONTROL_BLOCK_SIZE,
  DecodeError,
  HOST_SENDER,
  KernelState,
  RING,
  Ring,
  RingConsumer,
  RingProducer,
  SLOT,
  SLOT_HEADER_SIZE,
  fixedReader,
  fixedWriter,
  type FixedRead,
  type FixedWrite,
  SlotFlag,
  SlotReader,
  SlotWriter,
  describeSchema,
  joinKey,
  laneOfKey,
  splitKeyHi,
  splitKeyLo,
  type AnyGrainClass,
  type Forwarded,
  type GrainContext,
  type GrainDef,
  type KernelOptions,
  type MethodDef,
  HOOK_METHOD,
  KERNEL_RECORD,
  byName,
  nextDue,
  startArgs,
  type TimerStart,
  StateTableFullError,
  TURN_ERROR,
  type TurnErrorValue,
} from '@ringgrain/core';
import { TimerClockLane, type TimerClockInit } from './timer-clock.ts';
import { TimerTable } from './timer-table.ts';
import type { StateOp, StateOut } from './protocol.ts';
import { IMAGE_AREA_EXTRA_WORD, IMAGE_AREA_HEADER, IMAGE_AREA_RUNNING_WORD, LANE_GUARD, readColumnImage, type ColumnImage, type LaneReader } from '@ringgrain/core';
import { K2KTargetError } from './errors.ts';
import { replyMismatchText } from './reply-mismatch.ts';
import { IMAGE_BUFFERS, IMAGE_BUFFER_BYTES, OVERFLOW_WORD, overflowWords, type PeerInfo } from './memory.ts';
import { K2KOut } from './k2k-outbox.ts';
import { StateTable } from './state-table.ts';

/** Messages taken from one ring before the loop looks at the other (host inbound, K2K): fairness, not protocol. */
const DRAIN_BATCH = 64;



type HandlerFn = (state: unknown, msg: unknown, ctx: GrainContext) => unknown;

type HookFn = (state: unknown, ctx: GrainContext) => unknown;

export interface LoadedGrain {
  readonly def: GrainDef;
  readonly handlers: ReadonlyArray<HandlerFn>;
  readonly instance: object;
  /** The class's activation hooks, where it defines them. */
  readonly onActivate: HookFn | undefined;
  readonly onDeactivate: HookFn | undefined;
}

/** A lane's persistent-state mode (core PersistencePlan) and where it reports (the host's port, or a call). */
export interface LanePersistence {
  readonly load: boolean;
  readonly idleMs: number | undefined;
  readonly emit: (out: StateOut) => void;
  /** The lane reads stored states itself on an actor's first message (core PersistencePlan.laneLoad). */
  readonly laneLoad?: { readonly reader: LaneReader; readonly guard: Int32Array } | undefined;
}

/** Ticks run in one step before the lane looks at its rings again: fairness between ticks and messages. */
const TICK_BATCH = 4096;
/** runTurn's `held` when the caller did not look the actor's slot up. */
const UNKNOWN_SLOT = -2;
/** A tick's message: its method's request is the empty struct. */
const EMPTY_MSG = Object.freeze({});

/** States up to this size are compared before and after a turn (dirty only when changed); larger ones are marked dirty by every turn. */
const COMPARE_MAX = 4096;

/** One instance of a grain class and its handler methods by method id; `missing` is the error for a method with no handler. */
export function loadedGrain(cls: AnyGrainClass, missing: (method: string) => Error): LoadedGrain {
  const def = cls.grain as GrainDef;
  const instance = new (cls as unknown as new () => Record<string, unknown>)();
  const handlers = def.methods.map((m) => {
    const fn = instance[m.name];
    if (typeof fn !== 'function') throw missing(m.name);
    return fn as HandlerFn;
  });
  const hook = (name: string) => (typeof instance[name] === 'function' ? (instance[name] as HookFn) : undefined);
  return { def, handlers, instance, onActivate: hook('onActivate'), onDeactivate: hook('onDeactivate') };
}


const FORWARDED: Forwarded = Object.freeze({ __forwarded: true as const });

/**
 * A lane whose consumer (a pool thread) died: the messages it took from the lane's rings after its last
 * publication (the turn in flight among them) have an unknown outcome, and so do the K2K messages that
 * thread held for this kernel's full rings (its overflow queues went with it). Both are counted in `n` as
 * received and rejected, so the counters balance and K2K sent = received still holds. Used by the lane's
 * next consumer (Dispatcher.begin(resume)) and, where the lane is not restarted (its kernel faults), by the
 * host on the control block itself (CpuKernel.health).
 */
export function countLostOfDeadLane(
  n: { received: number; k2kReceived: number; rejected: number },
  inboundWords: Int32Array,
  k2kWords: Int32Array,
  imageWords: Int32Array | undefined,
  ownStats: Int32Array,
  heldWord: number,
): void {
  // Rings count every message ever taken (their tails): what the counters do not show was lost.
  const k2kTaken = Atomics.load(k2kWords, RING.tail) >>> 0;
  const imageExtra = imageWords ? Atomics.load(imageWords, IMAGE_AREA_EXTRA_WORD) >>> 0 : 0;
  const taken = ((Atomics.load(inboundWords, RING.tail) >>> 0) + k2kTaken + imageExtra) >>> 0;
  const lost = (taken - n.received) >>> 0;
  const lostK2k = (k2kTaken - n.k2kReceived) >>> 0;
  if (lost < 0x80000000) {
    n.received += lost;
    n.k2kReceived += lostK2k < 0x80000000 ? lostK2k : 0;
    n.rejected += lost;
  }
  const held = Atomics.exchange(ownStats, heldWord, 0);
  if (held > 0) {
    Atomics.sub(ownStats, OVERFLOW_WORD.inUse, held);
    n.received += held;
    n.k2kReceived += held;
    n.rejected += held;
  }
}

/**
 * One lane of a CPU ring kernel: the one consumer of that lane's rings, so every actor the lane hosts
 * (the keys core laneOfKey maps to it) runs one turn at a time and sees messages per sender in FIFO
 * order, without locks. A pool thread runs one Dispatcher per kernel lane it owns (`step`); the inline
 * backend runs them on the host thread (`runSlice`).
 */
export class Dispatcher {
  private readonly self: LoadedGrain;
  private readonly grainId: number;
  private readonly grainIds = new Map<string, number>();
  private readonly defsById: ReadonlyArray<GrainDef | undefined>;
  private readonly options: KernelOptions;
  private readonly control: Int32Array;
  private readonly inbound: RingConsumer;
  /** The lane's image area: header words (busy per buffer, IMAGE_AREA_EXTRA_WORD) and buffers. */
  private readonly images: { readonly words: Int32Array; readonly buffers: readonly Uint8Array[] } | undefined;
  private readonly k2k: RingConsumer;
  private readonly reply: RingProducer;
  private readonly replySignal: Int32Array;
  private readonly states: StateTable<number | string>;
  private readonly writer = new SlotWriter();
  private readonly reader = new SlotReader();
  private readonly scratch: Ring;
  private readonly scratchSlot: number;
  /** The lane this dispatcher consumes: in the pool, also the index of its thread (lane i of every kernel runs on thread i). */
  private readonly lane: number;
  /** The K2K sending side: peers, outboxes, overflow queues (k2k-outbox.ts). */
  private readonly out: K2KOut;
  /** In a cluster: per K2K target class by id, which of its keys this silo owns (others are refused: k2kSend). */
  private readonly ownership: ReadonlyArray<OwnershipView | undefined> | undefined;
  private readonly remoteSend: RemoteSend | undefined;
  private mode: number = KernelState.IDLE;
  private epochSeen = 0;
  private readonly counts = { received: 0, processed: 0, replied: 0, k2kSent: 0, k2kReceived: 0, handlerErrors: 0, rejected: 0, activations: 0 };
  private heartbeat = 0;
  /** This kernel's overflow figures, and the word (heldBy + lane) where this thread counts what it holds for any kernel. */
  private readonly ownStats: Int32Array;
  private readonly heldWord: number;
  /** Persistent state: messages of actors whose state the host is loading, in arrival order (slot images). */
  private readonly persist: LanePersistence | undefined;
  private readonly parked = new Map<number | string, Int32Array[]>();
  private toLoad: Array<number | string> = [];
  /** Actors this lane loaded from the store itself, not yet reported to the host (with their versions). */
  private laneLoaded: Array<number | string> = [];
  private laneVersions: number[] = [];
  private readonly ops: StateOp[] = [];
  private readonly replayRing: Ring;
  private readonly replaySlot: number;
  private readonly before: Uint8Array;
  /** Timers (the class declares some): the per-actor table and the lane's timer clock. */
  private readonly timers: TimerTable | undefined;
  private readonly timerClock: TimerClockLane | undefined;
  private ticks = 0;
  private tickErrors = 0;

  // The turn being run; ctx methods read these.
  private curKey: number | string = 0;
  private curTime = 0;
  private curCorr = 0;
  private curMethod: MethodDef | undefined;
  private readonly ctx: GrainContext;
  /** Per method id: its fixed-image reader (image-decode.ts), null where the request is not all scalars. */
  private readonly fixedReads: ReadonlyArray<FixedRead | null>;
  /** Replies published (by seq) in the running batch take and not yet signalled; -1 outside one. */
  private batchReplies = -1;
  /** drainBatch's taken messages, decoded (reused: no allocation per batch). */
  private readonly batch = {
    methodIds: new Uint32Array(DRAIN_BATCH),
    corrs: new Uint32Array(DRAIN_BATCH),
    times: new Float64Array(DRAIN_BATCH),
    keys: new Array<number | string>(DRAIN_BATCH).fill(0),
    msgs: new Array<unknown>(DRAIN_BATCH).fill(undefined),
    errors: new Array<string | undefined>(DRAIN_BATCH).fill(undefined),
  };

  constructor(args: {
    self: LoadedGrain;
    grainId: number;
    defsById: ReadonlyArray<GrainDef | undefined>;
    options: KernelOptions;
    sab: SharedArrayBuffer;
    controlOffset: number;
    /** The lane's column-image area (memory.ts IMAGE_BUFFERS of IMAGE_BUFFER_BYTES), when the kernel takes images. */
    imageOffset?: number | undefined;
    inboundOffset: number;
    replyOffset: number;
    k2kOffset: number;
    /** This kernel's overflow region (memory.ts OVERFLOW_WORD) and the lane this dispatcher consumes (= its pool thread). */
    overflowOffset: number;
    lane: number;
    lanes: number;
    replySignal: SharedArrayBuffer;
    peers: readonly PeerInfo[];
    persistence?: LanePersistence | undefined;
    /** The kernel's timer clock words (memory shared with the host), when the class declares timers. */
    timers?: TimerClockInit | undefined;
    /** In a cluster: per K2K target class by id, this silo's partition ownership (core cluster/ownership.ts). */
    ownership?: ReadonlyArray<SharedArrayBuffer | undefined> | undefined;
    /** In a cluster: the host's taker of K2K sends to keys another silo owns (core KernelPlan.remoteSend). */
    remoteSend?: RemoteSend | undefined;
  }) {
    this.self = args.self;
    this.fixedReads = args.self.def.methods.map((m) => fixedReader(m));
    this.grainId = args.grainId;
    this.defsById = args.defsById;
    args.defsById.forEach((d, i) => d && this.grainIds.set(d.name, i));
    this.options = args.options;
    this.control = new Int32Array(args.sab, args.controlOffset, CONTROL_BLOCK_SIZE >> 2);
    this.inbound = new RingConsumer(new Ring(args.sab, args.inboundOffset));
    if (args.imageOffset !== undefined) {
      const at = args.imageOffset;
      this.images = {
        words: new Int32Array(args.sab, at, IMAGE_AREA_HEADER >> 2),
        buffers: Array.from({ length: IMAGE_BUFFERS }, (_, i) => new Uint8Array(args.sab, at + IMAGE_AREA_HEADER + i * IMAGE_BUFFER_BYTES, IMAGE_BUFFER_BYTES)),
      };
    }
    this.k2k = new RingConsumer(new Ring(args.sab, args.k2kOffset));
    this.reply = new RingProducer(new Ring(args.sab, args.replyOffset));
    this.ownStats = new Int32Array(args.sab, args.overflowOffset, overflowWords(args.lanes));
    this.heldWord = OVERFLOW_WORD.heldBy + args.lane;
    this.lane = args.lane;
    this.replySignal = new Int32Array(args.replySignal);
    this.states = new StateTable(args.self.def.name, args.self.def.state, args.options.maxActors);
    this.scratch = Ring.format(new SharedArrayBuffer(2 * args.options.slotSize + 512), 0, 2, args.options.slotSize);
    this.scratchSlot = this.scratch.slotAt(0);
    this.persist = args.persistence;
    this.replayRing = Ring.format(new SharedArrayBuffer(2 * args.options.slotSize + 512), 0, 2, args.options.slotSize);
    this.replaySlot = this.replayRing.slotAt(0);
    this.before = new Uint8Array(args.persistence?.load ? Math.min(this.states.size0, COMPARE_MAX) : 0);
    this.out = new K2KOut(args.lane, args.options.slotSize, this.heldWord, this.counts);
    this.ownership = args.ownership?.map((b) => (b ? new OwnershipView(b) : undefined));
    this.remoteSend = args.remoteSend;
    this.setPeers(args.peers);
    const nTimers = args.self.def.timers.length;
    this.timers = args.timers && nTimers ? new TimerTable(nTimers) : undefined;
    this.timerClock = this.timers && args.timers ? new TimerClockLane(args.timers, args.lane) : undefined;
    const d = this;
    this.ctx = {
      get key() {
        return d.curKey;
      },
      now: () => d.curTime,
      send: (grain, key, method, payload) => {
        d.k2kSend(grain, key as number | string, method as string, payload, 0);
      },
      forward: (grain, key, method, payload) => {
        d.k2kSend(grain, key as number | string, method as string, payload, d.curCorr);
        d.curCorr = 0; // the reply obligation moved on
        return FORWARDED;
      },
      startTimer: (name, opts) => d.startTimer(name, opts),
      stopTimer: (name) => d.stopTimer(name),
      setReminder: (name, opts) => d.reminder('set', name, opts),
      clearReminder: (name) => d.reminder('clear', name, undefined),
    };
  }

  setPeers(peers: readonly PeerInfo[]): void {
    this.out.setPeers(peers);
  }

  inspect(key: number | string): unknown {
    return this.states.snapshot(key);
  }

  /** Reads control-plane messages now (the owner sets it: a pool thread reads its port). */
  pollControl: () => void = () => {};

  /**
   * Once, before the first step: counters published, IDLE observed (the launch handshake). `resume`: the
   * lane's previous consumer (a pool thread) died and this one takes over its rings mid-run. Its counters
   * carry on from the control block; the messages it took from the rings after its last publication
   * (the turn in flight among them) have an unknown outcome: counted as received and rejected, so the
   * counters still balance (the host failed the asks that waited on the lane). The lane's request is
   * read and acknowledged by the first step.
   */
  begin(resume = false): void {
    if (resume) {
      const c = this.control;
      const n = this.counts;
      for (const name of Object.keys(n) as Array<keyof typeof n>) n[name] = Atomics.load(c, CONTROL[name]) >>> 0;
      this.heartbeat = Atomics.load(c, CONTROL.heartbeat) >>> 0;
      // The image the dead thread was running was taken from the ring (its rest counts as lost): free its buffer.
      const running = this.images ? Atomics.load(this.images.words, IMAGE_AREA_RUNNING_WORD) : 0;
      if (running > 0) this.freeImage(running - 1);
      countLostOfDeadLane(n, this.inbound.ring.words, this.k2k.ring.words, this.images?.words, this.ownStats, this.heldWord);
      this.publishCounters();
      return;
    }
    this.publishCounters();
    Atomics.store(this.control, CONTROL.observed, KernelState.IDLE);
  }

  /** Whether a step would find something to do (a message, a host request, held K2K overflow). */
  hasWork(): boolean {
    return this.out.pending !== 0 || this.hasInput();
  }

  /** Whether a step would find something to do besides retrying held K2K overflow. */
  hasInput(): boolean {
    if ((Atomics.load(this.control, CONTROL.requestEpoch) >>> 0) !== this.epochSeen || this.ops.length) return true;
    if ((Atomics.load(this.control, CONTROL.publishRequest) >>> 0) !== this.publishSeen) return true;
    return this.mode === KernelState.ACTIVE && (this.inbound.peek() >= 0 || this.k2k.peek() >= 0 || this.timerWaitMs() === 0);
  }

  /** K2K messages this lane holds for full target rings (the owner must not sleep long while any wait). */
  get holdsOverflow(): boolean {
    return this.out.pending !== 0;
  }

  /** How many K2K messages this lane holds for full target rings. */
  get heldOverflow(): number {
    return this.out.pending;
  }

  /**
   * One round: up to DRAIN_BATCH messages from each ring, held K2K overflow retried, counters published,
   * the host's request applied. Returns the messages taken, or -1 once STOP was acknowledged (the lane
   * is done). Never blocks, except on a full reply ring (backpressure from the host).
   */
  step(): number {
    let did = 0;
    if (this.ops.length) did += this.serviceOps();
    if (this.mode === KernelState.ACTIVE) {
      did += this.drain(this.inbound, DRAIN_BATCH);
      did += this.drain(this.k2k, DRAIN_BATCH);
      if (this.timers && (this.timers.armed > 0 || this.timerClock!.pending)) did += this.runTimers();
    }
    if (this.toLoad.length) {
      this.persist!.emit({ out: 'load', keys: this.toLoad });
      this.toLoad = [];
    }
    if (this.laneLoaded.length) this.reportLaneLoaded();
    this.out.flush();
    if (did > 0) this.heartbeat++;
    this.publishCounters();
    if (this.checkControl()) {
      // STOP: what still waits for room in a target's ring goes nowhere now (this lane's thread drops it).
      this.out.returnAll();
      this.publishCounters();
      Atomics.store(this.control, CONTROL.observed, KernelState.STOPPED);
      Atomics.store(this.control, CONTROL.ackEpoch, this.epochSeen | 0);
      return -1;
    }
    return did;
  }

  /**
   * For a consumer that shares its thread (the inline backend): steps until idle or `budgetMs` passed;
   * 'stopped' after STOP was acknowledged. Never blocks.
   */
  runSlice(budgetMs: number): 'stopped' | 'busy' | 'idle' {
    const t0 = performance.now();
    for (;;) {
      const did = this.step();
      if (did < 0) return 'stopped';
      if (did === 0) return this.out.pending ? 'busy' : 'idle';
      if (performance.now() - t0 > budgetMs) return 'busy';
    }
  }

  /** Applies a new host request; true when the loop must end. */
  private checkControl(): boolean {
    const c = this.control;
    const epoch = Atomics.load(c, CONTROL.requestEpoch) >>> 0;
    if (epoch === this.epochSeen) return false;
    const req = Atomics.load(c, CONTROL.requested);
    this.epochSeen = epoch;
    if (req === KernelState.STOP) return true;
    if (req === KernelState.ACTIVE || req === KernelState.PAUSED) this.mode = req;
    Atomics.store(c, CONTROL.observed, this.mode);
    Atomics.store(c, CONTROL.ackEpoch, epoch | 0);
    return false;
  }

  private publishCounters(): void {
    const c = this.control;
    const n = this.counts;
    // A publication requested by the host's quiet barrier (system.idle) is one that starts after the
    // request was read: this lane publishes between turns, so every turn begun before then is counted.
    const asked = Atomics.load(c, CONTROL.publishRequest) >>> 0;
    // Every counter only grows: an unchanged sum is unchanged counters, and a pass that found nothing
    // writes nothing to the control block (a line the host reads).
    const sum = n.received + n.processed + n.replied + n.k2kSent + n.k2kReceived + n.handlerErrors + n.rejected + n.activations + this.heartbeat;
    if (sum === this.publishedSum && asked === this.publishSeen) return;
    this.publishedSum = sum;
    // What was received and sent first, what was finished last (an Atomics store orders the plain ones
    // before it): a reader that sees a turn finished sees the K2K messages it sent counted, so the host's
    // quiet barrier (system.idle) never balances while one is in flight.
    c[CONTROL.received] = n.received;
    c[CONTROL.k2kSent] = n.k2kSent;
    c[CONTROL.k2kReceived] = n.k2kReceived;
    c[CONTROL.replied] = n.replied;
    c[CONTROL.handlerErrors] = n.handlerErrors;
    c[CONTROL.activations] = n.activations;
    Atomics.store(c, CONTROL.rejected, n.rejected);
    Atomics.store(c, CONTROL.processed, n.processed);
    Atomics.store(c, CONTROL.heartbeat, this.heartbeat | 0);
    if (asked !== this.publishSeen) {
      Atomics.store(c, CONTROL.publishEpoch, asked | 0);
      this.publishSeen = asked;
    }
  }

  /** The last publication request answered (publishCounters). */
  private publishSeen = 0;
  /** The counters' sum at the last publication (-1: none yet). */
  private publishedSum = -1;

  private drain(consumer: RingConsumer, max: number): number {
    // A lane that loads states parks messages of actors it does not hold at take time: one by one.
    if (this.persist?.load) {
      let n = 0;
      while (n < max) {
        const slot = consumer.peek();
        if (slot < 0) break;
        this.turn(consumer, slot);
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
    const def = this.self.def;
    const counts = this.counts;
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
        if (this.images && buffer < IMAGE_BUFFERS) Atomics.store(this.images.words, IMAGE_AREA_RUNNING_WORD, buffer + 1);
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
        if (!method) throw new DecodeError(`unknown method id ${methodId} (grain ${def.name} has ${def.methods.length})`);
        if (flags & SlotFlag.STRING_KEY) {
          if (def.keyKind !== 'string') throw new DecodeError(`grain ${def.name} has integer keys but got a string key`);
          b.keys[n] = this.reader.stringKey(ring, slot);
        } else {
          if (def.keyKind === 'string') throw new DecodeError(`grain ${def.name} has string keys but got an integer key`);
          b.keys[n] = joinKey(dv.getUint32(slot + SLOT.keyLo, true), dv.getUint32(slot + SLOT.keyHi, true));
        }
        // The host's fixed image is read at fixed offsets; any other payload through the general decoder.
        const length = dv.getUint32(slot + SLOT.length, true);
        const fixed = length <= ring.payloadCapacity ? this.fixedReads[methodId] : null;
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
    this.batchReplies = 0;
    try {
      for (let i = 0; i < n; i++) {
        const methodId = b.methodIds[i]!;
        const error = b.errors[i];
        const msg = b.msgs[i];
        b.msgs[i] = undefined; // the batch holds no message past its turn
        if (error !== undefined) {
          counts.rejected++;
          this.replyText(b.corrs[i]!, methodId, SlotFlag.REJECTED, error);
          continue;
        }
        this.runTurn(def.methods[methodId]!, methodId, b.keys[i]!, msg, b.corrs[i]!, b.times[i]!);
      }
    } finally {
      const replies = this.batchReplies;
      this.batchReplies = -1;
      if (replies > 0) {
        this.reply.flushHead();
        this.signalHost();
      }
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
    const def = this.self.def;
    counts.received += rows;
    let image: ColumnImage;
    const method = def.methods[methodId];
    try {
      if (!area || buffer >= area.buffers.length) throw new DecodeError(`image buffer ${buffer}: this lane has ${area ? area.buffers.length : 'no image area'}`);
      if (!method) throw new DecodeError(`unknown method id ${methodId} (grain ${def.name} has ${def.methods.length})`);
      image = readColumnImage(area.buffers[buffer]!);
      const names = method.request.fieldNames;
      if (image.rows !== rows || image.method !== methodId || image.grainId !== this.grainId || image.columns.length !== names.length) {
        throw new DecodeError(`image of ${image.rows} rows, method ${image.method}, grain ${image.grainId}, ${image.columns.length} columns does not match its slot (${rows} rows, method ${methodId}, grain ${this.grainId}, ${names.length} fields)`);
      }
    } catch (e) {
      if (area && buffer < area.buffers.length) this.freeImage(buffer);
      counts.rejected += rows;
      this.replyText(0, methodId, SlotFlag.REJECTED, `${rows} rows of a column image: ${(e as Error).message}`);
      return rows;
    }
    const cols = image.columns.map((c) => c.values);
    const make = this.imageMessage(method, image);
    const keys = image.keys;
    this.batchReplies = 0;
    try {
      for (let r = 0; r < rows; r++) {
        this.runTurn(method, methodId, keys[r]!, make(cols, r), 0, time);
      }
    } finally {
      this.freeImage(buffer);
      const replies = this.batchReplies;
      this.batchReplies = -1;
      if (replies > 0) {
        this.reply.flushHead();
        this.signalHost();
      }
    }
    return rows;
  }

  /** Gives an image buffer back to the host (it packs the next image there). */
  private freeImage(buffer: number): void {
    const w = this.images!.words;
    Atomics.store(w, IMAGE_AREA_RUNNING_WORD, 0);
    Atomics.store(w, buffer, 0);
  }

  /** Per method: a function building row r's message from an image's columns as one object literal (one shape, no per-field dispatch). */
  private readonly imageMessages = new Map<MethodDef, (cols: ReadonlyArray<ArrayLike<number>>, r: number) => unknown>();

  private imageMessage(method: MethodDef, image: ColumnImage): (cols: ReadonlyArray<ArrayLike<number>>, r: number) => unknown {
    let make = this.imageMessages.get(method);
    if (!make) {
      // Field names go in as JSON string literals (never as code); bool columns hold 0/1 bytes.
      const props = method.request.fieldNames.map((n, f) => `${JSON.stringify(n)}: ${image.columns[f]!.kind === 'bool' ? `c[${f}][r] !== 0` : `c[${f}][r]`}`);
      make = new Function('c', 'r', `return { ${props.join(', ')} };`) as (cols: ReadonlyArray<ArrayLike<number>>, r: number) => unknown;
      this.imageMessages.set(method, make);
    }
    return make;
  }

  /**
   * One message: decode, activate, run the handler, reply. The slot is released before the handler runs.
   * `consumer` undefined: a parked message replayed from `replayRing` (already counted as received).
   */
  private turn(consumer: RingConsumer | undefined, slot: number, ring: Ring = consumer!.ring): void {
    const dv = ring.dv;
    const methodId = dv.getUint32(slot + SLOT.method, true);
    const flags = dv.getUint32(slot + SLOT.flags, true);
    const corr = dv.getUint32(slot + SLOT.corr, true);
    const sender = dv.getUint32(slot + SLOT.sender, true);
    const time = dv.getFloat64(slot + SLOT.time, true);
    if (consumer) {
      this.counts.received++;
      if (sender !== HOST_SENDER) this.counts.k2kReceived++;
    }
    const def = this.self.def;
    const method = def.methods[methodId];
    let key: number | string;
    let msg: unknown;
    /** The stored state this lane read for an absent actor (null: none stored; false: not read here). */
    let loaded: Uint8Array | null | false = false;
    /** The actor's slot where this lane holds it (-1: absent; UNKNOWN_SLOT: not looked up, a lane that loads nothing). */
    let held = UNKNOWN_SLOT;
    try {
      if (!method) throw new DecodeError(`unknown method id ${methodId} (grain ${def.name} has ${def.methods.length})`);
      if (flags & SlotFlag.STRING_KEY) {
        if (def.keyKind !== 'string') throw new DecodeError(`grain ${def.name} has integer keys but got a string key`);
        key = this.reader.stringKey(ring, slot);
      } else {
        if (def.keyKind === 'string') throw new DecodeError(`grain ${def.name} has string keys but got an integer key`);
        key = joinKey(dv.getUint32(slot + SLOT.keyLo, true), dv.getUint32(slot + SLOT.keyHi, true));
      }
      if (this.persist?.load && (held = this.states.indexOf(key)) < 0 && (loaded = this.loadHere(key)) === false) {
        // Not held: its state comes from the host first. This message and every later one of the actor
        // wait here, in order, until the state is uploaded (install).
        let q = this.parked.get(key);
        if (!q) {
          this.parked.set(key, (q = []));
          this.toLoad.push(key);
        }
        q.push(ring.i32.slice(slot >> 2, (slot + this.options.slotSize) >> 2));
        consumer?.release();
        return;
      }
      // The host's fixed image at fixed offsets (as drainBatch reads it); any other payload through the general decoder.
      const length = dv.getUint32(slot + SLOT.length, true);
      const fixed = length <= ring.payloadCapacity ? this.fixedReads[methodId] : null;
      msg = fixed ? fixed(ring.u8, dv, slot + SLOT_HEADER_SIZE, length) : undefined;
      if (msg === undefined) msg = this.reader.payload(ring, slot, method.request);
    } catch (e) {
      consumer?.release();
      this.counts.rejected++;
      this.replyText(corr, methodId, SlotFlag.REJECTED, (e as Error).message);
      return;
    }
    consumer?.release();
    this.runTurn(method, methodId, key, msg, corr, time, loaded || undefined, held);
  }

  /**
   * A decoded message's turn: activate, run the handler, reply. Its slot is already released. `loaded`:
   * the stored state of an absent actor this lane read itself (loadHere). `held`: the actor's slot as the
   * caller just looked it up (-1: absent), so a turn costs one lookup of the key, or UNKNOWN_SLOT.
   */
  private runTurn(method: MethodDef, methodId: number, key: number | string, msg: unknown, corr: number, time: number, loaded?: Uint8Array, held = UNKNOWN_SLOT): void {
    this.curKey = key;
    this.curTime = time;
    this.curCorr = corr;
    this.curMethod = method;
    let result: unknown;
    const persist = this.persist;
    let index = -1;
    try {
      let state: unknown;
      if (persist === undefined) {
        // One lookup for a held actor (peek), the activation path only for a new one.
        state = this.states.peek(key);
        if (state === undefined) {
          state = this.states.get(key);
          this.counts.activations++;
          this.armDeclared(this.states.indexOf(key), time);
        }
      } else {
        index = held === UNKNOWN_SLOT ? this.states.indexOf(key) : held;
        if (index >= 0) state = this.states.viewOf(index);
        else {
          state = this.activateActor(key, loaded, time);
          // The hook may have sent, forwarded or failed: the message's own turn starts afresh.
          this.curKey = key;
          this.curTime = time;
          this.curCorr = corr;
          this.curMethod = method;
          index = this.states.indexOf(key);
        }
        this.states.touch(index, time);
        if (persist.load && this.before.length === this.states.size0) this.states.copyOut(index, this.before);
      }
      try {
        result = (this.self.handlers[methodId] as HandlerFn).call(this.self.instance, state, msg, this.ctx);
      } finally {
        if (index >= 0 && persist?.load) this.noteChange(index);
      }
    } catch (e) {
      if (e instanceof StateTableFullError) {
        // The runtime refused the actor, not the handler: its own error (code, hint) goes back, counted rejected.
        this.counts.rejected++;
        this.replyError(this.curCorr, methodId, SlotFlag.ERROR, TURN_ERROR.STATE_TABLE_FULL, [e.maxActors]);
        return;
      }
      this.counts.processed++;
      this.counts.handlerErrors++;
      this.replyText(this.curCorr, methodId, SlotFlag.ERROR, e instanceof Error ? e.message : String(e));
      return;
    }
    this.counts.processed++;
    if (this.curCorr === 0) return; // a tell, or an ask forwarded onwards
    if (result === FORWARDED) return;
    if (method.reply === undefined) {
      this.replyPayload(this.curCorr, method, undefined);
      return;
    }
    try {
      this.replyPayload(this.curCorr, method, result);
    } catch (e) {
      this.counts.handlerErrors++;
      this.replyText(this.curCorr, methodId, SlotFlag.ERROR, replyMismatchText(result, e));
    }
  }

  // ---- timers and reminders ------------------------------------------------------------------------

  /**
   * Milliseconds until this lane's next tick is due by its own clock (0: due now; Infinity: no timer
   * running, or the host's clock drives the timers and rings the lane when it publishes a time).
   */
  timerWaitMs(): number {
    const table = this.timers;
    const clock = this.timerClock;
    if (!table || !clock) return Number.POSITIVE_INFINITY;
    if (clock.pending) return 0;
    if (table.armed === 0) return Number.POSITIVE_INFINITY;
    const due = table.nextDue();
    if (clock.hostClock) return due <= clock.now() ? 0 : Number.POSITIVE_INFINITY;
    return Math.max(0, due - Date.now());
  }

  /** Runs the ticks due by the timer clock (up to TICK_BATCH); acknowledges the time once none is left. */
  private runTimers(): number {
    const table = this.timers!;
    const clock = this.timerClock!;
    const now = clock.now();
    let n = 0;
    for (; n < TICK_BATCH; n++) {
      const entry = table.takeDue(now);
      if (entry < 0) break;
      this.tick(entry, now);
    }
    // Figures before the acknowledgement: a host that saw the time acknowledged reads them exact.
    clock.publishStats(this.ticks, this.tickErrors, table.armed);
    if (n < TICK_BATCH) clock.scanned();
    return n;
  }

  /** One tick of timer entry `entry` as a turn of its method; then its next due time (skipping missed periods). */
  private tick(entry: number, now: number): void {
    const table = this.timers!;
    const slot = Math.floor(entry / table.perActor);
    const timer = this.self.def.timers[entry - slot * table.perActor]!;
    const key = this.states.keyOf(slot);
    if (key === undefined) return; // stopped with its actor (stopAll), never reached here
    const due = table.dueOf(entry);
    const arm = table.armOf(entry);
    const method = timer.method;
    this.curKey = key;
    this.curTime = now;
    this.curCorr = 0;
    this.curMethod = method;
    const state = this.states.viewOf(slot);
    const track = this.persist?.load === true;
    if (track && this.before.length === this.states.size0) this.states.copyOut(slot, this.before);
    try {
      (this.self.handlers[method.id] as HandlerFn).call(this.self.instance, state, EMPTY_MSG, this.ctx);
    } catch (e) {
      this.tickErrors++;
      // Nobody awaits a tick: its failure goes to the host as a failed tell would (a tellError event).
      this.replyText(0, method.id, SlotFlag.ERROR, `timer "${timer.name}": ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      if (track) this.noteChange(slot);
    }
    this.ticks = (this.ticks + 1) >>> 0;
    // The tick itself may have stopped or restarted its timer (the arm moved on): then it is scheduled already.
    if (table.armOf(entry) === arm) table.rearm(entry, nextDue(due, table.periodOf(entry), now));
  }

  /** Starts the declared timers that start on activation, from `time` (the activating turn's clock). */
  private armDeclared(slot: number, time: number): void {
    const table = this.timers;
    if (!table) return;
    const base = time > 0 ? time : this.timerClock!.now();
    for (const t of this.self.def.timers) if (t.autoStart) table.start(slot, t.id, base + t.dueMs, t.periodMs);
  }

  private startTimer(name: string, opts: TimerStart | undefined): void {
    const where = `${this.self.def.name}.startTimer(${JSON.stringify(name)})`;
    const timer = byName(where, 'timer', this.self.def.timers, name);
    const { periodMs, dueMs } = startArgs(where, opts, timer);
    this.timers!.start(this.states.indexOf(this.curKey), timer.id, this.curTime + dueMs, periodMs);
  }

  private stopTimer(name: string): void {
    const timer = byName(`${this.self.def.name}.stopTimer(${JSON.stringify(name)})`, 'timer', this.self.def.timers, name);
    this.timers!.stop(this.states.indexOf(this.curKey), timer.id);
  }

  /**
   * A reminder set or cleared by a handler: checked here (a bad one fails the turn), kept by the host
   * (which persists it), sent as a record in the reply ring, in order with the turn's other output.
   */
  private reminder(op: 'set' | 'clear', name: string, opts: TimerStart | undefined): void {
    const where = `${this.self.def.name}.${op}Reminder(${JSON.stringify(name)})`;
    byName(where, 'reminder', this.self.def.reminders, name);
    const record: Record<string, unknown> = { op, key: this.curKey, name };
    if (op === 'set') {
      const { periodMs, dueMs } = startArgs(where, opts, {});
      record['periodMs'] = periodMs;
      record['dueAt'] = this.curTime + dueMs;
    }
    const slot = this.claimReply();
    this.writer.writeText(this.reply.ring, slot, { method: KERNEL_RECORD.reminder, flags: SlotFlag.REPLY, corr: 0, keyLo: 0, keyHi: 0, sender: this.grainId, grain: this.grainId }, JSON.stringify(record));
    this.reply.publish(slot);
    this.signalHost();
  }

  // ---- persistent state: activation, parking, deactivation, dirty marks ---------------------------

  /** Whether host state requests wait (a stopped lane's owner services only those). */
  hasOps(): boolean {
    return this.ops.length > 0;
  }

  /** A host request on this lane's states; runs between turns (the next step), never inside one. */
  queueOp(op: StateOp): void {
    this.ops.push(op);
  }

  /** Runs the queued state requests now (a stopped lane's owner calls it; a running lane does so each step). */
  serviceOps(): number {
    let n = 0;
    while (this.ops.length) {
      const op = this.ops.shift()!;
      const emit = this.persist?.emit;
      if (!emit) continue;
      if (op.op === 'install') n += this.install(op);
      else if (op.op === 'dirty') {
        if (this.laneLoaded.length) this.reportLaneLoaded();
        const d = this.states.takeDirty();
        this.handOver(d.keys.length);
        emit({ out: 'done', id: op.id, keys: d.keys, bytes: d.bytes });
      } else {
        const count = this.deactivate(this.states.idleKeys(op.before), op.now);
        if (op.before === Number.POSITIVE_INFINITY) this.rejectParked([...this.parked.keys()], 'the kernel stopped before the actor\'s state was loaded');
        emit({ out: 'done', id: op.id, count });
      }
    }
    this.out.flushOutboxes();
    this.publishCounters();
    return n;
  }

  /**
   * An absent actor's stored state, read by this lane itself when it may (LANE_GUARD: nothing waits to be
   * written, every row handed over was absorbed; no message of the actor already waits for the host's
   * load). Read in this order: a row the host absorbed after our first read shows in PENDING. false: the
   * host loads it (also when the read fails: the host path reports the error as its own).
   */
  private loadHere(key: number | string): Uint8Array | null | false {
    const ll = this.persist?.laneLoad;
    if (!ll || typeof key !== 'number' || this.parked.has(key)) return false;
    const g = ll.guard;
    const absorbed = Atomics.load(g, LANE_GUARD.absorbed);
    if (Atomics.load(g, LANE_GUARD.pending) !== 0 || Atomics.load(g, LANE_GUARD.emitted) !== absorbed) return false;
    let row: ReturnType<LaneReader['get']>;
    try {
      row = ll.reader.get(key);
    } catch {
      return false;
    }
    this.laneLoaded.push(key);
    this.laneVersions.push(row ? row.version : 0);
    Atomics.add(g, LANE_GUARD.loads, 1);
    if (row) Atomics.add(g, LANE_GUARD.found, 1);
    return row ? row.bytes : null;
  }

  /** The host learns which actors this lane loaded itself (before any later batch of theirs). */
  private reportLaneLoaded(): void {
    this.persist!.emit({ out: 'loaded', keys: this.laneLoaded, versions: Float64Array.from(this.laneVersions) });
    this.laneLoaded = [];
    this.laneVersions = [];
  }

  /** Rows about to be handed to the host (read out, or evicted dirty): counted before they leave (LANE_GUARD). */
  private handOver(rows: number): void {
    const ll = this.persist?.laneLoad;
    if (ll && rows) Atomics.add(ll.guard, LANE_GUARD.emitted, rows);
  }

  /** A turn changed the actor's state: mark it dirty (states up to COMPARE_MAX bytes are compared). */
  private noteChange(index: number): void {
    if (this.before.length !== this.states.size0 || this.states.differs(index, this.before)) this.states.markDirty(index);
  }

  /** Activates an actor (room made by deactivating idle ones when full), then runs its onActivate. */
  private activateActor(key: number | string, state: Uint8Array | undefined, time: number): unknown {
    const idleMs = this.persist?.idleMs;
    if (this.states.full && idleMs !== undefined) this.deactivate(this.states.idleKeys(time - idleMs), time);
    const view = this.states.activate(key, state);
    this.counts.activations++;
    const index = this.states.indexOf(key);
    this.states.touch(index, time);
    // Declared timers first, so onActivate may stop or restart them.
    this.armDeclared(index, time);
    const hook = this.self.onActivate;
    if (hook) this.runHook(hook, HOOK_METHOD.onActivate, key, view, index, time);
    return view;
  }

  private runHook(hook: HookFn, id: number, key: number | string, view: unknown, index: number, time: number): void {
    this.curKey = key;
    this.curTime = time;
    this.curCorr = 0;
    this.curMethod = undefined;
    const track = this.persist?.load === true && this.before.length === this.states.size0;
    if (track) this.states.copyOut(index, this.before);
    try {
      hook.call(this.self.instance, view, this.ctx);
    } catch (e) {
      this.counts.handlerErrors++;
      this.replyText(0, id, SlotFlag.ERROR, e instanceof Error ? e.message : String(e));
    } finally {
      if (this.persist?.load) this.noteChange(index);
    }
  }

  /** Deactivates `keys`: onDeactivate, final state out (one `evicted` report), slot freed. */
  private deactivate(keys: Array<number | string>, now: number): number {
    if (keys.length === 0) return 0;
    const size = this.states.size0;
    const bytes = new Uint8Array(keys.length * size);
    const dirty = new Uint8Array(keys.length);
    const hook = this.self.onDeactivate;
    for (const [i, key] of keys.entries()) {
      const index = this.states.indexOf(key);
      if (hook) this.runHook(hook, HOOK_METHOD.onDeactivate, key, this.states.viewOf(index), index, now);
      this.timers?.stopAll(index); // timers live as long as the activation
      dirty[i] = this.states.evict(key, bytes, i * size) && this.persist?.load ? 1 : 0;
    }
    if (this.laneLoaded.length) this.reportLaneLoaded();
    let handed = 0;
    for (const d of dirty) handed += d;
    this.handOver(handed);
    this.persist?.emit({ out: 'evicted', keys, bytes, dirty });
    return keys.length;
  }

  /** States from the host: activate each actor, then run the messages that waited for it, in order. */
  private install(op: Extract<StateOp, { op: 'install' }>): number {
    const size = this.states.size0;
    let ran = 0;
    const dropped: Array<number | string> = [];
    for (const [i, key] of op.keys.entries()) {
      const waiting = this.parked.get(key);
      if (op.mode === 'preload' && (waiting || this.states.has(key))) continue;
      if (!this.states.has(key)) {
        const time = waiting ? this.replayTime(waiting[0]!) : 0;
        try {
          this.activateActor(key, op.found[i] ? op.bytes.subarray(i * size, (i + 1) * size) : undefined, time);
        } catch (e) {
          dropped.push(key);
          if (waiting) this.rejectParked([key], (e as Error).message);
          continue;
        }
      }
      if (!waiting) continue;
      this.parked.delete(key);
      for (const image of waiting) {
        this.replayRing.i32.set(image, this.replaySlot >> 2);
        this.turn(undefined, this.replaySlot, this.replayRing);
        ran++;
      }
    }
    if (op.failed) this.rejectParked(op.failed.keys, op.failed.error, op.failed.failure);
    // Rows with no room: the host forgets them (they load on their first message).
    if (dropped.length) this.persist?.emit({ out: 'evicted', keys: dropped, bytes: new Uint8Array(dropped.length * size), dirty: new Uint8Array(dropped.length) });
    this.persist?.emit({ out: 'done', id: op.id, count: op.keys.length - dropped.length });
    return ran;
  }

  private replayTime(image: Int32Array): number {
    return new DataView(image.buffer, image.byteOffset, image.byteLength).getFloat64(SLOT.time, true);
  }

  /** Fails the waiting messages of `keys` (received, now rejected): asks get the error, tells a tell error. */
  private rejectParked(keys: ReadonlyArray<number | string>, text: string, failure?: number): void {
    for (const key of keys) {
      const waiting = this.parked.get(key);
      if (!waiting) continue;
      this.parked.delete(key);
      for (const image of waiting) {
        const dv = new DataView(image.buffer, image.byteOffset, image.byteLength);
        this.counts.rejected++;
        this.replyError(dv.getUint32(SLOT.corr, true), dv.getUint32(SLOT.method, true), SlotFlag.ERROR, TURN_ERROR.STATE_LOAD, [failure ?? -1, text]);
      }
    }
  }

  private claimReply(): number {
    for (let spins = 0; ; spins++) {
      const slot = this.reply.claim();
      if (slot >= 0) return slot;
      // The host drains replies at least every sweep; nudge it and wait for room (backpressure).
      Atomics.notify(this.replySignal, 0);
      if (spins > 100) Atomics.wait(this.control, CONTROL.doorbell, Atomics.load(this.control, CONTROL.doorbell), 1);
    }
  }

  private replyPayload(corr: number, method: MethodDef, value: unknown): void {
    const ring = this.reply.ring;
    const slot = this.claimReply();
    const h = { method: method.id, flags: SlotFlag.REPLY, corr, keyLo: 0, keyHi: 0, sender: this.grainId, grain: this.grainId };
    if (method.reply) this.writer.write(ring, slot, h, method.reply, value, this.self.def.name, method.name);
    else this.writer.writeText(ring, slot, h, '');
    this.publishReply(slot);
    this.counts.replied++;
  }

  /**
   * Errors of asks go to the asker; errors of tells go to the host too (corr 0) so none is silent. A
   * handler's throw (ERROR) or a refusal (REJECTED) with its message; the host builds the typed error.
   */
  private replyText(corr: number, methodId: number, flag: number, text: string): void {
    this.replyError(corr, methodId, flag, flag === SlotFlag.REJECTED ? TURN_ERROR.DECODE : TURN_ERROR.HANDLER, [text]);
  }

  /** A failed turn's reply as a code and its fields (core turn-error.ts). */
  private replyError(corr: number, methodId: number, flag: number, code: number, fields: readonly TurnErrorValue[]): void {
    const ring = this.reply.ring;
    const slot = this.claimReply();
    this.writer.writeError(ring, slot, { method: methodId, flags: SlotFlag.REPLY | flag, corr, keyLo: 0, keyHi: 0, sender: this.grainId, grain: this.grainId }, code, fields);
    this.publishReply(slot);
  }

  /**
   * A reply is readable once its seq is stored. Inside a batch take the host's doorbell (an atomic add
   * and a notify, a futex wake when the host sleeps) and the ring's head are left to the batch's end, once
   * for all its replies: a host that spins for replies reads seqs and sees each at once anyway.
   */
  private publishReply(slot: number): void {
    if (this.batchReplies >= 0) {
      this.reply.publishSeq(slot);
      this.batchReplies++;
      return;
    }
    this.reply.publish(slot);
    this.signalHost();
  }

  private signalHost(): void {
    Atomics.add(this.replySignal, 0, 1);
    Atomics.notify(this.replySignal, 0);
  }

  /**
   * In a cluster, a K2K send runs here only when this silo owns the key's partition: anywhere else the key
   * would be active on two silos. A send to a key not owned here goes to the host, which routes it to the
   * owner (false: nothing more to do here): a tell, or a forward with the host ask's corr (the reply
   * obligation moves with it). Refused (the turn fails) where the host takes none.
   */
  private owned(targetId: number, target: string, key: number | string, method: string, payload: unknown, corr: number): boolean {
    const own = this.ownership?.[targetId];
    if (own === undefined || own.owns(key)) return true;
    if (this.remoteSend === undefined) throw new ClusterK2KUnsupportedError(target, key, method, corr !== 0);
    this.remoteSend(targetId, method, key, payload, corr);
    return false;
  }

  /** Per K2K target class id, per method id: its fixed-image writer (null: none; undefined: not looked up). */
  private readonly fixedWriters: Array<Array<FixedWrite | null | undefined> | undefined> = [];

  private fixedWriterOf(targetId: number, method: MethodDef, payloadCapacity: number): FixedWrite | null {
    const byMethod = (this.fixedWriters[targetId] ??= []);
    let w = byMethod[method.id];
    if (w === undefined) byMethod[method.id] = w = fixedWriter(method, targetId, payloadCapacity);
    return w;
  }

  /** K2K: encode once into scratch, then into the target's ring (or its overflow queue, in order). */
  private k2kSend(grain: AnyGrainClass, key: number | string, methodName: string, payload: unknown, corr: number): void {
    const targetName = grain?.grain?.name;
    const targetId = targetName === undefined ? undefined : this.grainIds.get(targetName);
    if (targetId === undefined) throw new K2KTargetError(String(targetName), 'it is not on this backend');
    const target = this.defsById[targetId]!;
    const method = target.methodByName.get(methodName);
    if (!method) throw new K2KTargetError(target.name, `it has no method "${methodName}"`);
    if (corr !== 0) {
      const mine = this.curMethod?.reply;
      if (!mine || !method.reply || describeSchema(mine) !== describeSchema(method.reply)) {
        throw new K2KTargetError(target.name, `forward needs ${target.name}.${methodName} to reply with the same schema as ${this.self.def.name}.${this.curMethod?.name}`);
      }
    }
    let peer = this.out.peers.get(targetId);
    if (!peer) {
      // A relaunch posts the new peer list before it resolves, but the loop reads its port at most once
      // a millisecond: read it now, before failing a send that the host already made valid.
      this.pollControl();
      peer = this.out.peers.get(targetId);
    }
    if (!peer) throw new K2KTargetError(target.name, 'its kernel is not running');
    const lane = peer.lanes[laneOfKey(key, peer.lanes.length)]!;
    const s = this.scratch;
    const slot = this.scratchSlot;
    const h = { method: method.id, flags: corr ? SlotFlag.ASK : 0, corr, keyLo: 0, keyHi: 0, sender: this.grainId, grain: targetId };
    if (typeof key === 'string') {
      if (target.keyKind !== 'string') throw new K2KTargetError(target.name, 'it has integer keys');
      // A lone surrogate would arrive as U+FFFD: another key's actor, in the lane of this one (system.ts checkKey).
      if (!key.isWellFormed()) throw new K2KTargetError(target.name, `invalid key ${JSON.stringify(key)} (a lone surrogate)`);
      this.writer.write(s, slot, h, method.request, payload, target.name, methodName, key);
    } else {
      if (target.keyKind === 'string' || !Number.isSafeInteger(key)) throw new K2KTargetError(target.name, `invalid key ${key}`);
      // An all-scalar request as the host's fixed image (core tell-image.ts; the target reads it at fixed
      // offsets); anything else, or a payload the fixed writer refuses, through the general encoder.
      const fixed = this.fixedWriterOf(targetId, method, s.payloadCapacity);
      if (fixed !== null && fixed(s.i32, s.dv, s.u8, slot, payload, key, corr, this.curTime)) {
        s.dv.setUint32(slot + SLOT.sender, this.grainId, true);
      } else {
        h.keyLo = splitKeyLo(key);
        h.keyHi = splitKeyHi(key);
        this.writer.write(s, slot, h, method.request, payload, target.name, methodName);
      }
    }
    s.dv.setFloat64(slot + SLOT.time, this.curTime, true);
    // Checked once encoded: a payload that does not fit its schema fails the turn here, wherever the key lives.
    if (!this.owned(targetId, target.name, key, methodName, payload, corr)) return;
    const len = SLOT_HEADER_SIZE + s.dv.getUint32(slot + SLOT.length, true) + (typeof key === 'string' ? s.dv.getUint32(slot + SLOT.keyHi, true) : 0);
    this.counts.k2kSent++;
    this.out.send(lane, s.i32, slot >> 2, (len + 3) >> 2);
  }
}
