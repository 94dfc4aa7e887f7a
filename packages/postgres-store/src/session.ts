/** What tables share: their store, COPY in and out, and one transaction with typed failures. */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import { pgError } from './errors.ts';

/** What a table needs of its store. */
export interface Owner {
  readonly schema: string;
  readonly location: string;
  client(what: string): Promise<pg.PoolClient>;
  check(what: string): void;
}

export async function copyIn(c: pg.PoolClient, sql: string, chunks: Iterable<Buffer>): Promise<void> {
  await pipeline(Readable.from(chunks), c.query(copyFrom(sql)));
}

export async function copyOut(c: pg.PoolClient, sql: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const b of c.query(copyTo(sql))) parts.push(b as Buffer);
  return Buffer.concat(parts);
}

/** Runs `fn` in one transaction; any failure rolls it back and surfaces typed. */
export async function inTransaction<T>(owner: Owner, what: string, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await owner.client(what);
  let committing = false;
  let broken: Error | undefined;
  try {
    await c.query('BEGIN');
    const r = await fn(c);
    committing = true;
    await c.query('COMMIT');
    return r;
  } catch (e) {
    if (!committing) await c.query('ROLLBACK').catch((r: Error) => (broken = r));
    else broken = e as Error;
    throw pgError(e, what, owner.location, committing);
  } finally {
    // A connection that failed to roll back or commit is dropped, not reused.
    c.release(broken);
  }
}

/** Runs one statement's worth of work on a pooled connection, failures typed. */
export async function withClient<T>(owner: Owner, what: string, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await owner.client(what);
  try {
    return await fn(c);
  } catch (e) {
    throw pgError(e, what, owner.location);
  } finally {
    c.release();
  }
}

/**
 * Runs `CREATE ... IF NOT EXISTS` statements in one transaction that first takes a transaction-scoped
 * advisory lock shared by every Ringgrain store on the server. PostgreSQL's IF NOT EXISTS is not safe
 * under concurrency: two sessions creating the same table (three silos opening one store at once) can both
 * pass the check, and one fails on pg_type's unique index (SQLSTATE 23505). Serialized, the second sees
 * the first's table and does nothing.
 */
export async function ddl(c: pg.PoolClient, ...statements: string[]): Promise<void> {
  await c.query('BEGIN');
  try {
    await ddlLock(c);
    for (const sql of statements) await c.query(sql);
    await c.query('COMMIT');
  } catch (e) {
    await c.query('ROLLBACK').catch(() => {});
    throw e;
  }
}

/** The advisory lock key of ddl() and ddlLock(): "ringgrai" in ASCII as a 64-bit number. */
const DDL_LOCK = '8244241983274639721';

/** Inside a transaction the caller runs: takes ddl()'s lock before its CREATE ... IF NOT EXISTS. */
export async function ddlLock(c: pg.PoolClient): Promise<void> {
  await c.query(`SELECT pg_advisory_xact_lock(${DDL_LOCK})`);
}
