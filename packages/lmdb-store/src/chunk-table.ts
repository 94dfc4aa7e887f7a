import type { Database } from 'lmdb';
import {
  CHUNK,
  ChunkWriter,
  StateDecodeError,
  chunkOf,
  copyBytes,
  forEachChunk,
  mergeDelete,
  mergePut,
  parseChunk,
  rowOf,
  slotAt,
  spans,
  stateEnd,
  stateStart,
  versionAt,
  epochAt,
  type Chunk,
  type ChunkConflict,
  StateReadBuilder,
  StateVersionConflictError,
  checkDelete,
  checkKeys,
  checkScanLimit,
  checkPut,
  keyOrder,
  type DeleteBatch,
  type KeyColumn,
  type PutBatch,
  type ScanOptions,
  type StateEntry,
  type StatePage,
  type StateRead,
  type StateTable,
  type StateTableSpec,
} from '@ringgrain/core/store';
import type { LmdbFences } from './fences.ts';
import { KIND, writeError } from './errors.ts';

/** The chunk holding `key` (null: none). The view is valid until the next read of `db`. */
export function readChunk(db: Database<Buffer, number>, table: string, key: number): Chunk | null {
  const raw = db.getBinaryFast(chunkOf(key));
  if (raw === undefined) return null;
  // lmdb-js reuses one buffer for every read and sets its `length` to the value's size.
  const c = parseChunk(raw.subarray(0, raw.length));
  if (typeof c === 'string') throw new StateDecodeError(KIND, table, key, c);
  return c;
}

/** A stored row's version and size, as the table's spec wants them (else StateDecodeError). */
export function checkRow(spec: StateTableSpec, key: number, version: number, size: number): void {
  if (!Number.isSafeInteger(version) || version < 1)
    throw new StateDecodeError(KIND, spec.name, key, `version ${version} is not an integer ≥ 1`);
  const want = spec.stateSize;
  if (want !== undefined && size !== want)
    throw new StateDecodeError(KIND, spec.name, key, `a state of ${size} bytes; the table's states are ${want} bytes`);
}

/** One actor's row, read in the current read transaction (ChunkTable.get, and a kernel thread's lane-reader.ts). */
export function readRow(db: Database<Buffer, number>, spec: StateTableSpec, key: number): StateEntry | undefined {
  const c = readChunk(db, spec.name, key);
  const r = c ? rowOf(c, key - chunkOf(key) * CHUNK) : -1;
  if (r < 0) return undefined;
  const version = versionAt(c!, r);
  const s = stateStart(c!, r);
  const e = stateEnd(c!, r);
  checkRow(spec, key, version, e - s);
  // A plain Uint8Array copy (the chunk is lmdb-js's reused read buffer, a Buffer).
  const state = new Uint8Array(e - s);
  state.set(c!.buf.subarray(s, e));
  const epoch = c!.epochsAt === 0 ? undefined : epochAt(c!, r);
  return epoch === undefined ? { version, state } : { version, state, epoch };
}

interface Owner {
  root(what: string): unknown;
}

/**
 * An int-keyed grain class as one LMDB database of chunks (chunk.ts): 64 consecutive keys to an entry.
 * A write transaction reads each chunk it touches once, merges the batch's rows into it (checking each
 * row's expected version) and writes it back; the first conflict aborts the transaction.
 */
export class ChunkTable implements StateTable<number> {
  private readonly writer = new ChunkWriter();

  constructor(
    private readonly owner: Owner,
    private readonly db: Database<Buffer, number>,
    readonly spec: StateTableSpec,
    private readonly fences: () => LmdbFences,
  ) {}

  async claim(partitions: ArrayLike<number>, epochs: ArrayLike<number>): Promise<Float64Array> {
    this.owner.root('claim');
    return this.fences().claim(this.spec, partitions, epochs);
  }

  async claimed(partitions: ArrayLike<number>): Promise<Float64Array> {
    this.owner.root('claimed');
    return this.fences().read(this.spec, partitions);
  }

  /**
   * Reads see the latest commit: lmdb-js keeps a read snapshot until a timer tick, so without this a read
   * right after another handle's or process's commit (same turn of the event loop) could miss it.
   */
  private fresh(): void {
    this.db.resetReadTxn();
  }

  /** The chunk holding `key` (null: none). The view is valid until the next read of this database. */
  private chunk(key: number): Chunk | null {
    return readChunk(this.db, this.spec.name, key);
  }

  private readonly check = (key: number, version: number, size: number): void =>
    checkRow(this.spec, key, version, size);

  async get(key: number): Promise<StateEntry | undefined> {
    this.owner.root('get');
    this.fresh();
    checkKeys(KIND, this.spec, [key]);
    return readRow(this.db, this.spec, key);
  }

  async put(key: number, state: Uint8Array, expected: number): Promise<number> {
    return (await this.putMany({ keys: [key], expected: [expected], states: [state] }))[0]!;
  }

  async delete(key: number, expected?: number): Promise<boolean> {
    return (
      (await this.deleteMany(expected === undefined ? { keys: [key] } : { keys: [key], expected: [expected] })) === 1
    );
  }

  async getMany(keys: KeyColumn<number>): Promise<StateRead> {
    this.owner.root('getMany');
    this.fresh();
    const n = checkKeys(KIND, this.spec, keys);
    const out = new StateReadBuilder(n, n * (this.spec.stateSize ?? 32));
    let cid = Number.NaN;
    let c: Chunk | null = null;
    // Where the last search in chunk c stopped, and for which slot: keys ascending in a chunk search on from there
    // (a dense chunk's 64 rows once, not up to 64 compares a key).
    let from = 0;
    let last = -1;
    // Keys out of order revisit chunks: keep a copy of each one read (a view of lmdb-js's read buffer
    // lasts only until the next read).
    let seen: Map<number, Chunk | null> | undefined;
    for (let i = 0; i < n; i++) {
      const key = keys[i]!;
      if (chunkOf(key) !== cid) {
        cid = chunkOf(key);
        if (i > 0 && key < keys[i - 1]!) seen ??= new Map();
        if (seen === undefined) c = this.chunk(key);
        else if (seen.has(cid)) c = seen.get(cid)!;
        else {
          const read = this.chunk(key);
          c = read && (parseChunk(Uint8Array.prototype.slice.call(read.buf)) as Chunk);
          seen.set(cid, c);
        }
      }
      const slot = key - cid * CHUNK;
      let r = -1;
      if (c) {
        if (slot <= last || i === 0 || chunkOf(keys[i - 1]!) !== cid) from = 0;
        while (from < c.n && slotAt(c, from) < slot) from++;
        if (from < c.n && slotAt(c, from) === slot) r = from;
        last = slot;
      }
      if (r < 0) {
        out.missing();
        continue;
      }
      const s = stateStart(c!, r);
      const e = stateEnd(c!, r);
      const version = versionAt(c!, r);
      this.check(key, version, e - s);
      const at = out.reserve(e - s); // may grow out.bytes
      copyBytes(out.bytes, at, c!.buf, s, e);
      out.found(version, e - s);
    }
    return out.read();
  }

  async putMany(batch: PutBatch<number>): Promise<Float64Array> {
    this.owner.root('putMany');
    const n = checkPut(KIND, this.spec, batch);
    const order = keyOrder(KIND, this.spec, batch.keys);
    const { keys, expected } = batch;
    const sp = spans(batch.states);
    const versions = new Float64Array(n);
    const rowAt = order === null ? (j: number) => j : (j: number) => order[j]!;
    const check = this.check;
    let conflict: ChunkConflict | undefined;
    // Opened outside the write transaction.
    const fences = batch.fence ? this.fences() : undefined;
    try {
      // transactionSync commits and flushes to disk before it returns (lmdb-js's default flags).
      this.db.transactionSync(() => {
        // Fenced (a cluster's write): checked in this transaction, so no claim lands between the check and the commit.
        fences?.check(this.spec, keys, batch.fence, n);
        const epochs = batch.fence?.epochs;
        forEachChunk(keys, n, rowAt, (cid, from, to) => {
          const merged = mergePut(
            this.writer,
            this.chunk(cid * CHUNK),
            { cid, keys, expected, rowAt, from, to, epochs },
            sp,
            versions,
            check,
          );
          if (!(merged instanceof Uint8Array)) throw (conflict = merged);
          this.db.putSync(cid, merged as Buffer);
        });
      });
    } catch (err) {
      if (conflict === undefined || err !== conflict) throw writeError(err, `putMany into "${this.spec.name}"`);
      throw new StateVersionConflictError(
        KIND,
        this.spec.name,
        keys[conflict.row],
        conflict.row,
        expected[conflict.row]!,
        conflict.found,
      );
    }
    return versions;
  }

  async deleteMany(batch: DeleteBatch<number>): Promise<number> {
    this.owner.root('deleteMany');
    const n = checkDelete(KIND, this.spec, batch);
    const order = keyOrder(KIND, this.spec, batch.keys);
    const { keys, expected } = batch;
    const rowAt = order === null ? (j: number) => j : (j: number) => order[j]!;
    let deleted = 0;
    let conflict: ChunkConflict | undefined;
    const fences = batch.fence ? this.fences() : undefined;
    try {
      this.db.transactionSync(() => {
        // Fenced: checked in this transaction, as putMany's.
        fences?.check(this.spec, keys, batch.fence, n);
        forEachChunk(keys, n, rowAt, (cid, from, to) => {
          const r = mergeDelete(
            this.writer,
            this.chunk(cid * CHUNK),
            { cid, keys, expected, rowAt, from, to },
            this.check,
          );
          if (!('deleted' in r)) throw (conflict = r);
          deleted += r.deleted;
          if (r.chunk === null) this.db.removeSync(cid);
          else if (r.chunk !== undefined) this.db.putSync(cid, r.chunk as Buffer);
        });
      });
    } catch (err) {
      if (conflict === undefined || err !== conflict) throw writeError(err, `deleteMany from "${this.spec.name}"`);
      throw new StateVersionConflictError(
        KIND,
        this.spec.name,
        keys[conflict.row],
        conflict.row,
        expected![conflict.row]!,
        conflict.found,
      );
    }
    return deleted;
  }

  async scan(opts: ScanOptions<number>): Promise<StatePage<number>> {
    this.owner.root('scan');
    this.fresh();
    const limit = checkScanLimit(KIND, this.spec, opts.limit);
    const after = opts.after;
    if (after !== undefined) checkKeys(KIND, this.spec, [after]);
    const keys: number[] = [];
    const out = new StateReadBuilder(limit, limit * (this.spec.stateSize ?? 32));
    let more = false;
    scan: for (const { key: cid, value } of this.db.getRange(after === undefined ? {} : { start: chunkOf(after) })) {
      if (typeof cid !== 'number' || !Number.isSafeInteger(cid))
        throw new StateDecodeError(KIND, this.spec.name, cid, 'a chunk key that is not an integer');
      const c = parseChunk(value);
      if (typeof c === 'string') throw new StateDecodeError(KIND, this.spec.name, cid * CHUNK, c);
      for (let r = 0; r < c.n; r++) {
        const key = cid * CHUNK + slotAt(c, r);
        if (after !== undefined && key <= after) continue;
        if (keys.length === limit) {
          more = true;
          break scan;
        }
        const s = stateStart(c, r);
        const e = stateEnd(c, r);
        this.check(key, versionAt(c, r), e - s);
        const at = out.reserve(e - s); // may grow out.bytes
        copyBytes(out.bytes, at, c.buf, s, e);
        out.found(versionAt(c, r), e - s);
        keys.push(key);
      }
    }
    const r = out.read();
    return {
      keys,
      versions: r.versions,
      bytes: r.bytes,
      offsets: r.offsets,
      next: more ? keys[keys.length - 1] : undefined,
    };
  }

  async count(): Promise<number> {
    this.owner.root('count');
    this.fresh();
    let n = 0;
    for (const { value } of this.db.getRange({})) n += value[1] ?? 0;
    return n;
  }
}
