import {
  CONTROL,
  CONTROL_BLOCK_SIZE,
  IMAGE_AREA_HEADER,
  IMAGE_AREA_RUNNING_WORD,
  KernelState,
  Ring,
  RingConsumer,
  RingProducer,
  type GrainDef,
  type KernelOptions,
  type RemoteSend,
} from '@ringgrain/core/backend';
import { countLostOfDeadLane } from './dead-lane.ts';
import type { LoadedGrain } from './grain-load.ts';
import { K2KOut } from './k2k-outbox.ts';
import { K2KSender } from './k2k-send.ts';
import { DRAIN_BATCH, LaneIntake, type LaneImages } from './lane-intake.ts';
import { LaneReplies } from './lane-replies.ts';
import { LaneStates, type LanePersistence } from './lane-states.ts';
import { LaneTimers } from './lane-timers.ts';
import { LaneTurns, type TurnCounts } from './lane-turns.ts';
import { IMAGE_BUFFERS, IMAGE_BUFFER_BYTES, OVERFLOW_WORD, overflowWords, type PeerInfo } from './memory.ts';
import type { StateOp } from './protocol.ts';
import { StateTable } from './state-table.ts';
import { TimerClockLane, type TimerClockInit } from './timer-clock.ts';
import { TimerTable } from './timer-table.ts';

/**
 * One lane of a CPU ring kernel: the one consumer of that lane's rings, so every actor the lane hosts
 * (the keys core laneOfKey maps to it) runs one turn at a time and sees messages per sender in FIFO
 * order, without locks. A pool thread runs one Dispatcher per kernel lane it owns (`step`); the inline
 * backend runs them on the host thread (`runSlice`).
 *
 * This class is the lane's control: the launch handshake, the host's requests (run, pause, stop, publish),
 * the counters, and one step's order. The work is in its parts: taking messages (lane-intake.ts), running
 * turns (lane-turns.ts), replies (lane-replies.ts), K2K sends (k2k-send.ts, k2k-outbox.ts), timers
 * (lane-timers.ts) and persistent state (lane-states.ts).
 */
export class Dispatcher {
  private readonly control: Int32Array;
  private readonly inbound: RingConsumer;
  /** The lane's image area: header words (busy per buffer, IMAGE_AREA_EXTRA_WORD) and buffers. */
  private readonly images: LaneImages | undefined;
  private readonly k2k: RingConsumer;
  private readonly states: StateTable<number | string>;
  /** The K2K sending side: peers, outboxes, overflow queues (k2k-outbox.ts). */
  private readonly out: K2KOut;
  private readonly persist: LanePersistence | undefined;
  private readonly timers: LaneTimers | undefined;
  private readonly intake: LaneIntake;
  private readonly store: LaneStates;
  private mode: number = KernelState.IDLE;
  private epochSeen = 0;
  private readonly counts: TurnCounts = {
    received: 0,
    processed: 0,
    replied: 0,
    k2kSent: 0,
    k2kReceived: 0,
    handlerErrors: 0,
    rejected: 0,
    activations: 0,
  };
  private heartbeat = 0;
  /**
   * This kernel's overflow figures, and the word (heldBy + lane) where this thread counts what it holds
   * for any kernel.
   */
  private readonly ownStats: Int32Array;
  private readonly heldWord: number;

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
    /**
     * This kernel's overflow region (memory.ts OVERFLOW_WORD) and the lane this dispatcher consumes (= its
     * pool thread).
     */
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
    /**
     * `remoteSend` takes each payload as its schema bytes (encoded = true), a view of the sender's scratch
     * slot that holds only during the call (a pool thread copies it into its batch for the host).
     */
    remoteBytes?: boolean | undefined;
  }) {
    const def = args.self.def;
    const slotSize = args.options.slotSize;
    this.control = new Int32Array(args.sab, args.controlOffset, CONTROL_BLOCK_SIZE >> 2);
    this.inbound = new RingConsumer(new Ring(args.sab, args.inboundOffset));
    if (args.imageOffset !== undefined) {
      const at = args.imageOffset;
      this.images = {
        words: new Int32Array(args.sab, at, IMAGE_AREA_HEADER >> 2),
        buffers: Array.from(
          { length: IMAGE_BUFFERS },
          (_, i) => new Uint8Array(args.sab, at + IMAGE_AREA_HEADER + i * IMAGE_BUFFER_BYTES, IMAGE_BUFFER_BYTES),
        ),
      };
    }
    this.k2k = new RingConsumer(new Ring(args.sab, args.k2kOffset));
    this.ownStats = new Int32Array(args.sab, args.overflowOffset, overflowWords(args.lanes));
    this.heldWord = OVERFLOW_WORD.heldBy + args.lane;
    this.states = new StateTable(def.name, def.state, args.options.maxActors);
    this.persist = args.persistence;
    this.out = new K2KOut(args.lane, slotSize, this.heldWord, this.counts);
    this.setPeers(args.peers);
    const replies = new LaneReplies(
      new RingProducer(new Ring(args.sab, args.replyOffset)),
      new Int32Array(args.replySignal),
      this.control,
      args.grainId,
      def.name,
      this.counts,
    );
    const sender = new K2KSender(
      args.grainId,
      def,
      args.defsById,
      slotSize,
      this.out,
      this.counts,
      args.ownership,
      args.remoteSend,
      () => this.pollControl(),
      args.remoteBytes === true,
    );
    // Timers where the class declares some and the kernel has a timer clock; each tick is a turn.
    let turns: LaneTurns | undefined;
    const nTimers = def.timers.length;
    this.timers =
      args.timers && nTimers
        ? new LaneTimers(
            def,
            new TimerTable(nTimers),
            new TimerClockLane(args.timers, args.lane),
            this.states,
            (slot, key, method, now, timer) => turns!.fire(slot, key, method, now, timer),
          )
        : undefined;
    turns = new LaneTurns(args.self, this.states, this.persist, this.counts, replies, sender, this.timers, slotSize);
    this.store = new LaneStates(
      args.self,
      this.states,
      this.persist,
      this.counts,
      replies,
      turns,
      this.timers,
      slotSize,
      () => {
        this.out.flushOutboxes();
        this.publishCounters();
      },
    );
    turns.store = this.store;
    this.intake = new LaneIntake(
      def,
      args.grainId,
      this.counts,
      replies,
      turns,
      this.images,
      this.persist?.load === true,
    );
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
      if (running > 0) this.intake.freeImage(running - 1);
      countLostOfDeadLane(
        n,
        this.inbound.ring.words,
        this.k2k.ring.words,
        this.images?.words,
        this.ownStats,
        this.heldWord,
      );
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
    if (Atomics.load(this.control, CONTROL.requestEpoch) >>> 0 !== this.epochSeen || this.store.hasOps()) return true;
    if (Atomics.load(this.control, CONTROL.publishRequest) >>> 0 !== this.publishSeen) return true;
    return (
      this.mode === KernelState.ACTIVE && (this.inbound.peek() >= 0 || this.k2k.peek() >= 0 || this.timerWaitMs() === 0)
    );
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
    if (this.store.hasOps()) did += this.store.serviceOps();
    if (this.mode === KernelState.ACTIVE) {
      did += this.intake.drain(this.inbound, DRAIN_BATCH);
      did += this.intake.drain(this.k2k, DRAIN_BATCH);
      if (this.timers?.active) did += this.timers.run();
    }
    if (this.persist) this.store.report();
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
    const sum =
      n.received +
      n.processed +
      n.replied +
      n.k2kSent +
      n.k2kReceived +
      n.handlerErrors +
      n.rejected +
      n.activations +
      this.heartbeat;
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

  /**
   * Milliseconds until this lane's next tick is due by its own clock (0: due now; Infinity: no timer
   * running, or the host's clock drives the timers and rings the lane when it publishes a time).
   */
  timerWaitMs(): number {
    return this.timers ? this.timers.waitMs() : Number.POSITIVE_INFINITY;
  }

  /** Whether host state requests wait (a stopped lane's owner services only those). */
  hasOps(): boolean {
    return this.store.hasOps();
  }

  /** A host request on this lane's states; runs between turns (the next step), never inside one. */
  queueOp(op: StateOp): void {
    this.store.queueOp(op);
  }

  /** Runs the queued state requests now (a stopped lane's owner calls it; a running lane does so each step). */
  serviceOps(): number {
    return this.store.serviceOps();
  }
}
