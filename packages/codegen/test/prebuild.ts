/**
 * Builds the compile test's units (units.ts) into the build cache (toolchain.ts), two at a time, so that
 * compile.test.ts finds them built: the run's global setup (prebuild-setup.ts) starts it at low priority
 * when the run begins, and it uses the CPU the test files leave idle. A unit it is building when the test
 * asks for it is waited for (the cache's lock), never built twice. Run by hand: `npx tsx <this file>`.
 */
import { HAVE_NVCC, nvccCompileAsync, pool } from './toolchain.ts';
import { unitJobs } from './units.ts';

if (HAVE_NVCC) {
  const t0 = performance.now();
  const jobs = unitJobs();
  const built = await pool(jobs, 2, (j) => nvccCompileAsync(j.source, j.arch, j.depth));
  const failed = built.filter((b) => !b.ok).length;
  console.log(`prebuild: ${jobs.length} units (${failed} failed) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}
