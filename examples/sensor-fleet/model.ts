/**
 * The sensor fleet in plain JavaScript: the workload (which device reports in which round, and what) and
 * the same rules as grains.ts, run sequentially. main.ts drives the actors with `roundReadings` and checks
 * every device's state and every region's alert counts against a `FleetModel` run through the same rounds.
 *
 * Time: round r (1-based, counted over both phases) happens at `roundTime(r)`. In a round the host first
 * moves the clock to that time and runs the timer ticks due by it, then sends the round's readings (their
 * `at` is the round's time). A device's `check` timer runs every RULES.checkPeriodMs from its activation:
 * from its first reading, or, after a restart, from the preload (at the restart's time).
 */
import { RULES } from './grains.ts';

/** The clock's time of round 0 (ms): any fixed value; large, as wall-clock times are. */
export const T0 = 1_750_000_000_000;
/** Clock time between rounds (ms). */
export const ROUND_MS = 1000;

export function roundTime(round: number): number {
  return T0 + round * ROUND_MS;
}

/** A 32-bit integer hash of (round, device): which devices report, and their values. */
export function readingHash(round: number, device: number): number {
  let h = (Math.imul(round, 0x9e3779b1) ^ Math.imul(device, 0x85ebca6b)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * Whether `device` reports in `round`: one round in eight at random is missed, and one device in 61 is
 * silent in rounds 4..9 (long enough to go stale; with 6 rounds a phase, across the restart).
 */
export function reports(round: number, device: number): boolean {
  if (device % 61 === 5 && round >= 4 && round <= 9) return false;
  return readingHash(round, device) % 8 !== 0;
}

/** The value `device` reports in `round`: 20.0..49.9 mostly; now and then far above or below the range. */
export function readingValue(round: number, device: number): number {
  const h = readingHash(round ^ 0x5bd1e995, device);
  if (h % 53 === 0) return 75.5;
  if (h % 59 === 1) return -25.25;
  return 20 + (h % 300) / 10;
}

/** One round's readings as tellMany columns. */
export interface RoundColumns {
  key: Int32Array;
  value: Float64Array;
  at: Float64Array;
}

export function roundReadings(round: number, devices: number): RoundColumns {
  const key = new Int32Array(devices);
  const value = new Float64Array(devices);
  let n = 0;
  for (let d = 0; d < devices; d++) {
    if (!reports(round, d)) continue;
    key[n] = d;
    value[n] = readingValue(round, d);
    n++;
  }
  return { key: key.subarray(0, n), value: value.subarray(0, n), at: new Float64Array(n).fill(roundTime(round)) };
}

/** Device states (one column per field, index = device) and region counters, as the actors hold them. */
export class FleetModel {
  readonly last: Float64Array;
  readonly lastAt: Float64Array;
  readonly min: Float64Array;
  readonly max: Float64Array;
  readonly sum: Float64Array;
  readonly count: Uint32Array;
  readonly alert: Uint32Array;
  readonly raised: Uint32Array;
  readonly checks: Uint32Array;
  /** Per region: alerts raised, of which stale / out of range, and alerts cleared. */
  readonly regionRaised: Uint32Array;
  readonly regionStale: Uint32Array;
  readonly regionRange: Uint32Array;
  readonly regionCleared: Uint32Array;
  /** Per device: the time its current activation's timer started from (NaN: not active). */
  private readonly timerBase: Float64Array;
  /** Per device: when its next check is due. */
  private readonly nextCheck: Float64Array;
  /** Checks run in total (timer ticks). */
  ticks = 0;

  constructor(readonly devices: number) {
    const f = () => new Float64Array(devices);
    const u = () => new Uint32Array(devices);
    this.last = f();
    this.lastAt = f();
    this.min = f();
    this.max = f();
    this.sum = f();
    this.count = u();
    this.alert = u();
    this.raised = u();
    this.checks = u();
    const regions = Math.ceil(devices / RULES.regionSize);
    this.regionRaised = new Uint32Array(regions);
    this.regionStale = new Uint32Array(regions);
    this.regionRange = new Uint32Array(regions);
    this.regionCleared = new Uint32Array(regions);
    this.timerBase = new Float64Array(devices).fill(Number.NaN);
    this.nextCheck = new Float64Array(devices).fill(Number.POSITIVE_INFINITY);
  }

  /** A round: the checks due by its time, then its readings. */
  round(r: number): void {
    const now = roundTime(r);
    for (let d = 0; d < this.devices; d++) {
      if (this.nextCheck[d]! <= now) this.check(d, now);
    }
    for (let d = 0; d < this.devices; d++) {
      if (!reports(r, d)) continue;
      if (Number.isNaN(this.timerBase[d]!)) this.activate(d, now);
      this.reading(d, readingValue(r, d), now);
    }
  }

  /**
   * A restart at `now`: every device that was ever active (its state is stored) is preloaded, which
   * activates it and starts its timer from `now`; the others activate on their first reading. Returns
   * how many were preloaded.
   */
  restart(now: number): number {
    let stored = 0;
    for (let d = 0; d < this.devices; d++) {
      this.timerBase[d] = Number.NaN;
      this.nextCheck[d] = Number.POSITIVE_INFINITY;
      if (this.count[d]! > 0) {
        this.activate(d, now);
        stored++;
      }
    }
    return stored;
  }

  private activate(d: number, now: number): void {
    this.timerBase[d] = now;
    this.nextCheck[d] = now + RULES.checkPeriodMs;
  }

  private reading(d: number, value: number, at: number): void {
    if (this.count[d] === 0) {
      this.min[d] = value;
      this.max[d] = value;
    } else {
      if (value < this.min[d]!) this.min[d] = value;
      if (value > this.max[d]!) this.max[d] = value;
    }
    this.sum[d] = this.sum[d]! + value;
    this.count[d] = this.count[d]! + 1;
    this.last[d] = value;
    this.lastAt[d] = at;
  }

  private check(d: number, now: number): void {
    this.ticks++;
    this.checks[d] = this.checks[d]! + 1;
    let alert = 0;
    if (this.count[d]! > 0) {
      if (now - this.lastAt[d]! > RULES.staleMs) alert += 1;
      if (this.last[d]! < RULES.low || this.last[d]! > RULES.high) alert += 2;
    }
    const region = Math.floor(d / RULES.regionSize);
    if (alert !== 0 && this.alert[d] === 0) {
      this.raised[d] = this.raised[d]! + 1;
      this.regionRaised[region] = this.regionRaised[region]! + 1;
      if (alert & 1) this.regionStale[region] = this.regionStale[region]! + 1;
      if (alert & 2) this.regionRange[region] = this.regionRange[region]! + 1;
    } else if (alert === 0 && this.alert[d] !== 0) {
      this.regionCleared[region] = this.regionCleared[region]! + 1;
    }
    this.alert[d] = alert;
    // A tick due long ago runs once, then the timer is back on its grid: the first due time after now.
    const base = this.timerBase[d]!;
    const period = RULES.checkPeriodMs;
    this.nextCheck[d] = base + (Math.floor((now - base) / period) + 1) * period;
  }

  /** Alerts raised over the fleet. */
  alertsRaised(): number {
    return this.regionRaised.reduce((a, b) => a + b, 0);
  }
}
