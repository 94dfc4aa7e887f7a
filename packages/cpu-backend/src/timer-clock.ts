import type { TimerStats } from '@ringgrain/core/backend';

/**
 * The words a CPU kernel's timers share with the host, in one SharedArrayBuffer per kernel:
 * - line 0, host-written: the published time (f64 at byte 8) under a sequence word (Int32 0), odd while
 *   the host writes it (a seqlock: a reader retries on an odd or changed sequence). The epoch of a
 *   publication is its sequence / 2.
 * - line 1 + lane, written by that lane only: the last epoch it ran the due ticks of, and its figures.
 * Every word has one writer; the host never writes per tick, a lane never waits on the host.
 */
const LINE = 128;
const LANE_WORD = { scannedEpoch: 0, ticks: 1, tickErrors: 2, armed: 3 } as const;

export interface TimerClockInit {
  readonly sab: SharedArrayBuffer;
  /** 'host': lanes read the published time; 'kernel': each lane reads Date.now(). */
  readonly source: 'kernel' | 'host';
}

export function allocateTimerClock(lanes: number, source: 'kernel' | 'host'): TimerClockInit {
  return { sab: new SharedArrayBuffer(LINE * (1 + lanes)), source };
}

/** The host's end: publish a time, read whether every lane ran the ticks due by it, sum the figures. */
export class TimerClockHost {
  private readonly seq: Int32Array;
  private readonly time: Float64Array;
  private readonly lanes: Int32Array[];

  constructor(init: TimerClockInit, lanes: number) {
    this.seq = new Int32Array(init.sab, 0, 2);
    this.time = new Float64Array(init.sab, 8, 1);
    this.lanes = Array.from({ length: lanes }, (_, i) => new Int32Array(init.sab, LINE * (1 + i), 4));
  }

  publish(now: number): void {
    Atomics.add(this.seq, 0, 1);
    this.time[0] = now;
    Atomics.add(this.seq, 0, 1);
  }

  caughtUp(): boolean {
    const epoch = Atomics.load(this.seq, 0) >>> 1;
    return this.lanes.every((l) => Atomics.load(l, LANE_WORD.scannedEpoch) >>> 0 >= epoch);
  }

  stats(): TimerStats {
    let ticks = 0;
    let tickErrors = 0;
    let armed = 0;
    for (const l of this.lanes) {
      ticks += Atomics.load(l, LANE_WORD.ticks) >>> 0;
      tickErrors += Atomics.load(l, LANE_WORD.tickErrors) >>> 0;
      armed += Atomics.load(l, LANE_WORD.armed);
    }
    return { ticks: ticks >>> 0, tickErrors: tickErrors >>> 0, armed };
  }
}

/** A lane's end: the current timer time, and its acknowledgment and figures. */
export class TimerClockLane {
  private readonly seq: Int32Array;
  private readonly time: Float64Array;
  private readonly mine: Int32Array;
  private seenSeq = -1;
  private published = 0;
  readonly hostClock: boolean;

  constructor(init: TimerClockInit, lane: number) {
    this.seq = new Int32Array(init.sab, 0, 2);
    this.time = new Float64Array(init.sab, 8, 1);
    this.mine = new Int32Array(init.sab, LINE * (1 + lane), 4);
    this.hostClock = init.source === 'host';
  }

  /** The timer clock now: the kernel's own, or the time the host last published. */
  now(): number {
    if (!this.hostClock) return Date.now();
    this.refresh();
    return this.published;
  }

  /** Whether the host published a time this lane has not acknowledged yet (it must step then). */
  get pending(): boolean {
    return this.hostClock && (Atomics.load(this.seq, 0) & ~1) !== this.seenSeq;
  }

  private refresh(): void {
    for (;;) {
      const s1 = Atomics.load(this.seq, 0);
      if (s1 === this.seenSeq) return;
      if (s1 & 1) continue; // the host is writing it
      const t = this.time[0]!;
      if (Atomics.load(this.seq, 0) !== s1) continue;
      this.published = t;
      this.seenSeq = s1;
      return;
    }
  }

  /** The lane ran every tick due by the time it read last: acknowledge that publication. */
  scanned(): void {
    if (this.hostClock) Atomics.store(this.mine, LANE_WORD.scannedEpoch, this.seenSeq >>> 1);
  }

  publishStats(ticks: number, tickErrors: number, armed: number): void {
    const m = this.mine;
    m[LANE_WORD.ticks] = ticks;
    m[LANE_WORD.tickErrors] = tickErrors;
    m[LANE_WORD.armed] = armed;
  }
}
