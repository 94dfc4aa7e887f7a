import { nextDue, type GrainDef, type MethodDef } from '@ringgrain/core/backend';
import type { StateTable } from './state-table.ts';
import type { TimerClockLane } from './timer-clock.ts';
import type { TimerTable } from './timer-table.ts';

/** Ticks run in one step before the lane looks at its rings again: fairness between ticks and messages. */
const TICK_BATCH = 4096;

/**
 * A lane's timers (the class declares some): the per-actor table (timer-table.ts) and the lane's timer
 * clock (timer-clock.ts). Each tick is a turn of its method, which `fire` runs (lane-turns.ts).
 */
export class LaneTimers {
  private ticks = 0;
  private tickErrors = 0;

  constructor(
    private readonly def: GrainDef,
    readonly table: TimerTable,
    private readonly clock: TimerClockLane,
    private readonly states: StateTable<number | string>,
    /** Runs one tick as a turn of `method` for the actor in `slot`; false when the handler failed. */
    private readonly fire: (
      slot: number,
      key: number | string,
      method: MethodDef,
      now: number,
      timer: string,
    ) => boolean,
  ) {}

  /** Whether a step has ticks to look at (some armed, or a new time from the clock). */
  get active(): boolean {
    return this.table.armed > 0 || this.clock.pending;
  }

  /**
   * Milliseconds until this lane's next tick is due by its own clock (0: due now; Infinity: no timer
   * running, or the host's clock drives the timers and rings the lane when it publishes a time).
   */
  waitMs(): number {
    const table = this.table;
    const clock = this.clock;
    if (clock.pending) return 0;
    if (table.armed === 0) return Number.POSITIVE_INFINITY;
    const due = table.nextDue();
    if (clock.hostClock) return due <= clock.now() ? 0 : Number.POSITIVE_INFINITY;
    return Math.max(0, due - Date.now());
  }

  /** Runs the ticks due by the timer clock (up to TICK_BATCH); acknowledges the time once none is left. */
  run(): number {
    const table = this.table;
    const clock = this.clock;
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
    const table = this.table;
    const slot = Math.floor(entry / table.perActor);
    const timer = this.def.timers[entry - slot * table.perActor]!;
    const key = this.states.keyOf(slot);
    if (key === undefined) return; // stopped with its actor (stopAll), never reached here
    const due = table.dueOf(entry);
    const arm = table.armOf(entry);
    if (!this.fire(slot, key, timer.method, now, timer.name)) this.tickErrors++;
    this.ticks = (this.ticks + 1) >>> 0;
    // The tick itself may have stopped or restarted its timer (the arm moved on): then it is scheduled already.
    if (table.armOf(entry) === arm) table.rearm(entry, nextDue(due, table.periodOf(entry), now));
  }

  /** Starts the declared timers that start on activation, from `time` (the activating turn's clock). */
  armDeclared(slot: number, time: number): void {
    const base = time > 0 ? time : this.clock.now();
    for (const t of this.def.timers) if (t.autoStart) this.table.start(slot, t.id, base + t.dueMs, t.periodMs);
  }
}
