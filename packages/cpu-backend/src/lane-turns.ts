import {
  DecodeError,
  HOOK_METHOD,
  HOST_SENDER,
  KERNEL_RECORD,
  type Ring,
  type RingConsumer,
  SLOT,
  SLOT_HEADER_SIZE,
  SlotFlag,
  SlotReader,
  StateTableFullError,
  TURN_ERROR,
  byName,
  fixedReader,
  joinKey,
  startArgs,
  type FixedRead,
  type Forwarded,
  type GrainContext,
  type MethodDef,
  type TimerStart,
} from '@ringgrain/core/backend';
import type { HandlerFn, HookFn, LoadedGrain } from './grain-load.ts';
import type { K2KSender } from './k2k-send.ts';
import type { LaneReplies } from './lane-replies.ts';
import type { LanePersistence, LaneStates } from './lane-states.ts';
import type { LaneTimers } from './lane-timers.ts';
import { replyMismatchText } from './reply-mismatch.ts';
import type { StateTable } from './state-table.ts';

/** runTurn's `held` when the caller did not look the actor's slot up. */
export const UNKNOWN_SLOT = -2;
/** A tick's message: its method's request is the empty struct. */
const EMPTY_MSG = Object.freeze({});
/**
 * States up to this size are compared before and after a turn (dirty only when changed); larger ones are
 * marked dirty by every turn.
 */
const COMPARE_MAX = 4096;

const FORWARDED: Forwarded = Object.freeze({ __forwarded: true as const });

/** The counters a turn moves (the lane's, published by the Dispatcher). */
export interface TurnCounts {
  received: number;
  processed: number;
  replied: number;
  k2kSent: number;
  k2kReceived: number;
  handlerErrors: number;
  rejected: number;
  activations: number;
}

/**
 * A lane's turns: the handler of one message (or a tick, or an activation hook) run on its actor's state
 * with the context (`ctx`) the handler sees, then its reply. One turn at a time: the lane runs them in
 * the order it takes messages.
 */
export class LaneTurns {
  // The turn being run; ctx methods read these.
  private curKey: number | string = 0;
  private curTime = 0;
  private curCorr = 0;
  private curMethod: MethodDef | undefined;
  private readonly ctx: GrainContext;
  /** Per method id: its fixed-image reader (image-decode.ts), null where the request is not all scalars. */
  readonly fixedReads: ReadonlyArray<FixedRead | null>;
  private readonly reader = new SlotReader();
  /** A persistent lane's copy of the state before a turn (compared after it: noteChange). */
  private readonly before: Uint8Array;
  /** The persistent-state side (lane-states.ts), set once both exist. */
  store!: LaneStates;

  constructor(
    private readonly self: LoadedGrain,
    private readonly states: StateTable<number | string>,
    private readonly persist: LanePersistence | undefined,
    private readonly counts: TurnCounts,
    private readonly replies: LaneReplies,
    private readonly sender: K2KSender,
    private readonly timers: LaneTimers | undefined,
    private readonly slotSize: number,
  ) {
    this.fixedReads = self.def.methods.map((m) => fixedReader(m));
    this.before = new Uint8Array(persist?.load ? Math.min(states.size0, COMPARE_MAX) : 0);
    const d = this;
    this.ctx = {
      get key() {
        return d.curKey;
      },
      now: () => d.curTime,
      send: (grain, key, method, payload) => {
        d.sender.send(grain, key as number | string, method as string, payload, 0, d.curMethod, d.curTime);
      },
      forward: (grain, key, method, payload) => {
        d.sender.send(grain, key as number | string, method as string, payload, d.curCorr, d.curMethod, d.curTime);
        d.curCorr = 0; // the reply obligation moved on
        return FORWARDED;
      },
      startTimer: (name, opts) => d.startTimer(name, opts),
      stopTimer: (name) => d.stopTimer(name),
      setReminder: (name, opts) => d.reminder('set', name, opts),
      clearReminder: (name) => d.reminder('clear', name, undefined),
    };
  }

  /**
   * One message: decode, activate, run the handler, reply. The slot is released before the handler runs.
   * `consumer` undefined: a parked message replayed from `ring` (already counted as received).
   */
  turn(consumer: RingConsumer | undefined, slot: number, ring: Ring = consumer!.ring): void {
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
    /**
     * The actor's slot where this lane holds it (-1: absent; UNKNOWN_SLOT: not looked up, a lane that loads
     * nothing).
     */
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
      if (
        this.persist?.load &&
        (held = this.states.indexOf(key)) < 0 &&
        (loaded = this.store.loadHere(key)) === false
      ) {
        // Not held: its state comes from the host first. This message and every later one of the actor
        // wait here, in order, until the state is uploaded (install).
        this.store.park(key, ring.i32.slice(slot >> 2, (slot + this.slotSize) >> 2));
        consumer?.release();
        return;
      }
      // The host's fixed image at fixed offsets (as drainBatch reads it); any other payload through the
      // general decoder.
      const length = dv.getUint32(slot + SLOT.length, true);
      const fixed = length <= ring.payloadCapacity ? this.fixedReads[methodId] : null;
      msg = fixed ? fixed(ring.u8, dv, slot + SLOT_HEADER_SIZE, length) : undefined;
      if (msg === undefined) msg = this.reader.payload(ring, slot, method.request);
    } catch (e) {
      consumer?.release();
      this.counts.rejected++;
      this.replies.text(corr, methodId, SlotFlag.REJECTED, (e as Error).message);
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
  runTurn(
    method: MethodDef,
    methodId: number,
    key: number | string,
    msg: unknown,
    corr: number,
    time: number,
    loaded?: Uint8Array,
    held = UNKNOWN_SLOT,
  ): void {
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
          this.timers?.armDeclared(this.states.indexOf(key), time);
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
        this.replies.error(this.curCorr, methodId, SlotFlag.ERROR, TURN_ERROR.STATE_TABLE_FULL, [e.maxActors]);
        return;
      }
      this.counts.processed++;
      this.counts.handlerErrors++;
      this.replies.text(this.curCorr, methodId, SlotFlag.ERROR, e instanceof Error ? e.message : String(e));
      return;
    }
    this.counts.processed++;
    if (this.curCorr === 0) return; // a tell, or an ask forwarded onwards
    if (result === FORWARDED) return;
    if (method.reply === undefined) {
      this.replies.payload(this.curCorr, method, undefined);
      return;
    }
    try {
      this.replies.payload(this.curCorr, method, result);
    } catch (e) {
      this.counts.handlerErrors++;
      this.replies.text(this.curCorr, methodId, SlotFlag.ERROR, replyMismatchText(result, e));
    }
  }

  /** One timer tick as a turn of `method` on the actor in `slot` (lane-timers.ts); false when the handler threw. */
  fire(slot: number, key: number | string, method: MethodDef, now: number, timer: string): boolean {
    this.curKey = key;
    this.curTime = now;
    this.curCorr = 0;
    this.curMethod = method;
    const state = this.states.viewOf(slot);
    const track = this.persist?.load === true;
    if (track && this.before.length === this.states.size0) this.states.copyOut(slot, this.before);
    try {
      (this.self.handlers[method.id] as HandlerFn).call(this.self.instance, state, EMPTY_MSG, this.ctx);
      return true;
    } catch (e) {
      // Nobody awaits a tick: its failure goes to the host as a failed tell would (a tellError event).
      this.replies.text(
        0,
        method.id,
        SlotFlag.ERROR,
        `timer "${timer}": ${e instanceof Error ? e.message : String(e)}`,
      );
      return false;
    } finally {
      if (track) this.noteChange(slot);
    }
  }

  /** Activates an actor (room made by deactivating idle ones when full), then runs its onActivate. */
  activateActor(key: number | string, state: Uint8Array | undefined, time: number): unknown {
    const idleMs = this.persist?.idleMs;
    if (this.states.full && idleMs !== undefined) this.store.deactivate(this.states.idleKeys(time - idleMs), time);
    const view = this.states.activate(key, state);
    this.counts.activations++;
    const index = this.states.indexOf(key);
    this.states.touch(index, time);
    // Declared timers first, so onActivate may stop or restart them.
    this.timers?.armDeclared(index, time);
    const hook = this.self.onActivate;
    if (hook) this.runHook(hook, HOOK_METHOD.onActivate, key, view, index, time);
    return view;
  }

  runHook(hook: HookFn, id: number, key: number | string, view: unknown, index: number, time: number): void {
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
      this.replies.text(0, id, SlotFlag.ERROR, e instanceof Error ? e.message : String(e));
    } finally {
      if (this.persist?.load) this.noteChange(index);
    }
  }

  /** A turn changed the actor's state: mark it dirty (states up to COMPARE_MAX bytes are compared). */
  private noteChange(index: number): void {
    if (this.before.length !== this.states.size0 || this.states.differs(index, this.before))
      this.states.markDirty(index);
  }

  private startTimer(name: string, opts: TimerStart | undefined): void {
    const where = `${this.self.def.name}.startTimer(${JSON.stringify(name)})`;
    const timer = byName(where, 'timer', this.self.def.timers, name);
    const { periodMs, dueMs } = startArgs(where, opts, timer);
    this.timers!.table.start(this.states.indexOf(this.curKey), timer.id, this.curTime + dueMs, periodMs);
  }

  private stopTimer(name: string): void {
    const timer = byName(
      `${this.self.def.name}.stopTimer(${JSON.stringify(name)})`,
      'timer',
      this.self.def.timers,
      name,
    );
    this.timers!.table.stop(this.states.indexOf(this.curKey), timer.id);
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
    this.replies.record(KERNEL_RECORD.reminder, JSON.stringify(record));
  }
}
