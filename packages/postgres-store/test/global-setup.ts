/**
 * vitest globalSetup: one real PostgreSQL server for the whole run (test/server.ts), its URL provided to
 * tests as `inject('pgUrl')`, stopped after the run. Never skipped: if no server can start, the run fails.
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

export async function setup(project: TestProject): Promise<void> {
  server = await startPostgres();
  project.provide('pgUrl', server.url);
  project.provide('pgBinaries', server.binaries);
}

export async function teardown(): Promise<void> {
  await server?.stop();
}
