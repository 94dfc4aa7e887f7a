/** The state store contract (test/store-contract) against LMDB: a fresh data directory per store. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { open } from 'lmdb';
import { afterAll } from 'vitest';
import { CHUNK, chunkOf, parseChunk, rowOf } from '@ringgrain/core/store';
import { storeContract } from '../../../test/store-contract/contract.ts';
import { LmdbStore } from '../src/index.ts';

const root = mkdtempSync(path.join(os.tmpdir(), 'ringgrain-lmdb-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

storeContract({
  name: 'lmdb',
  make: async () => new LmdbStore({ dataDir: path.join(root, `s${n++}`) }),
  reopen: (store) => new LmdbStore({ dataDir: store.location }),
  corrupt: async (store, table, key) => {
    const env = open({ path: store.location, maxDbs: 64, compression: false });
    const db = env.openDB<Buffer, number | string>({ name: table, encoding: 'binary', compression: false });
    if (typeof key === 'string') {
      // A value shorter than the version lmdb-js keeps in front of it (a handle without versions writes it).
      db.putSync(key, Buffer.from([1, 2, 3]));
      return;
    }
    // Version 0 for the key's row inside its chunk; the chunk's other rows stay readable.
    const c = parseChunk(Buffer.from(db.getBinary(chunkOf(key))!));
    if (typeof c === 'string') throw new Error(c);
    c.dv.setFloat64(c.versionsAt + 8 * rowOf(c, key - chunkOf(key) * CHUNK), 0, true);
    db.putSync(chunkOf(key), Buffer.from(c.buf));
  },
  unreachable: () => {
    const file = path.join(root, 'a-file');
    writeFileSync(file, 'not a directory');
    return new LmdbStore({ dataDir: path.join(file, 'state') });
  },
});
