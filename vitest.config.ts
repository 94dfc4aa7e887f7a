import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';
import SlowFirst from './test/sequencer.ts';
import { SHARED_FILES } from './test/shared-files.ts';

/**
 * Files run two at a time on a 2-core machine (vitest's default is cores − 1, which is one file at a time
 * there): many files wait on child processes (tsx, g++/nvcc, PostgreSQL, nats-server) and leave a core idle.
 * RINGGRAIN_TEST_WORKERS sets another width.
 */
const workers = Number(process.env.RINGGRAIN_TEST_WORKERS) || Math.max(2, availableParallelism() - 1);
const ALL = ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'];

export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: workers,
    // The longest files start first (test/sequencer.ts), so that two workers end together.
    sequence: { sequencer: SlowFirst },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // skip-summary: the run ends with one line of skipped tests by reason (the CUDA lanes without a GPU, ...).
    reporters: ['default', 'json', './test/skip-summary.ts'],
    outputFile: { json: '.vitest-report.json' },
    // The type tests (*.test-d.ts) are checked by tsc in test/typecheck/tsc.test.ts, beside the other files:
    // vitest's typecheck mode runs them after every other file, alone.
    projects: [
      {
        extends: true,
        test: {
          name: 'isolated',
          include: ALL,
          // vitest's own excludes (node_modules: test/'s workspace links hold other packages' tests) stay.
          exclude: [...configDefaults.exclude, ...SHARED_FILES],
          // Each file in its own process: CPU kernels are worker threads with SharedArrayBuffers and spin
          // loops, some files kill threads and processes, install signal handlers or hold a CUDA context.
          isolate: true,
          // One real PostgreSQL server for the run (the postgres-store tests); the run fails if it cannot
          // start. And the compile test's nvcc builds, started in the background at low priority
          // (prebuild-setup.ts). Both projects share the one pool of workers; only this one has the setups.
          globalSetup: ['packages/postgres-store/test/global-setup.ts', 'packages/codegen/test/prebuild-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'shared',
          include: [...SHARED_FILES],
          // Files that leave nothing behind (test/shared-files.ts) run one after another in a reused process:
          // a fork and the module imports (1-3 s of CPU each) once per worker instead of once per file.
          isolate: false,
          // Their hang guard. The code generator's tests here build g++ harnesses and nvcc units; with an
          // empty build cache (a fresh CI machine) and a loaded machine (load average 22 on 2 cores, 2026-11-28)
          // a test's first builds took past 60 s.
          testTimeout: 300_000,
          hookTimeout: 300_000,
        },
      },
    ],
  },
});
