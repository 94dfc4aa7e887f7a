/**
 * The key-space audit (cases.ts) on the LMDB store, with the CPU backend (one thread, a pool of 2) and the inline
 * backend.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { InlineBackend } from '@ringgrain/inline-backend';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { afterAll, describe } from 'vitest';
import { systemCases, tableCases, type AuditFixture } from './cases.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rg-storage-audit-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

const fixture: AuditFixture = {
  make: async () => new LmdbStore({ dataDir: path.join(tmp, String(n++)) }),
  reopen: (store) => new LmdbStore({ dataDir: (store as LmdbStore).location }),
  backends: [
    ['cpu (1 thread)', () => new CpuBackend({ threads: 1 })],
    ['cpu (pool of 2)', () => new CpuBackend({ threads: 2 })],
    ['inline', () => new InlineBackend()],
  ],
};

describe('LMDB store: StateTable key space', () => tableCases(fixture));
describe('LMDB store: programs over the key space', () => systemCases(fixture));
