/**
 * A full store: a child process writes under a 1 MiB file-size limit (ulimit -f, with SIGXFSZ ignored so
 * the write fails instead of killing the process), as a full disk would stop the file growing. The batch
 * that does not fit fails with StateStoreFullError, and nothing of it is written.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { LmdbStore } from '../src/index.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'ringgrain-lmdb-full-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it(
  'a batch the file cannot grow for is a ' + 'StateStoreFullError and writes nothing; the store keeps ' + 'working',
  async () => {
    const script = fileURLToPath(new URL('./fill.ts', import.meta.url));
    const r = spawnSync(
      'bash',
      ['-c', `trap '' XFSZ; ulimit -f 1024; exec "${process.execPath}" --import tsx "${script}" "${dir}"`],
      {
        encoding: 'utf8',
        timeout: 60_000,
        cwd: fileURLToPath(new URL('..', import.meta.url)),
      },
    );
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as {
      error: Record<string, unknown> | null;
      countAfter: number;
    };
    expect(out.error).toMatchObject({ name: 'StateStoreFullError', code: 'STATE_STORE_FULL', store: 'lmdb' });
    expect(out.countAfter).toBe(100);
    // Without the limit the same directory takes writes again, and holds only the first batch.
    const store = new LmdbStore({ dataDir: dir });
    await store.open();
    const t = await store.table({ name: 'Account', keyKind: 'int', stateSize: 32 });
    expect(await t.count()).toBe(100);
    expect((await t.getMany([0, 99, 1000])).missing).toEqual(Uint32Array.of(2));
    expect(await t.put(1000, new Uint8Array(32), 0)).toBe(1);
    await store.close();
  },
);
