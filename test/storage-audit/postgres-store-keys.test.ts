/**
 * The key-space audit (cases.ts) on the PostgreSQL store. Named `postgres-store-…` so that a run filtered
 * to this file starts the server (the vitest global setup starts it for filters that name postgres-store);
 * a run filtered to `test/storage-audit` alone has no server and skips this file.
 */
import { CpuBackend } from '@ringgrain/cpu-backend';
import { InlineBackend } from '@ringgrain/inline-backend';
import { PostgresStore } from '@ringgrain/postgres-store';
import { StateBatchError } from '@ringgrain/core/store';
import { describe, expect, inject, it } from 'vitest';
import { systemCases, tableCases, type AuditFixture } from './cases.ts';

const url = inject('pgUrl') as string | undefined;
let n = 0;

const fixture: AuditFixture = {
  make: async () => new PostgresStore({ connection: url!, schema: `audit_${process.pid}_${n++}` }),
  reopen: (store) => new PostgresStore({ connection: url!, schema: (store as PostgresStore).schema }),
  // PostgreSQL text holds no NUL.
  refusedStrings: ['a\u0000b'],
  backends: [
    ['cpu (1 thread)', () => new CpuBackend({ threads: 1 })],
    ['inline', () => new InlineBackend()],
  ],
};

describe.skipIf(!url)('PostgreSQL store: StateTable key space', () => {
  tableCases(fixture);
  it('a string key with NUL is a StateBatchError in every call, before any SQL', async () => {
    const store = await fixture.make();
    await store.open();
    try {
      const t = await store.table({ name: 'AuditNul', keyKind: 'string', stateSize: 4 });
      for (const k of ['\u0000', 'a\u0000', 'a\u0000b']) {
        await expect(t.put(k, new Uint8Array(4), 0)).rejects.toBeInstanceOf(StateBatchError);
        await expect(t.get(k)).rejects.toBeInstanceOf(StateBatchError);
        await expect(t.getMany(['ok', k])).rejects.toBeInstanceOf(StateBatchError);
        await expect(t.deleteMany({ keys: [k] })).rejects.toBeInstanceOf(StateBatchError);
        await expect(t.scan({ after: k, limit: 1 })).rejects.toBeInstanceOf(StateBatchError);
      }
      expect(await t.count()).toBe(0);
    } finally {
      await store.close();
    }
  });
});
describe.skipIf(!url)('PostgreSQL store: programs over the key space', () => systemCases(fixture));
