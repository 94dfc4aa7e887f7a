import path from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import {
  StateStoreClosedError,
  StateStoreError,
  StateStoreUnavailableError,
  type LaneReaderSpec,
  type ReminderTable,
  type StateKey,
  type StateStore,
  type StateTableSpec,
  type TableOf,
  FENCE_TABLE,
} from '@ringgrain/core/store';
import type { LaneReaderOptions } from './lane-reader.ts';
import { KIND, writeError } from './errors.ts';
import { lockStore, makeDir, StateStoreLockedError } from './lock.ts';
import { ChunkTable } from './chunk-table.ts';
import { EntryTable } from './entry-table.ts';
import { LmdbReminderTable } from './reminder-table.ts';
import { LmdbFences } from './fences.ts';

export interface LmdbStoreOptions {
  /**
   * The directory of the LMDB environment (created if missing). Default: `.ringgrain/state` under the working
   * directory.
   */
  dataDir?: string;
  /** How many grain classes (one LMDB database each) the environment may hold; default 64. */
  maxTables?: number;
  /** The map's initial size in bytes; lmdb-js grows it as the data grows (default: lmdb-js's). */
  mapSize?: number;
  /**
   * Whether CPU kernel threads may read an int-keyed class's stored states themselves on an actor's first
   * message (default true): no hop through the host's event loop. false: every load goes through the host.
   */
  laneReads?: boolean;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const REMINDERS_SUFFIX = '__reminders';
/**
 * LMDB's key limit (MDB_MAXKEYSIZE, 511 bytes) holds database names too: the longest class name whose reminders
 * database fits.
 */
const MAX_NAME = 511 - REMINDERS_SUFFIX.length;

/**
 * Refuses a table name that is not an identifier, too long for a database name, or another class's reminders database.
 */
function checkTableName(name: string): void {
  if (!NAME.test(name))
    throw new StateStoreError('STATE_TABLE_SPEC', KIND, `table name ${JSON.stringify(name)} is not an identifier`, {
      hint: 'use the grain class name',
    });
  if (name.length > MAX_NAME)
    throw new StateStoreError(
      'STATE_TABLE_SPEC',
      KIND,
      `table name "${name.slice(0, 40)}…" is ${name.length} bytes; LMDB database names hold ${MAX_NAME}`,
      { hint: 'use a shorter grain class name' },
    );
  if (name === FENCE_TABLE)
    throw new StateStoreError(
      'STATE_TABLE_SPEC',
      KIND,
      `table name "${name}" is the store's partition-fence database`,
      { hint: 'rename the grain class' },
    );
  if (name.endsWith(REMINDERS_SUFFIX)) {
    throw new StateStoreError(
      'STATE_TABLE_SPEC',
      KIND,
      `table name ${JSON.stringify(name)} ends in "${REMINDERS_SUFFIX}", the name of the reminders ` +
        `database of class "${name.slice(0, -REMINDERS_SUFFIX.length)}"`,
      {
        hint: `rename the grain class so it does not end in ${REMINDERS_SUFFIX}`,
      },
    );
  }
}

/**
 * The embedded default: one LMDB environment (a directory) with one database per grain class. A write
 * call is one LMDB write transaction, committed and flushed to disk before it resolves.
 */
export class LmdbStore implements StateStore {
  readonly kind = KIND;
  readonly location: string;
  private env: RootDatabase | undefined;
  private unlock: (() => void) | undefined;
  private closed = false;
  private readonly tables = new Map<string, EntryTable<never> | ChunkTable>();
  private readonly reminderTables = new Map<string, LmdbReminderTable<StateKey>>();
  private fenceDb: LmdbFences | undefined;

  constructor(private readonly options: LmdbStoreOptions = {}) {
    this.location = path.resolve(options.dataDir ?? path.join('.ringgrain', 'state'));
  }

  async open(): Promise<void> {
    if (this.closed) throw new StateStoreClosedError(KIND, 'open');
    if (this.env) return;
    try {
      makeDir(this.location);
      this.unlock = lockStore(this.location);
      this.env = open({
        path: this.location,
        compression: false,
        maxDbs: this.options.maxTables ?? 64,
        ...(this.options.mapSize === undefined ? {} : { mapSize: this.options.mapSize }),
      });
    } catch (e) {
      this.unlock?.();
      this.unlock = undefined;
      if (e instanceof StateStoreLockedError) throw e;
      throw new StateStoreUnavailableError(KIND, this.location, String((e as Error)?.message ?? e), { cause: e });
    }
  }

  laneReader(spec: StateTableSpec): LaneReaderSpec | undefined {
    if (this.options.laneReads === false || spec.keyKind !== 'int' || spec.stateSize === undefined || !this.env)
      return undefined;
    const options: LaneReaderOptions = {
      path: this.location,
      maxDbs: this.options.maxTables ?? 64,
      table: spec.name,
      stateSize: spec.stateSize,
    };
    // Beside this file: lane-reader.ts from source, lane-reader.js once built.
    const module = new URL(import.meta.url.endsWith('.ts') ? './lane-reader.ts' : './lane-reader.js', import.meta.url)
      .href;
    return { module, options };
  }

  /** The open environment, or a typed error for `what`. */
  root(what: string): RootDatabase {
    if (this.closed) throw new StateStoreClosedError(KIND, what);
    if (!this.env)
      throw new StateStoreUnavailableError(KIND, this.location, `${what} before open()`, {
        hint: 'await store.open() first',
      });
    return this.env;
  }

  /** The partition fences (cluster claims), opened on first use. */
  private readonly fences = (): LmdbFences => {
    if (!this.fenceDb) {
      try {
        this.fenceDb = new LmdbFences(
          this.root('claim').openDB<number, [string, number]>({ name: FENCE_TABLE, compression: false }),
        );
      } catch (e) {
        throw writeError(e, 'open the partition fences');
      }
    }
    return this.fenceDb;
  };

  async table<const S extends StateTableSpec>(spec: S): Promise<TableOf<S>> {
    const env = this.root('table');
    checkTableName(spec.name);
    const known = this.tables.get(spec.name);
    if (known) {
      const k = known.spec;
      if (k.keyKind !== spec.keyKind || k.stateSize !== spec.stateSize) {
        throw new StateStoreError(
          'STATE_TABLE_SPEC',
          KIND,
          `table "${spec.name}" is open with keyKind ${k.keyKind}, stateSize ${k.stateSize ?? 'variable'}`,
          { hint: 'one spec per grain class in a store' },
        );
      }
      return known as unknown as TableOf<S>;
    }
    let table: EntryTable<never> | ChunkTable;
    try {
      // Int keys: 64 consecutive keys to an entry (chunk.ts); string keys: an entry each, with lmdb-js versions.
      table =
        spec.keyKind === 'string'
          ? new EntryTable<never>(
              this,
              env.openDB<Buffer, number | string>({
                name: spec.name,
                encoding: 'binary',
                useVersions: true,
                compression: false,
              }),
              { ...spec },
              this.fences,
            )
          : new ChunkTable(
              this,
              env.openDB<Buffer, number>({ name: spec.name, encoding: 'binary', compression: false }),
              { ...spec },
              this.fences,
            );
    } catch (e) {
      throw writeError(e, `open table "${spec.name}"`);
    }
    this.tables.set(spec.name, table);
    return table as unknown as TableOf<S>;
  }

  /** The reminders of a grain class: the database `<name>__reminders` beside its states. */
  async reminders<const S extends StateTableSpec>(
    spec: S,
  ): Promise<ReminderTable<S['keyKind'] extends 'string' ? string : number>> {
    const env = this.root('reminders');
    checkTableName(spec.name);
    let t = this.reminderTables.get(spec.name);
    if (!t) {
      try {
        t = new LmdbReminderTable(
          this,
          env.openDB({ name: `${spec.name}${REMINDERS_SUFFIX}`, compression: false }),
          { ...spec },
          this.fences,
        );
      } catch (e) {
        throw writeError(e, `open the reminders of "${spec.name}"`);
      }
      this.reminderTables.set(spec.name, t);
    }
    return t as unknown as ReminderTable<S['keyKind'] extends 'string' ? string : number>;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const env = this.env;
    this.env = undefined;
    this.tables.clear();
    this.reminderTables.clear();
    this.fenceDb = undefined;
    try {
      if (env) await env.close();
    } finally {
      this.unlock?.();
      this.unlock = undefined;
    }
  }
}
