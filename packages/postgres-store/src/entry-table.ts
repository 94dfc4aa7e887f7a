import pg from 'pg';
import { stateIdent } from './ident.ts';
import {
  StateDecodeError,
  StateReadBuilder,
  StateStoreError,
  StateVersionConflictError,
  checkDelete,
  checkKeys,
  checkScanLimit,
  checkPut,
  StateBatchError,
  keyOrder,
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
import { copyChunks, readCopy, type StageRows } from './copy.ts';
import type { PgFences } from './fences.ts';
import { KIND, pgError } from './errors.ts';
import { copyIn, copyOut, inTransaction, type Owner } from './session.ts';

/**
 * PostgreSQL text holds no NUL (U+0000): a string key with one is refused as a malformed batch, before
 * any SQL (it used to reach the server and fail as an SQL error, SQLSTATE 22021). Returns the row count.
 */
function textKeys(spec: StateTableSpec, keys: ArrayLike<unknown>, n: number): number {
  if (spec.keyKind !== 'string') return n;
  for (let i = 0; i < n; i++) {
    if ((keys[i] as string).includes('\0'))
      throw new StateBatchError(
        KIND,
        spec.name,
        `${JSON.stringify(keys[i])} holds a NUL character (U+0000), which PostgreSQL text cannot store`,
        i,
      );
  }
  return n;
}

/** Batches this large join the table in memory (work_mem) and get planner statistics (ANALYZE). */
const LARGE = 10_000;
const LARGE_WORK_MEM = '256MB';

export class EntryTable<K extends StateKey> implements StateTable<K> {
  private readonly t: string;
  private readonly keyType: string;
  private readonly stringKeys: boolean;

  constructor(
    private readonly owner: Owner,
    readonly spec: StateTableSpec,
    private readonly fences: PgFences,
  ) {
    this.t = `${pg.escapeIdentifier(owner.schema)}.${pg.escapeIdentifier(stateIdent(spec.name))}`;
    this.stringKeys = spec.keyKind === 'string';
    // Byte order for string keys (the "C" collation), as LMDB orders them.
    this.keyType = this.stringKeys ? 'text COLLATE "C"' : 'bigint';
  }

  createSql(): string {
    return (
      `CREATE TABLE IF NOT EXISTS ${this.t} (key ${this.keyType} PRIMARY KEY, version bigint NOT NULL, ` +
      'state bytea NOT NULL)'
    );
  }

  private tx<T>(what: string, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.owner, `${what} on "${this.spec.name}"`, fn);
  }

  private decodeKey(b: Buffer, start: number, end: number): StateKey {
    return this.stringKeys ? b.toString('utf8', start, end) : Number(b.readBigInt64BE(start));
  }

  private checkRow(key: unknown, version: number, size: number): void {
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
  }

  private stage(rows: StageRows & { table: string; withState: boolean; withExpected: boolean }): string {
    return (
      `CREATE TEMP TABLE ${rows.table} (row int4, ` +
      `key ${this.keyType}${rows.withExpected ? ', expected int8' : ''}${rows.withState ? ', state bytea' : ''}) ` +
      'ON COMMIT DROP'
    );
  }

  /** Stages a batch into a temporary table `name` (binary COPY), with statistics for large ones. */
  private async stageRows(c: pg.PoolClient, name: string, rows: StageRows): Promise<void> {
    await c.query(
      this.stage({
        ...rows,
        table: name,
        withState: rows.states !== undefined,
        withExpected: rows.expected !== undefined,
      }),
    );
    await copyIn(c, `COPY ${name} FROM STDIN (FORMAT binary)`, copyChunks(rows));
    if (rows.n >= LARGE) {
      await c.query(`SET LOCAL work_mem = '${LARGE_WORK_MEM}'`);
      await c.query(`ANALYZE ${name}`);
    }
  }

  /** The first staged row (by batch row) whose stored version is not the expected one, as a typed error. */
  private async conflict(c: pg.PoolClient, keys: ArrayLike<StateKey>): Promise<Error> {
    const r = await c.query<{ row: number; expected: string; found: string }>(
      `SELECT s.row, s.expected, coalesce(t.version, 0) AS found FROM rg_stage s LEFT JOIN ${this.t} t ON ` +
        't.key = s.key WHERE coalesce(t.version, 0) <> s.expected ORDER BY s.row LIMIT 1',
    );
    const hit = r.rows[0];
    if (!hit)
      return new StateStoreError(
        'STATE_STORE_SQL',
        KIND,
        `"${this.spec.name}": the batch did not apply in full, yet no row's version differs now`,
        { hint: 'another writer raced this batch; nothing of it was written: write it again' },
      );
    return new StateVersionConflictError(
      KIND,
      this.spec.name,
      keys[hit.row],
      hit.row,
      Number(hit.expected),
      Number(hit.found),
    );
  }

  async get(key: K): Promise<StateEntry | undefined> {
    this.owner.check('get');
    textKeys(this.spec, [key], checkKeys(KIND, this.spec, [key]));
    const c = await this.owner.client('get');
    try {
      const r = await c.query<{ version: string; state: Buffer }>(
        `SELECT version, state FROM ${this.t} WHERE key = $1`,
        [key],
      );
      const row = r.rows[0];
      if (!row) return undefined;
      const version = Number(row.version);
      this.checkRow(key, version, row.state.length);
      return { version, state: new Uint8Array(row.state) };
    } catch (e) {
      throw pgError(e, `get on "${this.spec.name}"`, this.owner.location);
    } finally {
      c.release();
    }
  }

  async put(key: K, state: Uint8Array, expected: number): Promise<number> {
    return (await this.putMany({ keys: [key] as unknown as KeyColumn<K>, expected: [expected], states: [state] }))[0]!;
  }

  async delete(key: K, expected?: number): Promise<boolean> {
    const keys = [key] as unknown as KeyColumn<K>;
    return (await this.deleteMany(expected === undefined ? { keys } : { keys, expected: [expected] })) === 1;
  }

  async getMany(keys: KeyColumn<K>): Promise<StateRead> {
    this.owner.check('getMany');
    const n = textKeys(this.spec, keys, checkKeys(KIND, this.spec, keys));
    const k = keys as ArrayLike<StateKey>;
    const out = new StateReadBuilder(n, n * (this.spec.stateSize ?? 32));
    if (n === 0) return out.read();
    const data = await this.tx('getMany', async (c) => {
      await this.stageRows(c, 'rg_keys', { n, keys: k, stringKeys: this.stringKeys });
      return copyOut(
        c,
        `COPY (SELECT s.row, t.version, t.state FROM rg_keys s JOIN ${this.t} t ON t.key = s.key ORDER BY ` +
          's.row) TO STDOUT (FORMAT binary)',
      );
    });
    readCopy(data, 3, (b, at) => {
      const row = b.readInt32BE(at[0]!);
      while (out.rows < row) out.missing();
      const version = Number(b.readBigInt64BE(at[2]!));
      if (at[4]! < 0) throw new StateDecodeError(KIND, this.spec.name, k[row], 'the state is NULL');
      this.checkRow(k[row], version, at[5]! - at[4]!);
      out.add(version, b.subarray(at[4]!, at[5]!));
    });
    while (out.rows < n) out.missing();
    return out.read();
  }

  /**
   * One transaction: the batch is COPYed (binary, in key order) into a temporary table; one UPDATE
   * writes the rows whose stored version is the expected one, one INSERT the rows expected absent. Fewer
   * rows written than the batch holds means a conflict: back to the savepoint, find it, roll back.
   */
  /** Cluster fencing: string-keyed rows are fenced too, but keep no row epoch (StateEntry.epoch stays undefined). */
  async claim(partitions: ArrayLike<number>, epochs: ArrayLike<number>): Promise<Float64Array> {
    this.owner.check('claim');
    return this.fences.claim(this.spec, partitions, epochs);
  }

  async claimed(partitions: ArrayLike<number>): Promise<Float64Array> {
    this.owner.check('claimed');
    return this.fences.read(this.spec, partitions);
  }

  async putMany(batch: PutBatch<K>): Promise<Float64Array> {
    this.owner.check('putMany');
    const n = textKeys(this.spec, batch.keys, checkPut(KIND, this.spec, batch));
    const order = keyOrder(KIND, this.spec, batch.keys);
    const keys = batch.keys as ArrayLike<StateKey>;
    const versions = new Float64Array(n);
    for (let i = 0; i < n; i++) versions[i] = batch.expected[i]! + 1;
    if (n === 0) return versions;
    await this.tx('putMany', async (c) => {
      await this.fences.check(c, this.spec, keys, batch.fence, n);
      await this.stageRows(c, 'rg_stage', {
        n,
        keys,
        stringKeys: this.stringKeys,
        expected: batch.expected,
        states: batch.states,
        order,
      });
      await c.query('SAVEPOINT rg_write');
      const updated = await c.query(
        `UPDATE ${this.t} AS t SET version = s.expected + 1, state = s.state FROM rg_stage s WHERE ` +
          's.expected > 0 AND t.key = s.key AND t.version = s.expected',
      );
      const inserted = await c.query(
        `INSERT INTO ${this.t} (key, version, state) SELECT key, 1, state FROM rg_stage WHERE expected = ` +
          '0 ON CONFLICT (key) DO NOTHING',
      );
      if ((updated.rowCount ?? 0) + (inserted.rowCount ?? 0) !== n) {
        await c.query('ROLLBACK TO SAVEPOINT rg_write');
        throw await this.conflict(c, keys);
      }
    });
    return versions;
  }

  async deleteMany(batch: DeleteBatch<K>): Promise<number> {
    this.owner.check('deleteMany');
    const n = textKeys(this.spec, batch.keys, checkDelete(KIND, this.spec, batch));
    if (n === 0) return 0;
    const keys = batch.keys as ArrayLike<StateKey>;
    const expected = batch.expected;
    return this.tx('deleteMany', async (c) => {
      await this.fences.check(c, this.spec, keys, batch.fence, n);
      await this.stageRows(c, 'rg_stage', {
        n,
        keys,
        stringKeys: this.stringKeys,
        ...(expected === undefined ? {} : { expected }),
      });
      if (expected === undefined)
        return (await c.query(`DELETE FROM ${this.t} t USING rg_stage s WHERE t.key = s.key`)).rowCount ?? 0;
      let present = 0;
      for (let i = 0; i < n; i++) if (expected[i]! > 0) present++;
      await c.query('SAVEPOINT rg_write');
      const deleted =
        (
          await c.query(
            `DELETE FROM ${this.t} t USING rg_stage s WHERE s.expected > 0 AND t.key = s.key AND ` +
              't.version = s.expected',
          )
        ).rowCount ?? 0;
      const stray = await c.query(
        `SELECT 1 FROM rg_stage s JOIN ${this.t} t ON t.key = s.key WHERE s.expected = 0 LIMIT 1`,
      );
      if (deleted !== present || stray.rows.length > 0) {
        await c.query('ROLLBACK TO SAVEPOINT rg_write');
        throw await this.conflict(c, keys);
      }
      return deleted;
    });
  }

  async scan(opts: ScanOptions<K>): Promise<StatePage<K>> {
    this.owner.check('scan');
    const limit = checkScanLimit(KIND, this.spec, opts.limit);
    let where = '';
    if (opts.after !== undefined) {
      textKeys(this.spec, [opts.after], checkKeys(KIND, this.spec, [opts.after]));
      where = `WHERE key > ${typeof opts.after === 'string' ? pg.escapeLiteral(opts.after) : String(opts.after)}`;
    }
    const data = await this.tx('scan', (c) =>
      copyOut(
        c,
        `COPY (SELECT key, version, state FROM ${this.t} ${where} ORDER BY key LIMIT ${limit + 1}) TO ` +
          'STDOUT (FORMAT binary)',
      ),
    );
    const keys: K[] = [];
    const out = new StateReadBuilder(limit, limit * (this.spec.stateSize ?? 32));
    let more = false;
    readCopy(data, 3, (b, at) => {
      if (keys.length === limit) {
        more = true;
        return;
      }
      const key = this.decodeKey(b, at[0]!, at[1]!);
      const version = Number(b.readBigInt64BE(at[2]!));
      this.checkRow(key, version, at[5]! - at[4]!);
      out.add(version, b.subarray(at[4]!, at[5]!));
      keys.push(key as K);
    });
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
    this.owner.check('count');
    const c = await this.owner.client('count');
    try {
      return Number((await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${this.t}`)).rows[0]!.n);
    } catch (e) {
      throw pgError(e, `count on "${this.spec.name}"`, this.owner.location);
    } finally {
      c.release();
    }
  }
}
