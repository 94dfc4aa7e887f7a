/** The state store contract (test/store-contract) against LMDB: a fresh data directory per store. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { open } from 'lmdb';
import { afterAll } from 'vitest';
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
    // A value shorter than the version lmdb-js keeps in front of it, through a handle without versions.
    const env = open({ path: store.location, maxDbs: 64, compression: false });
    env.openDB<Buffer, number | string>({ name: table, encoding: 'binary', compression: false }).putSync(key, Buffer.from([1, 2, 3]));
  },
  unreachable: () => {
    const file = path.join(root, 'a-file');
    writeFileSync(file, 'not a directory');
    return new LmdbStore({ dataDir: path.join(file, 'state') });
  },
});
