import { getLastVersion, type Database } from 'lmdb';
import {
  StateDecodeError,
  StateReadBuilder,
  StateVersionConflictError,
  checkDelete,
  checkKeys,
  checkScanLimit,
  checkPut,
  keyOrder,
  stateAt,
  type DeleteBatch,
  type KeyColumn,
  type PutBatch,
  type ScanOptions,
  type StateEntry,
  type StateKey,
  type StatePage,
  type StateRead,
  type StateTable,
  type StateTableSpec,
} from '@ringgrain/core/store';
import type { LmdbFences } from './fences.ts';
import { KIND, writeError } from './errors.ts';

/** What a table needs of its store: the open environment, or a typed error once closed. */
interface Owner {
  root(what: string): unknown;
}

/**
 * lmdb-js's conditional writes inside a write transaction: a put or remove that applies only at
 * `ifVersion` (null: only where no entry exists) and answers whether it applied. Its type declarations
 * leave the condition out.
 */
interface ConditionalWrites {
  putSync(key: StateKey, value: Uint8Array, version: number, ifVersion: number | null): boolean;
  removeSync(key: StateKey, ifVersion?: number): boolean;
}

/** Thrown inside a write transaction to abort it on a version conflict (the row is kept aside). */
const CONFLICT = Symbol('version conflict');

/**
 * A string-keyed grain class as one LMDB database: key → state, with lmdb-js's per-entry version (stored with the
 * value, compared natively by a conditional put, so a bulk write reads nothing before it writes).
 */
export class EntryTable<K extends StateKey> implements StateTable<K> {
  constructor(
    private readonly owner: Owner,
    private readonly db: Database<Buffer, number | string>,
    readonly spec: StateTableSpec,
    private readonly fences: () => LmdbFences,
  ) {}

  /** Cluster fencing: string-keyed rows are fenced too, but keep no row epoch (StateEntry.epoch stays undefined). */
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

  /**
   * The stored version and state of `key` (undefined: none), checked; the state is a view valid until the next read.
   */
  private read(key: StateKey): { version: number; state: Buffer } | undefined {
    let state: Buffer | undefined;
    try {
      state = this.db.getBinaryFast(key);
    } catch (e) {
      // A value shorter than lmdb-js's version prefix makes it compute a negative length.
      throw new StateDecodeError(KIND, this.spec.name, key, `the value cannot be read: ${(e as Error).message}`, {
        cause: e,
      });
    }
    if (state === undefined) return undefined;
    // lmdb-js reuses one buffer for every read and sets its `length` to the value's size: take a view of exactly that.
    const size = state.length;
    return { version: this.checkRow(key, getLastVersion(), size), state: state.subarray(0, size) };
  }

  private checkRow(key: unknown, version: number, size: number): number {
    if (!Number.isSafeInteger(version) || version < 1)
      throw new StateDecodeError(KIND, this.spec.name, key, `version ${version} is not an integer ≥ 1`);
    const want = this.spec.stateSize;
    if (want !== undefined && size !== want)
      throw new StateDecodeError(
        KIND,
        this.spec.name,
        key,
        `a state of ${size} bytes; the table's states are ${want} bytes`,
      );
    if (typeof key !== (this.spec.keyKind === 'string' ? 'string' : 'number'))
      throw new StateDecodeError(
        KIND,
        this.spec.name,
        key,
        `a ${typeof key} key in a table of ${this.spec.keyKind} keys`,
      );
    return version;
  }

  private found(key: StateKey): number {
    return this.read(key)?.version ?? 0;
  }

  async get(key: K): Promise<StateEntry | undefined> {
    this.owner.root('get');
    this.fresh();
    checkKeys(KIND, this.spec, [key]);
    const r = this.read(key);
    return r && { version: r.version, state: new Uint8Array(r.state) };
  }

  async put(key: K, state: Uint8Array, expected: number): Promise<number> {
    return (await this.putMany({ keys: [key] as unknown as KeyColumn<K>, expected: [expected], states: [state] }))[0]!;
  }

  async delete(key: K, expected?: number): Promise<boolean> {
    const keys = [key] as unknown as KeyColumn<K>;
    return (await this.deleteMany(expected === undefined ? { keys } : { keys, expected: [expected] })) === 1;
  }

  async getMany(keys: KeyColumn<K>): Promise<StateRead> {
    this.owner.root('getMany');
    this.fresh();
    const n = checkKeys(KIND, this.spec, keys);
    const k = keys as ArrayLike<StateKey>;
    const out = new StateReadBuilder(n, n * (this.spec.stateSize ?? 32));
    for (let i = 0; i < n; i++) {
      const r = this.read(k[i]!);
      if (r) out.add(r.version, r.state);
      else out.missing();
    }
    return out.read();
  }

  /**
   * One write transaction, rows in key order: each a put conditional on the stored version (none, for
   * expected 0). The first conflict aborts the transaction, so nothing of the batch is written.
   */
  async putMany(batch: PutBatch<K>): Promise<Float64Array> {
    this.owner.root('putMany');
    const n = checkPut(KIND, this.spec, batch);
    const order = keyOrder(KIND, this.spec, batch.keys);
    const keys = batch.keys as ArrayLike<StateKey>;
    const { expected, states } = batch;
    const versions = new Float64Array(n);
    let bad = -1;
    const db = this.db;
    const w = db as unknown as ConditionalWrites;
    const fences = batch.fence ? this.fences() : undefined;
    try {
      // transactionSync commits and flushes to disk before it returns (lmdb-js's default flags).
      db.transactionSync(() => {
        fences?.check(this.spec, keys, batch.fence, n);
        for (let j = 0; j < n; j++) {
          const i = order === null ? j : order[j]!;
          const e = expected[i]!;
          if (!w.putSync(keys[i]!, stateAt(states, i), e + 1, e === 0 ? null : e)) {
            bad = i;
            throw CONFLICT;
          }
          versions[i] = e + 1;
        }
      });
    } catch (err) {
      if (err !== CONFLICT) throw writeError(err, `putMany into "${this.spec.name}"`);
      throw new StateVersionConflictError(KIND, this.spec.name, keys[bad], bad, expected[bad]!, this.found(keys[bad]!));
    }
    return versions;
  }

  async deleteMany(batch: DeleteBatch<K>): Promise<number> {
    this.owner.root('deleteMany');
    const n = checkDelete(KIND, this.spec, batch);
    const keys = batch.keys as ArrayLike<StateKey>;
    const expected = batch.expected;
    const db = this.db;
    const w = db as unknown as ConditionalWrites;
    let deleted = 0;
    let bad = -1;
    const fences = batch.fence ? this.fences() : undefined;
    try {
      db.transactionSync(() => {
        // Fenced: checked in this transaction, as putMany's.
        fences?.check(this.spec, keys, batch.fence, n);
        for (let i = 0; i < n; i++) {
          const key = keys[i]!;
          if (expected === undefined) {
            if (w.removeSync(key)) deleted++;
            continue;
          }
          const e = expected[i]!;
          const ok = e === 0 ? !db.doesExist(key) : w.removeSync(key, e);
          if (!ok) {
            bad = i;
            throw CONFLICT;
          }
          if (e !== 0) deleted++;
        }
      });
    } catch (err) {
      if (err !== CONFLICT) throw writeError(err, `deleteMany from "${this.spec.name}"`);
      throw new StateVersionConflictError(
        KIND,
        this.spec.name,
        keys[bad],
        bad,
        expected![bad]!,
        this.found(keys[bad]!),
      );
    }
    return deleted;
  }

  async scan(opts: ScanOptions<K>): Promise<StatePage<K>> {
    this.owner.root('scan');
    this.fresh();
    const limit = checkScanLimit(KIND, this.spec, opts.limit);
    if (opts.after !== undefined) checkKeys(KIND, this.spec, [opts.after]);
    const range = this.db.getRange({
      versions: true,
      limit: limit + 1,
      ...(opts.after === undefined ? {} : { start: opts.after, exclusiveStart: true }),
    });
    const keys: K[] = [];
    const out = new StateReadBuilder(limit, limit * (this.spec.stateSize ?? 32));
    let more = false;
    for (const { key, value, version } of range) {
      if (keys.length === limit) {
        more = true;
        break;
      }
      out.add(this.checkRow(key, version ?? 0, value.length), value);
      keys.push(key as K);
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
    return this.db.getCount();
  }
}
