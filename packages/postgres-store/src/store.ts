import pg from 'pg';
import {
  StateStoreClosedError,
  StateStoreError,
  StateStoreUnavailableError,
  type ReminderTable,
  type StateKey,
  type StateStore,
  type StateTableSpec,
  type TableOf,
} from '@ringgrain/core/store';
import { KIND, pgError } from './errors.ts';
import { ChunkTable } from './chunk-table.ts';
import { EntryTable } from './entry-table.ts';
import { PgReminderTable } from './reminder-table.ts';
import { PgFences } from './fences.ts';
import { ddl } from './session.ts';
import { checkSchemaName, checkTableName, stateIdent } from './ident.ts';

export interface PostgresStoreOptions {
  /** A connection string (postgres://user:password@host:port/database) or node-postgres pool settings. */
  connection: string | pg.PoolConfig;
  /** The schema that holds the tables (created if missing); default 'public'. */
  schema?: string;
  /** Connections in the pool; default 4. */
  maxConnections?: number;
  /** How long to wait for a connection before failing with StateStoreUnavailableError; default 10 s. */
  connectTimeoutMs?: number;
}

/** The server's address without credentials, for errors. */
function describe(c: string | pg.PoolConfig): string {
  if (typeof c !== 'string') return `${c.host ?? 'localhost'}:${c.port ?? 5432}/${c.database ?? ''}`;
  try {
    const u = new URL(c);
    return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    return 'the configured server';
  }
}

/**
 * The shared store: one PostgreSQL table per grain class, in one schema. Int-keyed classes keep 64
 * consecutive keys to a record (chunk bigint, rows bytea: core's chunk format, versions inside);
 * string-keyed classes a row per actor (key text, version bigint, state bytea). A write call is one
 * transaction, its batch sent with binary COPY, committed before the call resolves.
 */
export class PostgresStore implements StateStore {
  readonly kind = KIND;
  readonly location: string;
  readonly schema: string;
  private pool: pg.Pool | undefined;
  private closed = false;
  private readonly tables = new Map<string, EntryTable<never> | ChunkTable>();
  private readonly reminderTables = new Map<string, PgReminderTable<StateKey>>();
  private readonly fences: PgFences;

  constructor(private readonly options: PostgresStoreOptions) {
    this.schema = options.schema ?? 'public';
    this.location = describe(options.connection);
    checkSchemaName(this.schema);
    this.fences = new PgFences(this);
  }

  async open(): Promise<void> {
    if (this.closed) throw new StateStoreClosedError(KIND, 'open');
    if (this.pool) return;
    const base =
      typeof this.options.connection === 'string'
        ? { connectionString: this.options.connection }
        : this.options.connection;
    const pool = new pg.Pool({
      ...base,
      max: this.options.maxConnections ?? 4,
      connectionTimeoutMillis: this.options.connectTimeoutMs ?? 10_000,
    });
    // An idle connection the server drops must not crash the process; the next checkout reconnects.
    pool.on('error', () => {});
    try {
      const c = await pool.connect();
      try {
        await ddl(c, `CREATE SCHEMA IF NOT EXISTS ${pg.escapeIdentifier(this.schema)}`);
      } finally {
        c.release();
      }
    } catch (e) {
      await pool.end().catch(() => {});
      const err = pgError(e, 'open', this.location);
      throw err instanceof StateStoreUnavailableError
        ? err
        : new StateStoreUnavailableError(KIND, this.location, (e as Error).message, { cause: e });
    }
    this.pool = pool;
  }

  /** A pooled connection for `what`, or a typed error. */
  async client(what: string): Promise<pg.PoolClient> {
    if (this.closed) throw new StateStoreClosedError(KIND, what);
    if (!this.pool)
      throw new StateStoreUnavailableError(KIND, this.location, `${what} before open()`, {
        hint: 'await store.open() first',
      });
    try {
      return await this.pool.connect();
    } catch (e) {
      throw pgError(e, what, this.location);
    }
  }

  /** Throws StateStoreClosedError once closed. */
  check(what: string): void {
    if (this.closed) throw new StateStoreClosedError(KIND, what);
  }

  async table<const S extends StateTableSpec>(spec: S): Promise<TableOf<S>> {
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
    // Int keys: 64 consecutive keys to a record (core's chunk format); string keys: a row each.
    const table =
      spec.keyKind === 'string'
        ? new EntryTable<never>(this, { ...spec }, this.fences)
        : new ChunkTable(this, { ...spec }, this.fences);
    const c = await this.client('table');
    try {
      await ddl(c, table.createSql());
      const [column, want] = spec.keyKind === 'string' ? ['key', 'text'] : ['chunk', 'bigint'];
      const r = await c.query<{ data_type: string }>(
        'SELECT data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND ' +
          'column_name = $3',
        [this.schema, stateIdent(spec.name), column],
      );
      if (r.rows[0]?.data_type !== want) {
        throw new StateStoreError(
          'STATE_TABLE_SPEC',
          KIND,
          `table ${this.schema}.${stateIdent(spec.name)} has no ${want} column "${column}", ` +
            `which ${spec.keyKind} keys need`,
          {
            hint: 'the table was made for another key kind: use another schema, or migrate the table',
          },
        );
      }
    } catch (e) {
      throw pgError(e, `open table "${spec.name}"`, this.location);
    } finally {
      c.release();
    }
    this.tables.set(spec.name, table);
    return table as unknown as TableOf<S>;
  }

  /** The reminders of a grain class: the table `<name>__reminders` beside its states (created if missing). */
  async reminders<const S extends StateTableSpec>(
    spec: S,
  ): Promise<ReminderTable<S['keyKind'] extends 'string' ? string : number>> {
    checkTableName(spec.name);
    let t = this.reminderTables.get(spec.name);
    if (!t) {
      const table = new PgReminderTable<StateKey>(this, { ...spec }, this.fences);
      const c = await this.client('reminders');
      try {
        await ddl(c, table.createSql());
      } catch (e) {
        throw pgError(e, `open the reminders of "${spec.name}"`, this.location);
      } finally {
        c.release();
      }
      this.reminderTables.set(spec.name, (t = table));
    }
    return t as unknown as ReminderTable<S['keyKind'] extends 'string' ? string : number>;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const pool = this.pool;
    this.pool = undefined;
    this.tables.clear();
    this.reminderTables.clear();
    // Waits for checked-out connections (writes in flight) to be released.
    if (pool) await pool.end();
  }
}
