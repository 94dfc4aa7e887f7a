import pg from 'pg';
import {
  FENCE_TABLE,
  checkFence,
  fenceColumns,
  type PartitionFence,
  type StateKey,
  type StateTableSpec,
} from '@ringgrain/core/store';
import { KIND } from './errors.ts';
import { ddlLock, inTransaction, withClient, type Owner } from './session.ts';

/**
 * Cluster fencing (core store/fence.ts) in one table of the schema: (grain, part) → the newest epoch
 * claimed. A fenced write reads its partitions' rows FOR SHARE in its own transaction, so a newer claim
 * (an UPDATE of those rows) waits for the write to commit, and a write after the claim sees it.
 */
export class PgFences {
  private readonly t: string;
  private ready: Promise<void> | undefined;

  constructor(private readonly owner: Owner) {
    this.t = `${pg.escapeIdentifier(owner.schema)}.${pg.escapeIdentifier(FENCE_TABLE)}`;
  }

  /** Creates the table once (IF NOT EXISTS: any silo may be first). */
  private create(): Promise<void> {
    this.ready ??= inTransaction(this.owner, 'create the partition fences', async (c) => {
      await ddlLock(c); // IF NOT EXISTS races between silos (session.ts ddl())
      await c.query(
        `CREATE TABLE IF NOT EXISTS ${this.t} (grain text NOT NULL, part integer NOT NULL, epoch bigint ` +
          'NOT NULL, PRIMARY KEY (grain, part))',
      );
    }).catch((e: unknown) => {
      this.ready = undefined;
      throw e;
    });
    return this.ready;
  }

  /** Inside the write's transaction: throws StateFencedError for the first row below its partition's claim. */
  async check(
    c: pg.PoolClient,
    spec: StateTableSpec,
    keys: ArrayLike<StateKey>,
    fence: PartitionFence | undefined,
    n: number,
  ): Promise<void> {
    if (fence === undefined) return;
    const parts = fenceColumns(KIND, spec, fence, n);
    await this.create();
    const r = await c.query<{ part: number; epoch: string }>(
      `SELECT part, epoch FROM ${this.t} WHERE grain = $1 AND part = ANY($2::integer[]) FOR SHARE`,
      [spec.name, parts],
    );
    const claimed = new Map(r.rows.map((row) => [row.part, Number(row.epoch)]));
    checkFence(KIND, spec, keys, fence, (p) => claimed.get(p) ?? 0);
  }

  async read(spec: StateTableSpec, partitions: ArrayLike<number>): Promise<Float64Array> {
    await this.create();
    const parts = Array.from(partitions);
    const r = await withClient(this.owner, `read the partition claims of "${spec.name}"`, (c) =>
      c.query<{ part: number; epoch: string }>(
        `SELECT part, epoch FROM ${this.t} WHERE grain = $1 AND part = ANY($2::integer[])`,
        [spec.name, parts],
      ),
    );
    const got = new Map(r.rows.map((row) => [row.part, Number(row.epoch)]));
    return Float64Array.from(parts, (p) => got.get(p) ?? 0);
  }

  async claim(spec: StateTableSpec, partitions: ArrayLike<number>, epochs: ArrayLike<number>): Promise<Float64Array> {
    fenceColumns(KIND, spec, { partitions, epochs }, partitions.length);
    await this.create();
    const parts = Array.from(partitions);
    const r = await inTransaction(this.owner, `claim partitions of "${spec.name}"`, (c) =>
      c.query<{ part: number; epoch: string }>(
        `INSERT INTO ${this.t} AS f (grain, part, epoch) SELECT $1, p, GREATEST(e, 1) FROM ` +
          `unnest($2::integer[], $3::bigint[]) AS u(p, e)
         ON CONFLICT (grain, part) DO UPDATE SET epoch = GREATEST(f.epoch + 1, EXCLUDED.epoch) RETURNING part, epoch`,
        [spec.name, parts, Array.from(epochs)],
      ),
    );
    const got = new Map(r.rows.map((row) => [row.part, Number(row.epoch)]));
    return Float64Array.from(parts, (p) => got.get(p) ?? 0);
  }
}
