import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    // Each file in its own process: CPU kernels are worker threads with SharedArrayBuffers and spin loops.
    pool: 'forks',
    // One real PostgreSQL server for the run (the postgres-store tests); the run fails if it cannot start.
    globalSetup: ['packages/postgres-store/test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', 'json'],
    outputFile: { json: '.vitest-report.json' },
    typecheck: { enabled: true, include: ['**/*.test-d.ts'], tsconfig: './tsconfig.json' },
  },
});
