/**
 * State store errors: each names the store (and the grain class and key where there is one), carries a
 * stable code, the underlying error as `cause`, and a hint. A write that fails with any of them wrote
 * nothing of its batch, except where `outcomeUnknown` says the commit's outcome could not be learned.
 */
import { RinggrainError, type ErrorOptions } from '../errors.ts';

export class StateStoreError extends RinggrainError {
  /** The store's kind ('lmdb', 'postgres'). */
  readonly store: string;
  constructor(code: string, store: string, message: string, opts: ErrorOptions = {}) {
    super(code, `${store} state store: ${message}`, opts);
    this.store = store;
  }
}

/**
 * The store cannot be opened or reached: a directory that cannot be created or written, a server that does not answer.
 */
export class StateStoreUnavailableError extends StateStoreError {
  /**
   * True when the connection was lost while a commit was in flight: the batch may or may not have been
   * written. Re-read the rows' versions (getMany) before writing them again.
   */
  readonly outcomeUnknown: boolean;
  constructor(store: string, where: string, detail: string, opts: ErrorOptions & { outcomeUnknown?: boolean } = {}) {
    const { outcomeUnknown = false, ...rest } = opts;
    super('STATE_STORE_UNAVAILABLE', store, `cannot reach ${where}: ${detail}`, {
      hint: outcomeUnknown
        ? 'the commit may or may not have happened: re-read the versions (getMany) before retrying'
        : 'check that the location exists and is writable (LMDB) or that the server is up and the address ' +
          'right (PostgreSQL); nothing of the batch was written',
      ...rest,
    });
    this.outcomeUnknown = outcomeUnknown;
  }
}

/** A call on a store after close(). */
export class StateStoreClosedError extends StateStoreError {
  constructor(store: string, what: string) {
    super('STATE_STORE_CLOSED', store, `${what}: the store is closed`, {
      hint: 'open a new store (stores are not reopened after close)',
    });
  }
}

/**
 * The store has no room: the disk, a file-size limit, LMDB's map, PostgreSQL's disk. Nothing of the batch was written.
 */
export class StateStoreFullError extends StateStoreError {
  constructor(store: string, where: string, detail: string, opts: ErrorOptions = {}) {
    super('STATE_STORE_FULL', store, `${where} is full: ${detail}`, {
      hint: 'free disk space (or raise the limit) and write the batch again; nothing of it was written',
      ...opts,
    });
  }
}

/** A stored row cannot be read back as a state: a wrong size, a bad version, a key of the wrong kind. */
export class StateDecodeError extends StateStoreError {
  readonly grain: string;
  readonly key: unknown;
  constructor(store: string, grain: string, key: unknown, detail: string, opts: ErrorOptions = {}) {
    super(
      'STATE_DECODE',
      store,
      `grain "${grain}", key ${JSON.stringify(key)}: the stored row does not decode: ${detail}`,
      {
        hint:
          'the row was written by another layout or tool: migrate it, or delete it (deleteMany) to start the ' +
          'actor afresh',
        ...opts,
      },
    );
    this.grain = grain;
    this.key = key;
  }
}

/**
 * A write expected one version and found another: someone else wrote the actor first. Nothing of the batch was written.
 */
export class StateVersionConflictError extends StateStoreError {
  readonly grain: string;
  readonly key: unknown;
  /** The row of the batch (index into its keys). */
  readonly row: number;
  readonly expected: number;
  /** The version stored (0: none). */
  readonly found: number;
  constructor(store: string, grain: string, key: unknown, row: number, expected: number, found: number) {
    super(
      'STATE_VERSION_CONFLICT',
      store,
      `grain "${grain}", key ${JSON.stringify(key)} (row ${row}): expected version ${expected}, ` +
        `found ${found}; nothing of the batch was written`,
      {
        hint: 'another writer changed the actor: re-read it (get/getMany), merge, and write with the version read',
      },
    );
    this.grain = grain;
    this.key = key;
    this.row = row;
    this.expected = expected;
    this.found = found;
  }
}

/**
 * A write carried a partition epoch older than the one the store holds for that partition (cluster
 * fencing): another silo claimed the partition since this writer became its owner, so this writer is a
 * stale owner and its states are not the newest. Nothing of the batch was written.
 */
export class StateFencedError extends StateStoreError {
  readonly grain: string;
  readonly key: unknown;
  /** The row of the batch (index into its keys). */
  readonly row: number;
  readonly partition: number;
  /** The epoch the writer owns the partition under. */
  readonly epoch: number;
  /** The epoch the store holds for the partition (claimed by its newer owner). */
  readonly fence: number;
  constructor(
    store: string,
    grain: string,
    key: unknown,
    row: number,
    partition: number,
    epoch: number,
    fence: number,
  ) {
    super(
      'STATE_FENCED',
      store,
      `grain "${grain}", key ${JSON.stringify(key)} (row ${row}): partition ${partition} is fenced at ` +
        `epoch ${fence}, the write carried epoch ${epoch} (a stale owner); nothing of the batch was written`,
      {
        hint:
          "another silo owns this partition now and loaded its actors from the store: this silo's copy is " +
          'stale and is dropped (docs/cluster.md, fencing)',
      },
    );
    this.grain = grain;
    this.key = key;
    this.row = row;
    this.partition = partition;
    this.epoch = epoch;
    this.fence = fence;
  }
}

/** A batch is malformed: a bad key, a repeated key, columns of different lengths, a state of the wrong size. */
export class StateBatchError extends StateStoreError {
  readonly grain: string;
  /** The first bad row, when one row is to blame. */
  readonly row: number | undefined;
  constructor(store: string, grain: string, detail: string, row?: number) {
    super(
      'STATE_BATCH',
      store,
      `grain "${grain}": ${row === undefined ? '' : `row ${row}: `}${detail}; nothing of the batch was written`,
      {
        hint:
          'one distinct key per row (safe integers, or non-empty strings for string keys), a version ≥ 0 per ' +
          "row, one state per row of the table's stateSize",
      },
    );
    this.grain = grain;
    this.row = row;
  }
}

/** A scan of a table got a bad argument (a limit that is not an integer ≥ 1); nothing was read. */
export class StateScanError extends StateStoreError {
  readonly grain: string;
  constructor(store: string, grain: string, detail: string) {
    super('STATE_SCAN', store, `grain "${grain}": scan: ${detail}`, {
      hint: 'pass { limit } as an integer ≥ 1 (the rows of one page), and `after` as the last key of the page before',
    });
    this.grain = grain;
  }
}

/**
 * An actor's stored state could not be loaded before its first turn (the store failed or the row does
 * not decode): the messages that waited for it were rejected with this error's message; the next message
 * tries again. `cause` is the store's error.
 */
let loadFailureIds = 0;

export class StateLoadError extends StateStoreError {
  readonly grain: string;
  readonly keys: readonly unknown[];
  /**
   * Names this failure in the replies of the messages it rejected (a kernel sends the id, the host finds the error).
   */
  readonly failureId: number = ++loadFailureIds;
  constructor(store: string, grain: string, keys: readonly unknown[], cause: unknown) {
    const shown =
      keys
        .slice(0, 5)
        .map((k) => JSON.stringify(k))
        .join(', ') + (keys.length > 5 ? `, … (${keys.length} keys)` : '');
    super(
      'STATE_LOAD',
      store,
      `grain "${grain}": cannot load the state ` +
        `of ${shown}: ${(cause as Error)?.message?.split('\n')[0] ?? String(cause)}; their waiting messages ` +
        'were rejected',
      {
        hint:
          "fix the store (reachable, rows of the grain's state layout) and send again: the next message " +
          'loads the actor anew',
        cause,
      },
    );
    this.grain = grain;
    this.keys = keys;
  }
}

/** Storage or idle collection was asked of a backend whose kernels cannot read and write actor states. */
export class StorageUnsupportedError extends StateStoreError {
  constructor(store: string, grain: string, backend: string) {
    super(
      'STORAGE_UNSUPPORTED',
      store,
      `grain "${grain}" has storage or idleMs, but the ${backend} backend's kernels do not implement ` +
        'state access (readDirty, writeStates, deactivateIdle)',
      {
        hint:
          'place the grain on a backend that supports persistent state (cpu, inline), or register it without ' +
          'storage and idleMs',
      },
    );
  }
}
