/**
 * A lane's timers as plain data: per actor slot, one entry per declared timer (`slot * T + timer`), each
 * its next due time and period (0: stopped) — what a GPU kernel would keep in device memory and scan
 * from its own clock. The method of every entry of column t is the class's timer t's (a constant table).
 *
 * A worker thread does not scan every entry each step: it keeps a binary min-heap of (due, entry, arm)
 * beside the table and pops what is due. Stopping or re-arming a timer leaves its old heap item behind;
 * the item's `arm` number no longer matches the entry's, so it is dropped when it surfaces.
 */
const GROW = 1024;

export class TimerTable {
  /** Declared timers per actor (T). */
  readonly perActor: number;
  private due = new Float64Array(0);
  private period = new Float64Array(0);
  /** Bumped at every start and stop of the entry: heap items carry the value they were pushed with. */
  private arm = new Uint32Array(0);
  private heapDue = new Float64Array(GROW);
  private heapEntry = new Int32Array(GROW);
  private heapArm = new Uint32Array(GROW);
  private heapSize = 0;
  /** Entries running now. */
  armed = 0;

  constructor(perActor: number) {
    this.perActor = perActor;
  }

  private ensure(entry: number): void {
    if (entry < this.due.length) return;
    const n = Math.max(GROW, this.due.length * 2, entry + 1);
    const due = new Float64Array(n);
    due.set(this.due);
    const period = new Float64Array(n);
    period.set(this.period);
    const arm = new Uint32Array(n);
    arm.set(this.arm);
    this.due = due;
    this.period = period;
    this.arm = arm;
  }

  /** Starts (or restarts) timer `t` of the actor in `slot`: due at `due`, then every `periodMs`. */
  start(slot: number, t: number, due: number, periodMs: number): void {
    const e = slot * this.perActor + t;
    this.ensure(e);
    if (this.period[e] === 0) this.armed++;
    this.due[e] = due;
    this.period[e] = periodMs;
    this.arm[e] = (this.arm[e]! + 1) >>> 0;
    this.push(due, e, this.arm[e]!);
  }

  stop(slot: number, t: number): void {
    const e = slot * this.perActor + t;
    if (e >= this.period.length || this.period[e] === 0) return;
    this.period[e] = 0;
    this.arm[e] = (this.arm[e]! + 1) >>> 0;
    this.armed--;
  }

  /** Stops every timer of the actor in `slot` (it was deactivated; the slot may be reused). */
  stopAll(slot: number): void {
    for (let t = 0; t < this.perActor; t++) this.stop(slot, t);
  }

  /** The earliest due time of a running timer (Infinity: none); drops stale heap items on the way. */
  nextDue(): number {
    while (this.heapSize > 0) {
      const e = this.heapEntry[0]!;
      if (this.heapArm[0] === this.arm[e] && this.period[e] !== 0) return this.heapDue[0]!;
      this.pop();
    }
    return Number.POSITIVE_INFINITY;
  }

  /**
   * Takes the earliest running entry due at or before `now` (-1: none): the caller runs its tick, then
   * calls `rearm` (unless the tick stopped or restarted it). Its due time is `dueOf(entry)`.
   */
  takeDue(now: number): number {
    const d = this.nextDue();
    if (d > now) return -1;
    const e = this.heapEntry[0]!;
    this.pop();
    return e;
  }

  dueOf(entry: number): number {
    return this.due[entry]!;
  }

  periodOf(entry: number): number {
    return this.period[entry]!;
  }

  armOf(entry: number): number {
    return this.arm[entry]!;
  }

  /** Schedules a fired entry at `due` (same arm: it was neither stopped nor restarted by its tick). */
  rearm(entry: number, due: number): void {
    this.due[entry] = due;
    this.push(due, entry, this.arm[entry]!);
  }

  private push(due: number, entry: number, arm: number): void {
    if (this.heapSize === this.heapDue.length) {
      const n = this.heapSize * 2;
      const d = new Float64Array(n);
      d.set(this.heapDue);
      const e = new Int32Array(n);
      e.set(this.heapEntry);
      const a = new Uint32Array(n);
      a.set(this.heapArm);
      this.heapDue = d;
      this.heapEntry = e;
      this.heapArm = a;
    }
    const hd = this.heapDue;
    const he = this.heapEntry;
    const ha = this.heapArm;
    let i = this.heapSize++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (hd[p]! <= due) break;
      hd[i] = hd[p]!;
      he[i] = he[p]!;
      ha[i] = ha[p]!;
      i = p;
    }
    hd[i] = due;
    he[i] = entry;
    ha[i] = arm;
  }

  private pop(): void {
    const hd = this.heapDue;
    const he = this.heapEntry;
    const ha = this.heapArm;
    const n = --this.heapSize;
    if (n === 0) return;
    const due = hd[n]!;
    const entry = he[n]!;
    const arm = ha[n]!;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && hd[c + 1]! < hd[c]!) c++;
      if (hd[c]! >= due) break;
      hd[i] = hd[c]!;
      he[i] = he[c]!;
      ha[i] = ha[c]!;
      i = c;
    }
    hd[i] = due;
    he[i] = entry;
    ha[i] = arm;
  }
}
