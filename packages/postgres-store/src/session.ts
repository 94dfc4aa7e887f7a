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
