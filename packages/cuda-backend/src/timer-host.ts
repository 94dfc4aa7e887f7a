/**
 * The host's end of a CUDA kernel's timers (codegen timers.ts is the kernel's): one TimerHostBlock in the
 * kernel's pinned mapped host memory. The host writes the clock source and origin before the launch and,
 * with an injected clock, each published time under a sequence word; the kernel's control warp writes
 * the figures and the epoch it has caught up with whenever it publishes its counters. Nothing here moves
 * per tick: the kernel generates ticks from its own table and clock.
 */
import { TIMER_HOST_BYTES, TimerHostBlock, offsetOf, type TimerPlan, type TimerStats } from '@ringgrain/core/backend';

const word = (f: string): number => offsetOf(TimerHostBlock, f) >> 2;
const W = {
  seq: word('seq'),
  clock: word('clock'),
  caughtEpoch: word('caughtEpoch'),
  ticks: word('ticks'),
  tickErrors: word('tickErrors'),
  armed: word('armed'),
  publishes: word('publishes'),
} as const;
const F = { time: offsetOf(TimerHostBlock, 'time') >> 3, originMs: offsetOf(TimerHostBlock, 'originMs') >> 3 } as const;

export class TimerHost {
  private readonly words: Int32Array;
  private readonly f64: Float64Array;

  /** `offset`: the block's byte offset in `buffer` (8-aligned; the backend places it 128-aligned). */
  constructor(
    buffer: ArrayBufferLike,
    offset: number,
    private readonly plan: TimerPlan,
  ) {
    this.words = new Int32Array(buffer, offset, TIMER_HOST_BYTES >> 2);
    this.f64 = new Float64Array(buffer, offset, TIMER_HOST_BYTES >> 3);
  }

  /**
   * Before the launch: the clock source, and the kernel clock's origin (the control warp pairs it with
   * %globaltimer when it starts, so the kernel's ms are Date.now()'s to within the launch latency).
   */
  init(now = Date.now()): void {
    this.words.fill(0);
    this.f64[F.originMs] = now;
    Atomics.store(this.words, W.clock, this.plan.clock === 'host' ? 1 : 0);
  }

  /** The host clock's time `now` (odd sequence while written: the control warp retries on it). */
  publish(now: number): void {
    Atomics.add(this.words, W.seq, 1);
    this.f64[F.time] = now;
    Atomics.add(this.words, W.seq, 1);
  }

  /** Epoch of the last publication (0: none yet). */
  get epoch(): number {
    return Atomics.load(this.words, W.seq) >>> 1;
  }

  /**
   * Every worker ran the ticks due by the last published time (true when none was published, or with the kernel's own
   * clock).
   */
  caughtUp(): boolean {
    if (this.plan.clock !== 'host') return true;
    const epoch = this.epoch;
    if (epoch === 0) return true;
    // Epochs wrap (u32 halves of a u32 sequence): compare by difference.
    return (((Atomics.load(this.words, W.caughtEpoch) >>> 0) - epoch) | 0) >= 0;
  }

  /** Figures as of the kernel's last publication of its counters. */
  stats(): TimerStats {
    return {
      ticks: Atomics.load(this.words, W.ticks) >>> 0,
      tickErrors: Atomics.load(this.words, W.tickErrors) >>> 0,
      armed: Atomics.load(this.words, W.armed),
    };
  }

  /** How many times the control warp published the figures (tests: a kernel that publishes is alive). */
  get publishes(): number {
    return Atomics.load(this.words, W.publishes) >>> 0;
  }
}
