import { HOOK_METHOD, LANE_GUARD, Ring, SLOT, SlotFlag, TURN_ERROR } from '@ringgrain/core/backend';
import type { LaneReader } from '@ringgrain/core/store';
import type { LoadedGrain } from './grain-load.ts';
import type { LaneReplies } from './lane-replies.ts';
import type { LaneTimers } from './lane-timers.ts';
import type { LaneTurns, TurnCounts } from './lane-turns.ts';
import type { StateOp, StateOut } from './protocol.ts';
import type { StateTable } from './state-table.ts';

/** A lane's persistent-state mode (core PersistencePlan) and where it reports (the host's port, or a call). */
export interface LanePersistence {
  readonly load: boolean;
  readonly idleMs: number | undefined;
  readonly emit: (out: StateOut) => void;
  /** The lane reads stored states itself on an actor's first message (core PersistencePlan.laneLoad). */
  readonly laneLoad?: { readonly reader: LaneReader; readonly guard: Int32Array } | undefined;
}

/**
 * A lane's persistent state: the host's requests on its states (install, dirty read-out, idle
 * deactivation), run between turns; messages of actors whose state the host is loading, parked in
 * arrival order until it arrives; actors this lane loaded from the store itself; deactivation.
 */
export class LaneStates {
  /** Messages of actors whose state the host is loading, in arrival order (slot images). */
  private readonly parked = new Map<number | string, Int32Array[]>();
  private toLoad: Array<number | string> = [];
  /** Actors this lane loaded from the store itself, not yet reported to the host (with their versions). */
  private laneLoaded: Array<number | string> = [];
  private laneVersions: number[] = [];
  private readonly ops: StateOp[] = [];
  private readonly replayRing: Ring;
  private readonly replaySlot: number;

  constructor(
    private readonly self: LoadedGrain,
    private readonly states: StateTable<number | string>,
    private readonly persist: LanePersistence | undefined,
    private readonly counts: TurnCounts,
    private readonly replies: LaneReplies,
    private readonly turns: LaneTurns,
    private readonly timers: LaneTimers | undefined,
    slotSize: number,
    /** After the requests ran: K2K their hooks sent goes out, counters are published. */
    private readonly afterOps: () => void,
  ) {
    this.replayRing = Ring.format(new SharedArrayBuffer(2 * slotSize + 512), 0, 2, slotSize);
    this.replaySlot = this.replayRing.slotAt(0);
  }

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
        if (op.before === Number.POSITIVE_INFINITY)
          this.rejectParked([...this.parked.keys()], "the kernel stopped before the actor's state was loaded");
        emit({ out: 'done', id: op.id, count });
      }
    }
    this.afterOps();
    return n;
  }

  /** The step's end: the actors to load and those loaded here go to the host. */
  report(): void {
    if (this.toLoad.length) {
      this.persist!.emit({ out: 'load', keys: this.toLoad });
      this.toLoad = [];
    }
    if (this.laneLoaded.length) this.reportLaneLoaded();
  }

  /** A message of an actor whose state the host loads first: it waits, in order (asked for once per actor). */
  park(key: number | string, image: Int32Array): void {
    let q = this.parked.get(key);
    if (!q) {
      this.parked.set(key, (q = []));
      this.toLoad.push(key);
    }
    q.push(image);
  }

  /**
   * An absent actor's stored state, read by this lane itself when it may (LANE_GUARD: nothing waits to be
   * written, every row handed over was absorbed; no message of the actor already waits for the host's
   * load). Read in this order: a row the host absorbed after our first read shows in PENDING. false: the
   * host loads it (also when the read fails: the host path reports the error as its own).
   */
  loadHere(key: number | string): Uint8Array | null | false {
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

  /** Deactivates `keys`: onDeactivate, final state out (one `evicted` report), slot freed. */
  deactivate(keys: Array<number | string>, now: number): number {
    if (keys.length === 0) return 0;
    const size = this.states.size0;
    const bytes = new Uint8Array(keys.length * size);
    const dirty = new Uint8Array(keys.length);
    const hook = this.self.onDeactivate;
    for (const [i, key] of keys.entries()) {
      const index = this.states.indexOf(key);
      if (hook) this.turns.runHook(hook, HOOK_METHOD.onDeactivate, key, this.states.viewOf(index), index, now);
      this.timers?.table.stopAll(index); // timers live as long as the activation
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
          this.turns.activateActor(key, op.found[i] ? op.bytes.subarray(i * size, (i + 1) * size) : undefined, time);
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
        this.turns.turn(undefined, this.replaySlot, this.replayRing);
        ran++;
      }
    }
    if (op.failed) this.rejectParked(op.failed.keys, op.failed.error, op.failed.failure);
    // Rows with no room: the host forgets them (they load on their first message).
    if (dropped.length)
      this.persist?.emit({
        out: 'evicted',
        keys: dropped,
        bytes: new Uint8Array(dropped.length * size),
        dirty: new Uint8Array(dropped.length),
      });
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
        this.replies.error(
          dv.getUint32(SLOT.corr, true),
          dv.getUint32(SLOT.method, true),
          SlotFlag.ERROR,
          TURN_ERROR.STATE_LOAD,
          [failure ?? -1, text],
        );
      }
    }
  }
}
