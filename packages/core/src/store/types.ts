/**
 * The state storage contract: a `StateStore` (one LMDB environment, one PostgreSQL database, …) holds one
 * `StateTable` per grain class. Core defines the contract and never imports a store; stores are packages
 * (`@ringgrain/lmdb-store`, `@ringgrain/postgres-store`) that implement it.
 *
 * Shaped for write-behind: states are bytes (the state's fixed binary layout or its msgpack encoding),
 * and every bulk call takes columns (a key column, a version column, one buffer of states) so that a
 * flush of a million actors allocates no object per actor.
 */
import type { KeyKind } from '../grain.ts';

/** An actor key as grain classes type them: a safe integer, or a non-empty string (`key: 'string'`). */
export type StateKey = number | string;

/** A key column: safe integers for an int-keyed class (any numeric column), strings for a string-keyed one. */
export type KeyColumn<K extends StateKey> = K extends string
  ? readonly string[]
  : readonly number[] | Float64Array | Int32Array | Uint32Array;

/** What a store needs to know of a grain class to keep its states. */
export interface StateTableSpec {
  /** The grain class name (an identifier): names the LMDB database or the PostgreSQL table. */
  readonly name: string;
  readonly keyKind: KeyKind;
  /**
   * Every state is exactly this many bytes (the state struct's binary layout, `layoutOf(state).size`):
   * writes of another size fail with StateBatchError, stored rows of another size with StateDecodeError.
   * Leave it out for variable-size states (msgpack).
   */
  readonly stateSize?: number;
}

/** `count` states packed back to back: row i is `bytes[i * stride, (i + 1) * stride)`. */
export interface FixedStates {
  readonly bytes: Uint8Array;
  readonly stride: number;
}

/** States packed back to back: row i is `bytes[offsets[i], offsets[i + 1])` (`offsets` has count + 1 entries). */
export interface PackedStates {
  readonly bytes: Uint8Array;
  readonly offsets: Uint32Array;
}

/** The states of a batch: one buffer with a stride, one buffer with offsets, or one array per row. */
export type StateRows = FixedStates | PackedStates | readonly Uint8Array[];

export interface PutBatch<K extends StateKey> {
  /** Distinct keys: a key twice in one batch fails the batch with StateBatchError. */
  readonly keys: KeyColumn<K>;
  /**
   * Per row, the version the writer last saw (an etag): 0 for an actor with no stored state. The row is
   * written only if the stored version is exactly this, and its new version is `expected + 1`.
   */
  readonly expected: ArrayLike<number>;
  readonly states: StateRows;
  /**
   * Cluster fencing (a store with `claim`): per row, the partition of its key and the epoch under which
   * the writer owns it. A row whose epoch is below the partition's claimed epoch fails the batch with
   * StateFencedError; the epoch is stored with the row (StateEntry.epoch: its activation epoch).
   */
  readonly fence?: PartitionFence;
}

/** Per row of a put batch: its key's partition and the writer's ownership epoch of that partition. */
export interface PartitionFence {
  readonly partitions: ArrayLike<number>;
  readonly epochs: ArrayLike<number>;
}

export interface DeleteBatch<K extends StateKey> {
  readonly keys: KeyColumn<K>;
  /** Per row, the version that must be stored (0: must be absent). Leave out to delete unconditionally. */
  readonly expected?: ArrayLike<number>;
  /**
   * Cluster fencing, as PutBatch.fence: a row whose epoch is below its partition's claimed epoch fails the
   * batch with StateFencedError and nothing of it is deleted (a stale owner cannot delete a new owner's row).
   */
  readonly fence?: PartitionFence;
}

/** One actor's stored state. */
export interface StateEntry {
  /** ≥ 1; it grows by one with every write. */
  readonly version: number;
  readonly state: Uint8Array;
  /** The partition epoch the row was written under (fenced writes of int-keyed tables); undefined: none stored. */
  readonly epoch?: number;
}

/** getMany's answer, row for row with the keys asked: states packed into one buffer. */
export interface StateRead extends PackedStates {
  /** Rows asked. */
  readonly count: number;
  /** Rows that have a stored state. */
  readonly found: number;
  /** Per row, the stored version; 0 where the key has no stored state (its state is then empty). */
  readonly versions: Float64Array;
  /** Rows (indexes into the keys asked) with no stored state, ascending. */
  readonly missing: Uint32Array;
}

/** One page of a scan, in ascending key order. */
export interface StatePage<K extends StateKey> extends PackedStates {
  readonly keys: K[];
  readonly versions: Float64Array;
  /** Pass as `after` for the next page; undefined on the last page. */
  readonly next: K | undefined;
}

export interface ScanOptions<K extends StateKey> {
  /** Start after this key (exclusive); from the first key when left out. */
  readonly after?: K;
  /** Most rows in the page (≥ 1). */
  readonly limit: number;
}

/**
 * One grain class's states. Every write call is atomic: all of its rows are written, or (on any error —
 * a version conflict, a full store, a lost connection before commit) none is. A write resolves only
 * once it is committed and durable as the store defines (see the store's README).
 */
export interface StateTable<K extends StateKey = StateKey> {
  readonly spec: StateTableSpec;
  get(key: K): Promise<StateEntry | undefined>;
  /** Writes one state if the stored version is `expected`; resolves to the new version. */
  put(key: K, state: Uint8Array, expected: number): Promise<number>;
  /** Deletes one state (if `expected` is given, only at that version); resolves to whether a row was deleted. */
  delete(key: K, expected?: number): Promise<boolean>;
  getMany(keys: KeyColumn<K>): Promise<StateRead>;
  /** Resolves to the new version of every row (`expected + 1`). */
  putMany(batch: PutBatch<K>): Promise<Float64Array>;
  /** Resolves to the number of rows deleted. */
  deleteMany(batch: DeleteBatch<K>): Promise<number>;
  /** One page of stored states in key order (numbers numerically, strings by their UTF-8 bytes): preload. */
  scan(opts: ScanOptions<K>): Promise<StatePage<K>>;
  /** Stored rows. */
  count(): Promise<number>;
  /**
   * Cluster fencing: a new owner takes partitions. Each partition's stored epoch becomes max(stored + 1,
   * the epoch given) in one atomic write (a fencing token: it outlives the cluster's placement tables), and
   * the call resolves to those epochs: the ones the claimer writes under. A write whose fence carries an
   * older epoch than the stored one is refused from then on (StateFencedError). Partitions are distinct.
   * A store without it cannot fence a cluster's writes (the router warns once).
   */
  claim?(partitions: ArrayLike<number>, epochs: ArrayLike<number>): Promise<Float64Array>;
  /**
   * The epochs claimed now for these partitions (0: never claimed), read only: what a fenced write must carry at least.
   */
  claimed?(partitions: ArrayLike<number>): Promise<Float64Array>;
}

/** The table type for a spec: number keys unless `keyKind` is 'string'. */
export type TableOf<S extends StateTableSpec> = StateTable<S['keyKind'] extends 'string' ? string : number>;

/**
 * One reminder of one actor, as stored: it delivers a turn of `method` at `nextDue`, then every
 * `periodMs` (system/reminders.ts says what happens to the fires a stopped system missed).
 */
export interface ReminderRow<K extends StateKey = StateKey> {
  readonly key: K;
  /** The reminder's name (declared in the grain spec's `reminders`). */
  readonly name: string;
  /** The method it delivers, by name (a row outlives the class's method ids). */
  readonly method: string;
  readonly periodMs: number;
  /** When it fires next, in ms by the system's clock. */
  readonly nextDue: number;
}

/** An actor's reminder, by key and name. */
export interface ReminderId<K extends StateKey = StateKey> {
  readonly key: K;
  readonly name: string;
}

/**
 * The reminders of one grain class. Each write call is atomic and resolves once committed. A stored row
 * that cannot be read back (a wrong type, a bad number) fails `list` with StateDecodeError.
 */
export interface ReminderTable<K extends StateKey = StateKey> {
  readonly spec: StateTableSpec;
  /**
   * Inserts or replaces the rows (by key and name); one key and name at most once per call. `fence`
   * (stores with StateTable.claim), row for row: as PutBatch.fence, a row below its partition's claimed
   * epoch fails the call with StateFencedError and nothing of it is written.
   */
  put(rows: readonly ReminderRow<K>[], fence?: PartitionFence): Promise<void>;
  /** Removes the rows with these keys and names; resolves to how many there were. `fence`: as put's. */
  delete(ids: readonly ReminderId<K>[], fence?: PartitionFence): Promise<number>;
  /** Every row, in key order (as `scan`), then by name. */
  list(): Promise<ReminderRow<K>[]>;
}

export interface StateStore {
  /** 'lmdb', 'postgres', …: names the store in errors. */
  readonly kind: string;
  /** Where the states are: a directory, a server address (never a password). */
  readonly location: string;
  /** Opens (or connects); idempotent. Fails with StateStoreUnavailableError. */
  open(): Promise<void>;
  /** The table of one grain class, created if it does not exist (the same spec twice: the same table). */
  table<const S extends StateTableSpec>(spec: S): Promise<TableOf<S>>;
  /**
   * The reminder table of a grain class (created if missing), beside its state table. A store without it
   * cannot hold a class that declares reminders (the system refuses it with ReminderStorageError).
   */
  reminders?<const S extends StateTableSpec>(
    spec: S,
  ): Promise<ReminderTable<S['keyKind'] extends 'string' ? string : number>>;
  /**
   * How a kernel's consumer thread may read this table's rows itself, synchronously, on an actor's first
   * message (no hop through the host): a module to import there and the options for its `openLaneReader`.
   * Undefined: the store cannot (a network store, string keys), and loads go through the host.
   */
  laneReader?(spec: StateTableSpec): LaneReaderSpec | undefined;
  /** Waits for writes in flight, then closes; idempotent. Calls after it fail with StateStoreClosedError. */
  close(): Promise<void>;
}

/** A module (URL) exporting `openLaneReader(options): LaneReader`, and its options (structured-cloneable). */
export interface LaneReaderSpec {
  readonly module: string;
  readonly options: unknown;
}

/** A synchronous reader of one int-keyed table, opened in a consumer thread. */
export interface LaneReader {
  /** The stored row, undefined when there is none; throws when the row does not decode (the host path reports it). */
  get(key: number): { readonly version: number; readonly bytes: Uint8Array } | undefined;
  close(): void;
}
