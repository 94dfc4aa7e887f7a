import { defineConfig } from 'vitest/config';
import PrebuiltLast from './test/sequencer.ts';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    // Each file in its own process: CPU kernels are worker threads with SharedArrayBuffers and spin loops.
    pool: 'forks',
    // One real PostgreSQL server for the run (the postgres-store tests); the run fails if it cannot start.
    // And the compile test's nvcc builds, started in the background at low priority (prebuild-setup.ts);
    // the compile test runs last (test/sequencer.ts), by when most are in the build cache.
    globalSetup: ['packages/postgres-store/test/global-setup.ts', 'packages/codegen/test/prebuild-setup.ts'],
    sequence: { sequencer: PrebuiltLast },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // skip-summary: the run ends with one line of skipped tests by reason (the CUDA lanes without a GPU, ...).
    reporters: ['default', 'json', './test/skip-summary.ts'],
    outputFile: { json: '.vitest-report.json' },
    typecheck: { enabled: true, include: ['**/*.test-d.ts'], tsconfig: './tsconfig.json' },
  },
});
