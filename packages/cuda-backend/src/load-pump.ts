/**
 * When the host reads a kernel's load-request and evict rings (residency.ts pollLoads). The kernel posts a key there
 * soon after a message for an absent actor reaches it, and nearly every such message was written by this process just
 * before (core wakes the kernel at each publication: `kick`). So the pump polls on the event loop's next turn while
 * anything happened in the last `spinMs` (a kick, or a poll that found keys or rows), then backs off on a timer whose
 * delay doubles from `idleMs[0]` to `idleMs[1]` while nothing turns up: a first message's load is seen within a turn
 * or two of the event loop instead of up to a millisecond later (the 1 ms setInterval it replaces), and an idle
 * kernel costs a timer every `idleMs[1]` ms, not a spinning core. The timer also catches keys posted with no send of
 * this process behind them (K2K from another kernel, a timer's turn).
 */

/** The event loop, as the pump uses it (a fake in tests). */
export interface PumpScheduler {
  now(): number;
  /** Runs `f` on the event loop's next turn (setImmediate). */
  soon(f: () => void): unknown;
  /** Runs `f` after `ms` (setTimeout, unref'd: a pump never keeps the process alive). */
  later(f: () => void, ms: number): unknown;
  /** Cancels a `soon` (immediate: true) or a `later`: each kind with its own clear (see realScheduler). */
  cancel(handle: unknown, immediate: boolean): void;
}

export const realScheduler: PumpScheduler = {
  now: () => performance.now(),
  soon: (f) => setImmediate(f),
  later: (f, ms) => {
    const t = setTimeout(f, ms);
    t.unref();
    return t;
  },
  // Never clearImmediate on a Timeout: Node then counts one immediate fewer than are queued, and once that count
  // reaches 0 no immediate of the process runs until another is scheduled. On the H200 at d7629c3 a residency
  // request's polls (setImmediate) then waited for the next unrelated timer: a CUDA class with storage did not stop.
  cancel: (h, immediate) => {
    if (immediate) clearImmediate(h as NodeJS.Immediate);
    else clearTimeout(h as NodeJS.Timeout);
  },
};

export interface LoadPumpOptions {
  /** How long after the last kick or find the pump polls on every event-loop turn (ms). */
  readonly spinMs: number;
  /** The idle timer's first and largest delay (ms): it doubles between them while polls find nothing. */
  readonly idleMs: readonly [number, number];
}

export const LOAD_PUMP_DEFAULTS: LoadPumpOptions = { spinMs: 2, idleMs: [1, 4] };

export class LoadPump {
  private handle: unknown;
  /** Whether `handle` is an event-loop-turn poll (soon) rather than the idle timer (later). */
  private spinning = false;
  private hotUntil = Number.NEGATIVE_INFINITY;
  private delay: number;
  private stopped = false;
  /** Polls made, and how many of them ran on the idle timer (figures for tests and diagnostics). */
  polls = 0;
  timedPolls = 0;

  constructor(
    /** One read of the rings; returns how many keys and rows it handed on (0: nothing there). */
    private readonly poll: () => number,
    private readonly onError: (e: unknown) => void,
    private readonly sched: PumpScheduler = realScheduler,
    private readonly opts: LoadPumpOptions = LOAD_PUMP_DEFAULTS,
  ) {
    this.delay = opts.idleMs[0];
    this.arm();
  }

  /** Something that may make the kernel post soon happened (a message written to it): poll on the next turns. */
  kick(): void {
    if (this.stopped) return;
    this.hotUntil = this.sched.now() + this.opts.spinMs;
    this.delay = this.opts.idleMs[0];
    if (this.spinning) return;
    if (this.handle !== undefined) this.sched.cancel(this.handle, false);
    this.handle = undefined;
    this.arm();
  }

  /** No poll runs after this (the kernel is being freed). */
  stop(): void {
    this.stopped = true;
    if (this.handle !== undefined) this.sched.cancel(this.handle, this.spinning);
    this.handle = undefined;
  }

  private arm(): void {
    if (this.stopped) return;
    this.spinning = this.sched.now() < this.hotUntil;
    if (this.spinning) {
      this.handle = this.sched.soon(() => this.run());
      return;
    }
    const ms = this.delay;
    this.delay = Math.min(this.opts.idleMs[1], this.delay * 2);
    this.handle = this.sched.later(() => this.run(true), ms);
  }

  private run(timed = false): void {
    this.handle = undefined;
    this.spinning = false;
    if (this.stopped) return;
    this.polls++;
    if (timed) this.timedPolls++;
    let found = 0;
    try {
      found = this.poll();
    } catch (e) {
      this.onError(e);
    }
    if (found > 0) {
      this.hotUntil = this.sched.now() + this.opts.spinMs;
      this.delay = this.opts.idleMs[0];
    }
    this.arm();
  }
}
