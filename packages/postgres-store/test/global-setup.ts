/**
 * vitest globalSetup: one real PostgreSQL server for the whole run (test/server.ts), its URL provided to
 * tests as `inject('pgUrl')`, stopped after the run. Never skipped: if no server can start, a run that
 * includes the PostgreSQL tests fails.
 */
import { readdirSync } from 'node:fs';
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
  const filters = argv.filter(
    (a) => !a.startsWith('-') && a !== 'run' && !/vitest(\.m?js)?$/.test(a) && !a.endsWith('node'),
  );
  // vitest matches a filter anywhere in a file's path (`test/persistence` matches this package's persistence.test.ts).
  const files = readdirSync(new URL('.', import.meta.url))
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => NEEDS_SERVER + f);
  return (
    filters.length === 0 ||
    filters.some((f) => {
      const g = f.replace(/^\.\//, '');
      return NEEDS_SERVER.includes(g) || g.includes('postgres-store') || files.some((path) => path.includes(g));
    })
  );
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
