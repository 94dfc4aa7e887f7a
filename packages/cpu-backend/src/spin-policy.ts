/**
 * How long an idle pool thread spins for work before it parks (pool-worker.ts run): adaptive.
 *
 * A ring that ends a sleep shorter than the longest window found a thread that parked too early: spinning
 * that long would have caught the work without a wake-up (a futex wake and a reschedule, tens of µs; in a
 * chain of sends across actors every hop to a parked thread paid one: issue 37). So the window grows to
 * twice that sleep (at least doubling, at most `maxMs`). A sleep that timed out or lasted longer than
 * `maxMs` means work comes seldom: the window falls back to `minMs`, so an idle thread costs what it did.
 *
 * A spin pass that took longer than PREEMPTED_MS (more than a GC scavenge, less than a scheduler slice)
 * means the OS gave the core to someone else mid-spin. One such pass now and then is what any machine
 * does (on the 16-core host at 68e3699, 14 in a one-token run of 15 threads: a daemon, a GC helper). Two
 * within CROWDED_MS mean the machine has more runnable threads than cores, and a thread spinning there
 * delays the one with the work (on a loaded 2-core machine a hand-off to a spinning thread measured
 * 81 µs, to a parked one 20 µs: scripts/wake-probe.ts). Then the window falls back to `minMs` and does
 * not grow for a while: BAR_MS, doubling (to BAR_MAX_MS) while such pairs come less than BAR_MAX_MS
 * apart, so a thread on a machine that stays loaded learns to park early (there, 2 threads, one token:
 * 16 K hops/s spinning with a 20 ms bar against 33 K with the old 50 µs spin). Barring on every single
 * preemption made threads on the 16-core host park for up to a second after one hiccup, and each hop to
 * such a thread paid a wake-up (0.044 parks a hop there, with windows otherwise at their most).
 */
export class SpinPolicy {
  /** The window now (ms). */
  windowMs: number;
  /** Spins the OS cut into. */
  preempted = 0;
  private barredUntil = Number.NEGATIVE_INFINITY;

  static readonly PREEMPTED_MS = 0.5;
  /** Two preempted passes closer than this: the machine is crowded (see above). */
  static readonly CROWDED_MS = 100;
  static readonly BAR_MS = 20;
  static readonly BAR_MAX_MS = 1000;
  private barMs = SpinPolicy.BAR_MS;
  private lastPreempt = Number.NEGATIVE_INFINITY;
  private lastBar = Number.NEGATIVE_INFINITY;

  constructor(
    readonly minMs: number,
    readonly maxMs: number,
  ) {
    this.windowMs = minMs;
  }

  /** A park ended: by a producer's ring (`rung`) or not, after `sleptMs`; `now` on the thread's clock. */
  parked(rung: boolean, sleptMs: number, now: number): void {
    const grow = rung && sleptMs < this.maxMs && now >= this.barredUntil;
    this.windowMs = grow ? Math.min(this.maxMs, Math.max(this.windowMs * 2, sleptMs * 2)) : this.minMs;
  }

  /** An idle spin pass ended `gapMs` after the one before it. */
  pass(gapMs: number, now: number): void {
    if (gapMs <= SpinPolicy.PREEMPTED_MS) return;
    this.preempted++;
    const since = now - this.lastPreempt;
    this.lastPreempt = now;
    if (since >= SpinPolicy.CROWDED_MS) return; // one hiccup: keep spinning
    this.windowMs = this.minMs;
    this.barMs =
      now - this.lastBar < SpinPolicy.BAR_MAX_MS ? Math.min(this.barMs * 2, SpinPolicy.BAR_MAX_MS) : SpinPolicy.BAR_MS;
    this.lastBar = now;
    this.barredUntil = now + this.barMs;
  }
}
