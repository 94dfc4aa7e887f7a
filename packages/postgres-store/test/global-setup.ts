/**
 * vitest globalSetup: one real PostgreSQL server for the whole run (test/server.ts), its URL provided to
 * tests as `inject('pgUrl')`, stopped after the run. Never skipped: if no server can start, a run that
 * includes the PostgreSQL tests fails.
 */
import type { TestProject } from 'vitest/node';
import { startPostgres, type PgServer } from './server.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    pgUrl: string;
    pgBinaries: string;
  }
}

let server: PgServer | undefined;

/** Test files that use the server (the PostgreSQL store's own tests). */
const NEEDS_SERVER = 'packages/postgres-store/test/';

/**
 * A run filtered to other files (`vitest run packages/cuda-backend/test`, as the GPU machine's test script
 * does: it has no PostgreSQL) starts no server; an unfiltered run, or one whose filter can match the
 * PostgreSQL tests, always does (and fails if it cannot).
 */
function runNeedsServer(argv: readonly string[]): boolean {
  const filters = argv.filter((a) => !a.startsWith('-') && a !== 'run' && !/vitest(\.m?js)?$/.test(a) && !a.endsWith('node'));
  return filters.length === 0 || filters.some((f) => NEEDS_SERVER.includes(f.replace(/^\.\//, '')) || f.includes('postgres-store'));
}

export async function setup(project: TestProject): Promise<void> {
  if (!runNeedsServer(process.argv.slice(2))) return;
  server = await startPostgres();
  project.provide('pgUrl', server.url);
  project.provide('pgBinaries', server.binaries);
}

export async function teardown(): Promise<void> {
  await server?.stop();
}
