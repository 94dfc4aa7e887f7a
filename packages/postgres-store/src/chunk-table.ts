import pg from 'pg';
import { stateIdent } from './ident.ts';
import {
  CHUNK,
  ChunkWriter,
  StateDecodeError,
  StateReadBuilder,
  StateVersionConflictError,
  checkDelete,
  checkKeys,
  checkScanLimit,
  checkPut,
  chunkOf,
  forEachChunk,
  keyOrder,
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
  versionIn,
  type Chunk,
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
import { readCopy } from './copy.ts';
import { KIND } from './errors.ts';
import type { PgFences } from './fences.ts';
import { copyIn, copyOut, inTransaction, withClient, type Owner } from './session.ts';

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/** Binary COPY of (chunk int8, rows bytea) records. */
function* chunkCopy(records: ReadonlyArray<readonly [number, Buffer]>): Generator<Buffer> {
  const head = Buffer.alloc(SIGNATURE.length + 8);
  SIGNATURE.copy(head);
  yield head;
  for (const [cid, rows] of records) {
    const b = Buffer.allocUnsafe(2 + 12 + 4);
    b.writeInt16BE(2, 0);
    b.writeInt32BE(8, 2);
    b.writeBigInt64BE(BigInt(cid), 6);
    b.writeInt32BE(rows.length, 14);
    yield b;
    yield rows;
  }
  const tail = Buffer.alloc(2);
  tail.writeInt16BE(-1);
  yield tail;
}

/** A PostgreSQL array literal of chunk ids (safe integers: no quoting needed). */
const idList = (ids: Iterable<number>): string => `'{${[...ids].join(',')}}'::bigint[]`;

/**
 * An int-keyed grain class as a table of chunks (core's chunk format: 64 consecutive keys in one
 * `rows bytea` record keyed by `chunk`). A write locks the chunks it touches (SELECT ... FOR UPDATE),
 * reads them with binary COPY, merges the batch in (checking every row's expected version), and writes
 * them back through a staged COPY: one UPDATE for chunks that existed, one INSERT for new ones.
 */
export class ChunkTable implements StateTable<number> {
  private readonly t: string;
  private readonly writer = new ChunkWriter();

  constructor(
    private readonly owner: Owner,
    readonly spec: StateTableSpec,
    private readonly fences: PgFences,
  ) {
    this.t = `${pg.escapeIdentifier(owner.schema)}.${pg.escapeIdentifier(stateIdent(spec.name))}`;
  }

  async claim(partitions: ArrayLike<number>, epochs: ArrayLike<number>): Promise<Float64Array> {
    this.owner.check('claim');
    return this.fences.claim(this.spec, partitions, epochs);
  }

  async claimed(partitions: ArrayLike<number>): Promise<Float64Array> {
    this.owner.check('claimed');
    return this.fences.read(this.spec, partitions);
  }

  /** Chunk records stay inline up to 8 KB (no TOAST compression of a 3 KB record on every write). */
  createSql(): string {
    return (
      `CREATE TABLE IF NOT EXISTS ${this.t} (chunk bigint PRIMARY KEY, rows bytea NOT NULL) WITH ` +
      '(toast_tuple_target = 8160)'
    );
  }

  private readonly check = (key: number, version: number, size: number): void => {
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
  };

  private parse(cid: number, buf: Uint8Array): Chunk {
    const c = parseChunk(buf);
    if (typeof c === 'string') throw new StateDecodeError(KIND, this.spec.name, cid * CHUNK, c);
    return c;
  }

  /** The stored chunks among `ids`, by id (views into one COPY buffer). */
  private async chunks(c: pg.PoolClient, ids: Iterable<number>, lock: boolean): Promise<Map<number, Chunk>> {
    const list = idList(ids);
    // COPY cannot lock rows: lock them with a plain SELECT first (the transaction keeps the locks), in
    // chunk order, so two writers over overlapping chunks wait for each other instead of deadlocking.
    if (lock) await c.query(`SELECT 1 FROM ${this.t} WHERE chunk = ANY(${list}) ORDER BY chunk FOR UPDATE`);
    const data = await copyOut(
      c,
      `COPY (SELECT chunk, rows FROM ${this.t} WHERE chunk = ANY(${list})) TO STDOUT (FORMAT binary)`,
    );
    const out = new Map<number, Chunk>();
    readCopy(data, 2, (b, at) => {
      const cid = Number(b.readBigInt64BE(at[0]!));
      out.set(cid, this.parse(cid, b.subarray(at[2]!, at[3]!)));
    });
    return out;
  }

  /** Writes merged chunks back: UPDATE those that existed, INSERT the new ones. */
  private async store(
    c: pg.PoolClient,
    changed: Array<readonly [number, Buffer]>,
    existed: ReadonlyMap<number, Chunk>,
  ): Promise<number[]> {
    if (changed.length === 0) return [];
    await c.query('CREATE TEMP TABLE rg_chunks (chunk int8, rows bytea) ON COMMIT DROP');
    await copyIn(c, 'COPY rg_chunks FROM STDIN (FORMAT binary)', chunkCopy(changed));
    await c.query(
      `UPDATE ${this.t} t SET rows = s.rows FROM rg_chunks s WHERE t.chunk = s.chunk AND t.chunk = ` +
        `ANY(${idList(existed.keys())})`,
    );
    const fresh = changed.filter(([cid]) => !existed.has(cid)).map(([cid]) => cid);
    if (fresh.length === 0) return [];
    const inserted = await c.query<{ chunk: string }>(
      `INSERT INTO ${this.t} (chunk, rows) SELECT chunk, rows FROM rg_chunks WHERE chunk = ` +
        `ANY(${idList(fresh)}) ON CONFLICT (chunk) DO NOTHING RETURNING chunk`,
    );
    // A chunk another writer created since we read: our rows there were checked against "absent".
    if (inserted.rows.length === fresh.length) return [];
    const got = new Set(inserted.rows.map((r) => Number(r.chunk)));
    return fresh.filter((cid) => !got.has(cid));
  }

  /**
   * The conflict for a chunk another writer created during this batch: its first batch row against what is stored now.
   */
  private async raced(
    c: pg.PoolClient,
    cid: number,
    keys: ArrayLike<number>,
    expected: ArrayLike<number>,
  ): Promise<Error> {
    let row = -1;
    for (let i = 0; i < keys.length; i++) if (chunkOf(keys[i]!) === cid && (row < 0 || keys[i]! < keys[row]!)) row = i;
    const now = (await this.chunks(c, [cid], false)).get(cid) ?? null;
    return new StateVersionConflictError(
      KIND,
      this.spec.name,
      keys[row],
      row,
      expected[row]!,
      versionIn(now, keys[row]!, this.check),
    );
  }

  async get(key: number): Promise<StateEntry | undefined> {
    this.owner.check('get');
    checkKeys(KIND, this.spec, [key]);
    const cid = chunkOf(key);
    const r = await withClient(this.owner, `get on "${this.spec.name}"`, (c) =>
      c.query<{ rows: Buffer }>(`SELECT rows FROM ${this.t} WHERE chunk = $1`, [cid]),
    );
    const buf = r.rows[0]?.rows;
    if (!buf) return undefined;
    const ch = this.parse(cid, buf);
    const row = rowOf(ch, key - cid * CHUNK);
    if (row < 0) return undefined;
    const s = stateStart(ch, row);
    const e = stateEnd(ch, row);
    this.check(key, versionAt(ch, row), e - s);
    const entry = { version: versionAt(ch, row), state: new Uint8Array(buf.subarray(s, e)) };
    return ch.epochsAt === 0 ? entry : { ...entry, epoch: epochAt(ch, row) };
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
    this.owner.check('getMany');
    const n = checkKeys(KIND, this.spec, keys);
    const out = new StateReadBuilder(n, n * (this.spec.stateSize ?? 32));
    if (n === 0) return out.read();
    const ids = new Set<number>();
    for (let i = 0; i < n; i++) ids.add(chunkOf(keys[i]!));
    const chunks = await inTransaction(this.owner, `getMany on "${this.spec.name}"`, (c) => this.chunks(c, ids, false));
    for (let i = 0; i < n; i++) {
      const key = keys[i]!;
      const cid = chunkOf(key);
      const ch = chunks.get(cid);
      const r = ch ? rowOf(ch, key - cid * CHUNK) : -1;
      if (r < 0) {
        out.missing();
        continue;
      }
      const s = stateStart(ch!, r);
      const e = stateEnd(ch!, r);
      this.check(key, versionAt(ch!, r), e - s);
      const at = out.reserve(e - s);
      out.bytes.set(ch!.buf.subarray(s, e), at);
      out.found(versionAt(ch!, r), e - s);
    }
    return out.read();
  }

  async putMany(batch: PutBatch<number>): Promise<Float64Array> {
    this.owner.check('putMany');
    const n = checkPut(KIND, this.spec, batch);
    const order = keyOrder(KIND, this.spec, batch.keys);
    const { keys, expected } = batch;
    const versions = new Float64Array(n);
    if (n === 0) return versions;
    const sp = spans(batch.states);
    const rowAt = order === null ? (j: number) => j : (j: number) => order[j]!;
    const runs: Array<readonly [number, number, number]> = [];
    forEachChunk(keys, n, rowAt, (cid, from, to) => runs.push([cid, from, to]));
    const epochs = batch.fence?.epochs;
    await inTransaction(this.owner, `putMany on "${this.spec.name}"`, async (c) => {
      // Fenced (a cluster's write): the partitions' claims held (FOR SHARE) until this commits.
      await this.fences.check(c, this.spec, keys, batch.fence, n);
      const stored = await this.chunks(
        c,
        runs.map((r) => r[0]),
        true,
      );
      const changed: Array<readonly [number, Buffer]> = [];
      for (const [cid, from, to] of runs) {
        const merged = mergePut(
          this.writer,
          stored.get(cid) ?? null,
          { cid, keys, expected, rowAt, from, to, epochs },
          sp,
          versions,
          this.check,
        );
        if (!(merged instanceof Uint8Array))
          throw new StateVersionConflictError(
            KIND,
            this.spec.name,
            keys[merged.row],
            merged.row,
            expected[merged.row]!,
            merged.found,
          );
        changed.push([cid, Buffer.from(merged)]);
      }
      const lost = await this.store(c, changed, stored);
      if (lost.length > 0) throw await this.raced(c, lost[0]!, keys, expected);
    });
    return versions;
  }

  async deleteMany(batch: DeleteBatch<number>): Promise<number> {
    this.owner.check('deleteMany');
    const n = checkDelete(KIND, this.spec, batch);
    if (n === 0) return 0;
    const order = keyOrder(KIND, this.spec, batch.keys);
    const { keys, expected } = batch;
    const rowAt = order === null ? (j: number) => j : (j: number) => order[j]!;
    const runs: Array<readonly [number, number, number]> = [];
    forEachChunk(keys, n, rowAt, (cid, from, to) => runs.push([cid, from, to]));
    return inTransaction(this.owner, `deleteMany on "${this.spec.name}"`, async (c) => {
      // Fenced: the partitions' claims held (FOR SHARE) until this commits, as putMany's.
      await this.fences.check(c, this.spec, keys, batch.fence, n);
      const stored = await this.chunks(
        c,
        runs.map((r) => r[0]),
        true,
      );
      const changed: Array<readonly [number, Buffer]> = [];
      const emptied: number[] = [];
      let deleted = 0;
      for (const [cid, from, to] of runs) {
        const r = mergeDelete(
          this.writer,
          stored.get(cid) ?? null,
          { cid, keys, expected, rowAt, from, to },
          this.check,
        );
        if (!('deleted' in r))
          throw new StateVersionConflictError(KIND, this.spec.name, keys[r.row], r.row, expected![r.row]!, r.found);
        deleted += r.deleted;
        if (r.chunk === null) emptied.push(cid);
        else if (r.chunk !== undefined) changed.push([cid, Buffer.from(r.chunk)]);
      }
      if (emptied.length > 0) await c.query(`DELETE FROM ${this.t} WHERE chunk = ANY(${idList(emptied)})`);
      await this.store(c, changed, stored);
      return deleted;
    });
  }

  async scan(opts: ScanOptions<number>): Promise<StatePage<number>> {
    this.owner.check('scan');
    const limit = checkScanLimit(KIND, this.spec, opts.limit);
    const after = opts.after;
    if (after !== undefined) checkKeys(KIND, this.spec, [after]);
    const keys: number[] = [];
    const out = new StateReadBuilder(limit, limit * (this.spec.stateSize ?? 32));
    let more = false;
    // Chunks in id order, a batch at a time, until the page is full (sparse chunks hold one row each).
    const batch = Math.min(limit + 1, 4096);
    let from = after === undefined ? undefined : chunkOf(after);
    await inTransaction(this.owner, `scan on "${this.spec.name}"`, async (c) => {
      for (;;) {
        const data = await copyOut(
          c,
          `COPY (SELECT chunk, rows FROM ${this.t} ${from === undefined ? '' : `WHERE chunk >= ${from}`} ` +
            `ORDER BY chunk LIMIT ${batch}) TO STDOUT (FORMAT binary)`,
        );
        let got = 0;
        let last = 0;
        readCopy(data, 2, (b, at) => {
          got++;
          last = Number(b.readBigInt64BE(at[0]!));
          if (more) return;
          const ch = this.parse(last, b.subarray(at[2]!, at[3]!));
          for (let r = 0; r < ch.n; r++) {
            const key = last * CHUNK + slotAt(ch, r);
            if (after !== undefined && key <= after) continue;
            if (keys.length === limit) {
              more = true;
              return;
            }
            const s = stateStart(ch, r);
            const e = stateEnd(ch, r);
            this.check(key, versionAt(ch, r), e - s);
            out.add(versionAt(ch, r), ch.buf.subarray(s, e));
            keys.push(key);
          }
        });
        if (more || got < batch) return;
        from = last + 1;
      }
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
    const r = await withClient(this.owner, `count on "${this.spec.name}"`, (c) =>
      c.query<{ n: string }>(`SELECT coalesce(sum(get_byte(rows, 1)), 0) AS n FROM ${this.t}`),
    );
    return Number(r.rows[0]!.n);
  }
}
