/**
 * The state store contract (test/store-contract) against a real PostgreSQL server (the globalSetup's):
 * a fresh schema per store.
 */
import net from 'node:net';
import pg from 'pg';
import { expect, inject, it } from 'vitest';
import { CHUNK, chunkOf, parseChunk, rowOf } from '@ringgrain/core/store';
import { storeContract } from '../../../test/store-contract/contract.ts';
import { PostgresStore } from '../src/index.ts';

const url = inject('pgUrl');
let n = 0;

/** A loopback port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
const deadPort = await closedPort();

storeContract({
  name: `postgres (${inject('pgBinaries')})`,
  make: async () => new PostgresStore({ connection: url, schema: `contract_${process.pid}_${n++}` }),
  reopen: (store) => new PostgresStore({ connection: url, schema: (store as PostgresStore).schema }),
  corrupt: async (store, table, key) => {
    const c = new pg.Client(url);
    await c.connect();
    const t = `${pg.escapeIdentifier((store as PostgresStore).schema)}.${pg.escapeIdentifier(table)}`;
    try {
      if (typeof key === 'string') {
        await c.query(`UPDATE ${t} SET version = 0 WHERE key = $1`, [key]);
        return;
      }
      // Version 0 for the key's row inside its chunk; the chunk's other rows stay readable.
      const cid = chunkOf(key);
      const buf = (await c.query<{ rows: Buffer }>(`SELECT rows FROM ${t} WHERE chunk = $1`, [cid])).rows[0]!.rows;
      const ch = parseChunk(buf);
      if (typeof ch === 'string') throw new Error(ch);
      ch.dv.setFloat64(ch.versionsAt + 8 * rowOf(ch, key - cid * CHUNK), 0, true);
      await c.query(`UPDATE ${t} SET rows = $2 WHERE chunk = $1`, [cid, buf]);
    } finally {
      await c.end();
    }
  },
  unreachable: () =>
    new PostgresStore({ connection: `postgres://postgres@127.0.0.1:${deadPort}/postgres`, connectTimeoutMs: 5000 }),
});

it(
  'a schema name PostgreSQL would cut is refused; a long ' + 'table name maps to the same table on every open',
  async () => {
    expect(() => new PostgresStore({ connection: url, schema: `s${'x'.repeat(63)}` })).toThrow(
      expect.objectContaining({ code: 'STATE_TABLE_SPEC', message: expect.stringMatching(/PostgreSQL keeps 63/) }),
    );
    const schema = `contract_${process.pid}_long`;
    const spec = { name: `Long${'y'.repeat(80)}`, keyKind: 'int', stateSize: 8 } as const;
    const a = new PostgresStore({ connection: url, schema });
    await a.open();
    await (await a.table(spec)).put(5, new Uint8Array(8).fill(9), 0);
    await a.close();
    const b = new PostgresStore({ connection: url, schema });
    await b.open();
    expect((await (await b.table(spec)).get(5))?.state).toEqual(new Uint8Array(8).fill(9));
    await b.close();
  },
);
