/**
 * Write-behind for one grain class (`register(Grain, { storage })`): the host's record of which actors
 * the kernel holds and at which stored version, the bytes waiting to be written, loads on first
 * activation, preloads and flushes. The kernel owns the states and their dirty marks (backend.ts
 * readDirty); this side owns versions and the store.
 *
 * Invariants:
 * - A flush reads the dirty states out (clearing the kernel's marks in the same step) into `pending`
 *   before it writes; a turn after that marks the actor again, so an update landing during a flush is
 *   written by the next one. Flushes of one class run one at a time.
 * - A row leaves `pending` only when the store committed exactly those bytes; a version conflict or a
 *   failed write keeps it (reported as a `storageError`), and every later flush tries it again.
 * - An actor deactivated with unwritten bytes is loaded back from those bytes, never from the store.
 */
import type { Logger } from 'pino';
import type { ActorKey, BackendKernel, EvictedStates, LaneLoadPlan, StateBatch } from '../backend.ts';
import type { GrainDef } from '../grain.ts';
import { StateFencedError, StateLoadError, StateVersionConflictError } from '../store/errors.ts';
import { partitionOf } from '../cluster/partition.ts';
import { scanPages } from '../store/scan.ts';
import { copyBytes } from '../store/chunk.ts';
import type { StateRead, StateStore, StateTable } from '../store/types.ts';

interface ActorRecord {
  readonly key: ActorKey;
  /** The stored version the next write expects (0: never stored). */
  version: number;
  /** The kernel holds the actor (or is about to: its load is under way). */
  resident: boolean;
  /**
   * Bytes not yet committed to the store: the state at `at` of this buffer (the kernel's batch it came in, which
   * the kernel never reuses), not a view per row (a flush of 1,000,000 rows made as many views for the collector).
   */
  pending: Uint8Array | undefined;
  at: number;
  /** Bumped by every setPending: a flush tells by it whether the bytes it wrote are still the latest. */
  gen: number;
  /** In `unwritten` (set with `pending`; cleared by the flush that commits the bytes). */
  queued: boolean;
}

function record(key: ActorKey, version: number, resident: boolean): ActorRecord {
  return { key, version, resident, pending: undefined, at: 0, gen: 0, queued: false };
}

export type StorageOp = 'flush' | 'load' | 'preload' | 'reminder';

export interface StorageErrorEvent {
  readonly grain: string;
  readonly op: StorageOp;
  readonly error: Error;
  /** The actors concerned (a conflict: the one key; a failed write: the rows it kept dirty). */
  readonly keys: readonly ActorKey[];
}

export interface StorageMetrics {
  /** Actors the host knows the kernel holds. */
  resident: number;
  /** Actors whose latest state is not in the store yet (read out of the kernel, not committed). */
  unwritten: number;
  flushes: number;
  rowsWritten: number;
  /** Actors loaded on first activation, and how many of those had a stored state. */
  loads: number;
  loadedFound: number;
  /** Of `loads`, those the kernel's consumers read from the store themselves (no hop through the host). */
  laneLoads: number;
  preloaded: number;
  conflicts: number;
  /**
   * Rows a fenced store refused (cluster: this silo was a stale owner of their partitions; their bytes are dropped).
   */
  fenced: number;
  /** Store failures (unreachable, full, decode) of any operation. */
  errors: number;
  deactivated: number;
}

/** What a flush did: rows committed, and rows it had to keep unwritten (a conflict, a failed write). */
export interface FlushResult {
  readonly written: number;
  readonly kept: number;
}

/**
 * Words of the shared guard a kernel's consumers check before loading an actor from the store themselves
 * (PersistencePlan.laneLoad): they may while PENDING is 0 (no row waits to be written: the store holds
 * every state the host has) and EMITTED equals ABSORBED (every row a consumer handed over, read out or
 * evicted, has reached `pending`). A consumer adds to EMITTED before it hands rows over; the host adds to
 * ABSORBED after they are in `pending`. Rows handed over and lost (a kernel gone) keep the two apart for
 * good: that kernel's loads then all go through the host, which is always safe. LOADS and FOUND count
 * the consumers' own loads (and those with a stored state) as they happen, for metrics().
 */
export const LANE_GUARD = { pending: 0, emitted: 1, absorbed: 2, loads: 3, found: 4, words: 8 } as const;

/**
 * Cluster fencing of this class's writes (set by the cluster router): its keys fall in `partitions`
 * partitions, and `epochs[p]` is the epoch this silo claimed partition p under (0: never claimed here).
 * Every flushed row carries its partition's epoch; the store refuses rows below the newest claim.
 */
export interface WriteFence {
  readonly partitions: number;
  readonly epochs: Float64Array;
}

export class WriteBehind {
  private readonly records = new Map<ActorKey, ActorRecord>();
  /** Records removed so far (forget). */
  private removed = 0;
  /**
   * The records with unwritten bytes, each once (ActorRecord.queued): a flush walks them without a
   * lookup by key. A Set of keys cost a flush of 1,000,000 rows four hash operations a row (add, then a
   * get of the record, a get after the write, the delete), most of the host's time in a flush.
   */
  private unwritten: ActorRecord[] = [];
  private chain: Promise<FlushResult> = Promise.resolve({ written: 0, kept: 0 });
  /**
   * A flush's read of the dirty states is under way: each lane answers on its own, and the batch is absorbed
   * once every lane has, so a lane's deactivations after its answer (sent after it, on the same port) reach
   * `evicted` before the batch: their bytes are newer than the batch's. Records evicted meanwhile are kept
   * (listed here) until the batch is absorbed, so that it finds their versions.
   */
  private reading = 0;
  private evictedWhileReading: ActorRecord[] = [];
  private flushSoon = false;
  private readonly stride: number;
  readonly counts: Omit<StorageMetrics, 'resident' | 'unwritten' | 'laneLoads'> = {
    flushes: 0,
    rowsWritten: 0,
    loads: 0,
    loadedFound: 0,
    preloaded: 0,
    conflicts: 0,
    fenced: 0,
    errors: 0,
    deactivated: 0,
  };
  /** Cluster fencing of the writes (undefined: not in a cluster, or the store cannot fence). */
  fence: WriteFence | undefined;

  constructor(
    private readonly def: GrainDef,
    readonly store: StateStore,
    readonly table: StateTable,
    private readonly kernel: () => BackendKernel | undefined,
    private readonly report: (e: StorageErrorEvent) => void,
    private readonly logger: Logger,
  ) {
    this.stride = table.spec.stateSize ?? 0;
    const reader = table.spec.keyKind === 'int' && this.stride > 0 ? store.laneReader?.(table.spec) : undefined;
    this.laneLoad = reader && { reader, guard: new Int32Array(new SharedArrayBuffer(LANE_GUARD.words * 4)) };
  }

  /** What lets a kernel's consumers load actors from the store themselves (undefined: the store cannot). */
  readonly laneLoad: LaneLoadPlan | undefined;

  /** `unwritten` changed: publish whether any row waits to be written. */
  private guardPending(): void {
    if (this.laneLoad) Atomics.store(this.laneLoad.guard, LANE_GUARD.pending, this.unwritten.length);
  }

  /** Rows a consumer handed over are in `pending` now. */
  private guardAbsorbed(rows: number): void {
    if (this.laneLoad && rows) Atomics.add(this.laneLoad.guard, LANE_GUARD.absorbed, rows);
  }

  metrics(): StorageMetrics {
    let resident = 0;
    for (const r of this.records.values()) if (r.resident) resident++;
    const g = this.laneLoad?.guard;
    const lane = g ? Atomics.load(g, LANE_GUARD.loads) : 0;
    const found = g ? Atomics.load(g, LANE_GUARD.found) : 0;
    return {
      resident,
      unwritten: this.unwritten.length,
      ...this.counts,
      loads: this.counts.loads + lane,
      loadedFound: this.counts.loadedFound + found,
      laneLoads: lane,
    };
  }

  /** Whether the store can claim partitions (fence a cluster's writes). */
  get canFence(): boolean {
    return typeof this.table.claim === 'function';
  }

  /** Cluster: takes partitions in the store (StateTable.claim); undefined when the store cannot fence. */
  claim(partitions: ArrayLike<number>, epochs: ArrayLike<number>): Promise<Float64Array> | undefined {
    return this.table.claim?.(partitions, epochs);
  }

  // ---- from the kernel ----------------------------------------------------------------------------

  /**
   * The kernel parked messages of actors it does not hold: upload their states (unwritten bytes first, else the
   * store's).
   */
  load(keys: readonly ActorKey[]): void {
    const local: ActorRecord[] = [];
    const read: ActorKey[] = [];
    // The records of `read`, looked up once here (readStates sets their versions without a second lookup).
    const recs: ActorRecord[] = [];
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      let rec = this.records.get(key);
      if (rec?.pending) {
        rec.resident = true;
        local.push(rec);
      } else {
        if (rec) rec.resident = true;
        else this.records.set(key, (rec = record(key, 0, true)));
        read.push(key);
        recs.push(rec);
      }
    }
    this.counts.loads += keys.length;
    if (local.length) {
      const bytes = new Uint8Array(local.length * this.stride);
      for (let i = 0; i < local.length; i++) {
        const r = local[i]!;
        bytes.set(r.pending!.subarray(r.at, r.at + this.stride), i * this.stride);
      }
      this.counts.loadedFound += local.length;
      this.upload({
        keys: local.map((r) => r.key),
        bytes,
        stride: this.stride,
        found: new Uint8Array(local.length).fill(1),
        mode: 'load',
      });
    }
    if (read.length === 0) return;
    this.readStates(read, recs).then(
      (r) => this.upload({ ...r, mode: 'load' }),
      (e: unknown) => {
        for (const k of read) {
          const rec = this.records.get(k);
          if (rec && !rec.pending) this.forget(k);
        }
        const error = new StateLoadError(this.store.kind, this.def.name, read, e);
        this.fail('load', error, read);
        this.upload({
          keys: [],
          bytes: new Uint8Array(0),
          stride: this.stride,
          found: new Uint8Array(0),
          mode: 'load',
          failed: { keys: read, error: error.message, failure: error.failureId },
        });
      },
    );
  }

  /** The kernel loaded actors from the store itself: record them as resident at those versions. */
  laneLoaded(keys: readonly ActorKey[], versions: Float64Array): void {
    for (const [i, key] of keys.entries()) {
      const v = versions[i]!;
      const rec = this.records.get(key);
      // A record with unwritten bytes cannot exist here: the consumer loads only while nothing is pending.
      if (rec) {
        rec.resident = true;
        if (!rec.pending) rec.version = v;
      } else this.records.set(key, record(key, v, true));
    }
  }

  /** The kernel deactivated actors: their final bytes wait to be written if they changed. */
  evicted(batch: EvictedStates): void {
    let dirty = 0;
    for (let i = 0; i < batch.keys.length; i++) {
      const key = batch.keys[i]!;
      const rec = this.records.get(key);
      if (batch.dirty[i]) {
        let r = rec;
        if (r) r.resident = false;
        else this.records.set(key, (r = record(key, 0, false)));
        this.setPending(r, batch.bytes, i * batch.stride); // as in absorb
        dirty++;
      } else if (rec) {
        rec.resident = false;
        if (this.reading) this.evictedWhileReading.push(rec);
        else if (!rec.pending) this.forget(key);
      }
    }
    this.counts.deactivated += batch.keys.length;
    this.guardPending();
    this.guardAbsorbed(dirty);
    // Deactivation flushes: soon, in one batch with the other actors deactivated meanwhile.
    if (dirty && !this.flushSoon) {
      this.flushSoon = true;
      setImmediate(() => {
        this.flushSoon = false;
        void this.flush();
      });
    }
  }

  // ---- from the application -------------------------------------------------------------------------

  /**
   * Reads the dirty states out of the kernel and writes every unwritten row in one putMany (one per
   * conflict found: a conflicting row is reported, kept, and left out of the retry).
   */
  flush(): Promise<FlushResult> {
    const run = () => this.flushOnce();
    this.chain = this.chain.then(run, run);
    return this.chain;
  }

  /**
   * Uploads stored states into the kernel before any message asks for them: `keys`, or every stored actor. Resolves to
   * how many were uploaded.
   */
  async preload(keys?: readonly ActorKey[]): Promise<number> {
    const k = this.kernel();
    if (!k?.writeStates) return 0;
    let n = 0;
    try {
      if (keys) {
        const fresh = keys.filter((key) => !this.records.has(key));
        if (fresh.length) {
          // Only stored actors: one with no state activates on its first message as usual.
          const r = await this.readStates(fresh);
          const rows = fresh.flatMap((_, i) => (r.found[i] ? [i] : []));
          const found = rows.map((i) => fresh[i]!);
          const bytes = new Uint8Array(rows.length * this.stride);
          rows.forEach((row, i) =>
            bytes.set(r.bytes.subarray(row * this.stride, (row + 1) * this.stride), i * this.stride),
          );
          if (found.length)
            n += await this.preloadRows(found, {
              keys: found,
              bytes,
              stride: this.stride,
              found: new Uint8Array(found.length).fill(1),
              versions: Float64Array.from(rows, (i) => r.versions[i]!),
            });
        }
      } else {
        for await (const page of scanPages(this.table)) {
          const m = page.keys.length;
          const fresh: ActorKey[] = [];
          const rows: number[] = [];
          for (let i = 0; i < m; i++) {
            if (this.records.has(page.keys[i]!)) continue;
            fresh.push(page.keys[i]!);
            rows.push(i);
          }
          if (fresh.length === 0) continue;
          const stride = this.stride;
          // Every row of the page, each `stride` bytes: its bytes and versions as they are (no copy per row).
          const whole = fresh.length === m && page.offsets[m] === m * stride;
          const bytes = whole ? page.bytes.subarray(0, m * stride) : new Uint8Array(fresh.length * stride);
          const versions = whole ? page.versions : new Float64Array(fresh.length);
          if (!whole)
            rows.forEach((r, i) => {
              bytes.set(page.bytes.subarray(page.offsets[r]!, page.offsets[r + 1]!), i * stride);
              versions[i] = page.versions[r]!;
            });
          // No record of `fresh` exists (looked up just now, nothing awaited since).
          n += await this.preloadRows(
            fresh,
            { keys: fresh, bytes, stride, found: new Uint8Array(fresh.length).fill(1), versions },
            true,
          );
        }
      }
    } catch (e) {
      this.fail('preload', e as Error, keys ?? []);
      throw e;
    }
    this.counts.preloaded += n;
    return n;
  }

  // ---- internals ----------------------------------------------------------------------------------

  /** `absent`: the caller knows no record of `keys` exists (no lookup before each is made). */
  private async preloadRows(keys: ActorKey[], r: LoadedRows, absent = false): Promise<number> {
    const k = this.kernel();
    if (!k?.writeStates) return 0;
    // Records first: the kernel reports through `evicted` the rows it had no room for (or held already).
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (absent || !this.records.has(key)) this.records.set(key, record(key, r.versions[i]!, true));
    }
    await k.writeStates({ keys: r.keys, bytes: r.bytes, stride: r.stride, found: r.found, mode: 'preload' });
    return keys.length;
  }

  /**
   * The stored states of `keys` packed at the layout's stride; with `recs` (a load: the keys' records, as looked up
   * when it asked), their versions recorded.
   */
  private async readStates(keys: readonly ActorKey[], recs?: readonly ActorRecord[]): Promise<LoadedRows> {
    const removed = this.removed;
    const read: StateRead = await this.table.getMany(this.keyColumn(keys) as never);
    const n = keys.length;
    const stride = this.stride;
    // Every row stored, each `stride` bytes: the read's bytes are the rows packed already (no copy).
    const packed = read.found === n && read.offsets[n] === n * stride;
    const bytes = packed ? read.bytes.subarray(0, n * stride) : new Uint8Array(n * stride);
    const found = new Uint8Array(n);
    // No record was removed while the store read: each of `recs` is still its key's record.
    const same = recs !== undefined && removed === this.removed;
    for (let i = 0; i < n; i++) {
      const v = read.versions[i]!;
      if (recs) {
        const rec = same ? recs[i] : this.records.get(keys[i]!);
        if (rec && !rec.pending) rec.version = v;
        else if (!rec) this.records.set(keys[i]!, record(keys[i]!, v, true));
      }
      if (v === 0) continue;
      found[i] = 1;
      if (recs) this.counts.loadedFound++;
      if (!packed) bytes.set(read.bytes.subarray(read.offsets[i]!, read.offsets[i + 1]!), i * stride);
    }
    return { keys, bytes, stride, found, versions: read.versions };
  }

  /** Drops a key's record (counted: readStates tells whether its records are still the live ones). */
  private forget(key: ActorKey): void {
    this.removed++;
    this.records.delete(key);
  }

  private upload(u: Parameters<NonNullable<BackendKernel['writeStates']>>[0]): void {
    const k = this.kernel();
    if (!k?.writeStates) return;
    k.writeStates(u).catch((e: unknown) =>
      this.logger.warn(
        { err: e, grain: this.def.name },
        `${this.def.name}: uploading states into the kernel failed: ${(e as Error)?.message}`,
      ),
    );
  }

  private keyColumn(keys: readonly ActorKey[]): Float64Array | string[] {
    return this.def.keyKind === 'string' ? (keys as string[]).slice() : Float64Array.from(keys as number[]);
  }

  private absorb(d: StateBatch): void {
    // The batch's buffer (fresh per batch, never reused by the kernel) and each row's offset, not a copy per row:
    // a flush of 1,000,000 dirty rows made as many small ArrayBuffers for the collector.
    const n = d.keys.length;
    for (let i = 0; i < n; i++) {
      const key = d.keys[i]!;
      let rec = this.records.get(key);
      // Deactivated after its lane answered the read (else the lane would not have held it, or a load would
      // have made it resident again): the bytes the deactivation left are the newer ones.
      if (rec && !rec.resident && rec.pending) continue;
      if (!rec) this.records.set(key, (rec = record(key, 0, true)));
      this.setPending(rec, d.bytes, i * d.stride);
    }
    this.guardPending();
    this.guardAbsorbed(d.keys.length);
  }

  /** The state at `at` of `bytes` is the record's latest unwritten one. */
  private setPending(rec: ActorRecord, bytes: Uint8Array, at: number): void {
    rec.pending = bytes;
    rec.at = at;
    rec.gen++;
    if (rec.queued) return;
    rec.queued = true;
    this.unwritten.push(rec);
  }

  private async flushOnce(): Promise<FlushResult> {
    const k = this.kernel();
    if (k?.readDirty) {
      this.reading++;
      try {
        this.absorb(await k.readDirty());
      } catch (e) {
        // A faulted or released kernel: what it had not given us is gone with it (the fault is reported on
        // its own; a released one was deactivated and flushed at terminate first). A live, healthy one that
        // failed to hand its dirty rows over is a storage failure the user must see.
        if (this.kernel() !== k || k.health().fault)
          this.logger.debug({ err: e, grain: this.def.name }, `${this.def.name}: reading dirty states failed`);
        else this.fail('flush', e as Error, []);
      } finally {
        if (--this.reading === 0) {
          for (const r of this.evictedWhileReading)
            if (!r.resident && !r.pending && this.records.get(r.key) === r) this.forget(r.key);
          this.evictedWhileReading = [];
        }
      }
    }
    // A record with unwritten bytes stays in `records` (only one without is ever deleted) and in
    // `unwritten` until a flush commits its latest bytes: the records taken here are the live ones.
    let recs = this.unwritten.slice();
    if (recs.length === 0) return { written: 0, kept: 0 };
    const total = recs.length;
    this.counts.flushes++;
    while (recs.length) {
      const rows = recs.map((r) => r.key);
      const stride = this.stride;
      const gens = new Float64Array(recs.length);
      const bytes = new Uint8Array(recs.length * stride);
      const expected = new Float64Array(recs.length);
      for (let i = 0; i < recs.length; i++) {
        const rec = recs[i]!;
        gens[i] = rec.gen;
        copyBytes(bytes, i * stride, rec.pending!, rec.at, rec.at + stride);
        expected[i] = rec.version;
      }
      const fence = this.fence && fenceOf(this.fence, rows);
      try {
        const versions = await this.table.putMany({
          keys: this.keyColumn(rows) as never,
          expected,
          states: { bytes, stride: this.stride },
          ...(fence ? { fence } : {}),
        });
        for (let i = 0; i < recs.length; i++) {
          const rec = recs[i]!;
          rec.version = versions[i]!;
          if (rec.gen !== gens[i]) continue; // newer bytes arrived meanwhile: the next flush writes them
          rec.pending = undefined;
          rec.queued = false;
          if (!rec.resident) this.forget(rec.key);
        }
        // Those still queued: kept by a conflict, newer bytes, or queued while the write ran (in order).
        this.unwritten = this.unwritten.filter((r) => r.queued);
        this.guardPending();
        this.counts.rowsWritten += recs.length;
        return { written: recs.length, kept: total - recs.length };
      } catch (e) {
        if (e instanceof StateVersionConflictError && rows[e.row] !== undefined) {
          this.counts.conflicts++;
          this.fail('flush', e, [rows[e.row]!]);
          recs = recs.filter((_, i) => i !== e.row);
          continue;
        }
        if (e instanceof StateFencedError && fence && rows[e.row] !== undefined) {
          // A stale owner: another silo claimed the partition and loaded its actors from the store. This
          // silo's bytes for every row of that partition are not the newest: dropped, counted, reported.
          const drop = recs.filter((_, i) => fence.partitions[i] === e.partition);
          this.counts.fenced += drop.length;
          for (const r of drop) {
            r.pending = undefined;
            r.queued = false;
            if (!r.resident) this.forget(r.key);
          }
          this.unwritten = this.unwritten.filter((r) => r.queued);
          this.guardPending();
          this.fail(
            'flush',
            e,
            drop.map((r) => r.key),
          );
          recs = recs.filter((_, i) => fence.partitions[i] !== e.partition);
          continue;
        }
        this.fail('flush', e as Error, rows);
        return { written: 0, kept: total };
      }
    }
    return { written: 0, kept: total };
  }

  private fail(op: StorageOp, error: Error, keys: readonly ActorKey[]): void {
    if (!(error instanceof StateVersionConflictError) && !(error instanceof StateFencedError)) this.counts.errors++;
    this.report({ grain: this.def.name, op, error, keys });
  }
}

/** Each row's partition and the epoch this silo claimed it under (reminder writes carry it too). */
export function fenceOf(f: WriteFence, keys: readonly ActorKey[]): { partitions: Uint32Array; epochs: Float64Array } {
  const partitions = new Uint32Array(keys.length);
  const epochs = new Float64Array(keys.length);
  for (let i = 0; i < keys.length; i++) {
    const p = partitionOf(keys[i]!, f.partitions);
    partitions[i] = p;
    epochs[i] = f.epochs[p]!;
  }
  return { partitions, epochs };
}

interface LoadedRows {
  readonly keys: readonly ActorKey[];
  readonly bytes: Uint8Array;
  readonly stride: number;
  readonly found: Uint8Array;
  readonly versions: Float64Array;
}
