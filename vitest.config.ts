import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import SlowFirst from './test/sequencer.ts';

/**
 * Files run two at a time on a 2-core machine (vitest's default is cores − 1, which is one file at a time
 * there): many files wait on child processes (tsx, g++/nvcc, PostgreSQL, nats-server) and leave a core idle.
 * RINGGRAIN_TEST_WORKERS sets another width.
 */
const workers = Number(process.env.RINGGRAIN_TEST_WORKERS) || Math.max(2, availableParallelism() - 1);

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    // Each file in its own process: CPU kernels are worker threads with SharedArrayBuffers and spin loops.
    pool: 'forks',
    maxWorkers: workers,
    // One real PostgreSQL server for the run (the postgres-store tests); the run fails if it cannot start.
    // And the compile test's nvcc builds, started in the background at low priority (prebuild-setup.ts).
    globalSetup: ['packages/postgres-store/test/global-setup.ts', 'packages/codegen/test/prebuild-setup.ts'],
    // The longest files start first (test/sequencer.ts), so that two workers end together.
    sequence: { sequencer: SlowFirst },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // skip-summary: the run ends with one line of skipped tests by reason (the CUDA lanes without a GPU, ...).
    reporters: ['default', 'json', './test/skip-summary.ts'],
    outputFile: { json: '.vitest-report.json' },
    // The type tests (*.test-d.ts) are checked by tsc in test/typecheck/tsc.test.ts, beside the other files:
    // vitest's typecheck mode runs them after every other file, alone.
  },
});
