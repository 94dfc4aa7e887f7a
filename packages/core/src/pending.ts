import type { MethodDef } from './grain.ts';
import type { RingKernel } from './kernel.ts';
import { laneOfKey } from './lanes.ts';

export interface PendingAsk {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  kernel: RingKernel;
  /** The kernel lane that owes the reply's first step (its heartbeat is watched while the ask waits). */
  lane: number;
  method: MethodDef;
  deadline: number;
  /** askMany's rows share one entry (no closure or object per row): the row is corr - batch.corrBase. */
  batch?: AskBatch;
  /** The ask's `into`: caller arrays the reply's numeric array fields are decoded into. */
  into?: Readonly<Record<string, unknown>>;
}

/** One askMany call on the fast path: its rows' correlation ids are corrBase + row. */
export interface AskBatch {
  readonly corrBase: number;
  readonly n: number;
  readonly key: ArrayLike<number>;
  readonly lanes: number;
  ok(row: number, reply: unknown): void;
  fail(row: number, error: Error): void;
  /**
   * The fast path's reply columns, one per reply field in schema order: a reply is decoded straight
   * into row `row` (no object per row), then `okInPlace(row)`.
   */
  readonly columns?: Array<{ [row: number]: unknown }>;
  okInPlace?(row: number): void;
}

/** A batch while some of its rows wait: which have settled, how many wait, and on which lanes. */
interface LiveBatch {
  readonly entry: PendingAsk & { batch: AskBatch };
  readonly settled: Uint8Array;
  left: number;
  /** Rows still waiting per kernel lane (the sweep watches a lane's heartbeat only while it owes replies). */
  readonly perLane: Int32Array;
}

/**
 * The asks that wait for a reply, by correlation id. Single asks are map entries; an askMany batch is
 * one range of ids with a settled mark per row, not a map entry per row: 100,000 rows were 200,000 map
 * operations and a sweep over 100,000 entries every 50 ms (the largest host cost of askMany, profiled).
 * Map-like: get / has / delete / size / iteration see every waiting row of a batch as its own entry.
 */
export class PendingAsks {
  private readonly singles = new Map<number, PendingAsk>();
  private batches: LiveBatch[] = [];
  private batchRows = 0;

  get size(): number {
    return this.singles.size + this.batchRows;
  }

  set(corr: number, p: PendingAsk): void {
    this.singles.set(corr, p);
  }

  /** Every row of `entry.batch` waits, with ids corrBase .. corrBase + n - 1 (none of them in use). */
  addBatch(entry: PendingAsk & { batch: AskBatch }): void {
    const b = entry.batch;
    if (b.n === 0) return;
    const perLane = new Int32Array(b.lanes);
    for (let i = 0; i < b.n; i++) perLane[laneOfKey(b.key[i]!, b.lanes)]!++;
    this.batches.push({ entry, settled: new Uint8Array(b.n), left: b.n, perLane });
    this.batchRows += b.n;
  }

  get(corr: number): PendingAsk | undefined {
    const s = this.singles.get(corr);
    if (s) return s;
    const lb = this.batchOf(corr);
    return lb && lb.settled[corr - lb.entry.batch.corrBase] === 0 ? lb.entry : undefined;
  }

  has(corr: number): boolean {
    return this.get(corr) !== undefined;
  }

  /** Removes a waiting ask (a batch row is marked settled); false if none waits under `corr`. */
  delete(corr: number): boolean {
    if (this.singles.delete(corr)) return true;
    const lb = this.batchOf(corr);
    if (!lb) return false;
    const b = lb.entry.batch;
    const row = corr - b.corrBase;
    if (lb.settled[row] !== 0) return false;
    lb.settled[row] = 1;
    lb.perLane[laneOfKey(b.key[row]!, b.lanes)]!--;
    this.batchRows--;
    if (--lb.left === 0) this.batches = this.batches.filter((x) => x !== lb);
    return true;
  }

  /** Asks that wait on `kernel`. */
  countOf(kernel: RingKernel): number {
    let n = 0;
    for (const p of this.singles.values()) if (p.kernel === kernel) n++;
    for (const lb of this.batches) if (lb.entry.kernel === kernel) n += lb.left;
    return n;
  }

  /** Asks that wait on each lane of `kernel`. */
  perLaneOf(kernel: RingKernel, lanes: number): number[] {
    const out = new Array<number>(lanes).fill(0);
    for (const p of this.singles.values()) if (p.kernel === kernel && p.lane < lanes) out[p.lane]!++;
    for (const lb of this.batches) {
      if (lb.entry.kernel !== kernel) continue;
      lb.perLane.forEach((c, l) => {
        if (l < lanes) out[l]! += c;
      });
    }
    return out;
  }

  /** Waiting asks whose deadline has passed (a batch's rows share its deadline). */
  expired(now: number): Array<[number, PendingAsk]> {
    const out: Array<[number, PendingAsk]> = [];
    for (const [corr, p] of this.singles) if (now > p.deadline) out.push([corr, p]);
    for (const lb of this.batches) if (now > lb.entry.deadline) this.rowsOf(lb, out);
    return out;
  }

  /** Every waiting ask (each waiting batch row on its own), as of the call: safe to delete while iterating. */
  *[Symbol.iterator](): IterableIterator<[number, PendingAsk]> {
    const out: Array<[number, PendingAsk]> = [...this.singles];
    for (const lb of this.batches) this.rowsOf(lb, out);
    yield* out;
  }

  private rowsOf(lb: LiveBatch, out: Array<[number, PendingAsk]>): void {
    const base = lb.entry.batch.corrBase;
    for (let i = 0; i < lb.settled.length; i++) if (lb.settled[i] === 0) out.push([base + i, lb.entry]);
  }

  /** The live batch whose id range holds `corr` (a few at a time: a scan). */
  private batchOf(corr: number): LiveBatch | undefined {
    for (const lb of this.batches) {
      const b = lb.entry.batch;
      if (corr >= b.corrBase && corr < b.corrBase + b.n) return lb;
    }
    return undefined;
  }
}

/** Settles one pending ask (a row of a batch, or a single ask). */
export function resolveAsk(corr: number, p: PendingAsk, v: unknown): void {
  if (p.batch) p.batch.ok(corr - p.batch.corrBase, v);
  else p.resolve(v);
}
export function rejectAsk(corr: number, p: PendingAsk, e: Error): void {
  if (p.batch) p.batch.fail(corr - p.batch.corrBase, e);
  else p.reject(e);
}
/** The kernel lane that owes an ask's reply (a batch row's from its key). */
export function laneOfAsk(corr: number, p: PendingAsk): number {
  return p.batch ? laneOfKey(p.batch.key[corr - p.batch.corrBase]!, p.batch.lanes) : p.lane;
}
