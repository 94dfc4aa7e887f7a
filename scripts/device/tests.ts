/**
 * Runs ON the GPU machine: the CUDA backend's tests and every conformance lane (cpu, cuda, cuda-isolated),
 * one vitest child process per path, and writes $OUT/tests.json ({ passed, failed, skipped, paths, failures }).
 *   node --import tsx scripts/device/tests.ts [paths…]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { emptyCounts, runVitestPath } from './vitest-run.ts';

const outDir = process.env['OUT'] ?? path.resolve('.device/out');
mkdirSync(outDir, { recursive: true });
const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  console.log(
    'usage: node --import tsx scripts/device/tests.ts [paths…]   (default: packages/cuda-backend/test ' +
      'test/conformance)',
  );
  process.exit(0);
}
const paths = argv.length ? argv : ['packages/cuda-backend/test', 'test/conformance'];
const counts = emptyCounts();
for (const [i, p] of paths.entries()) {
  console.log(`== vitest ${p}`);
  // One GPU test file at a time: they share one device, and the leak tests read device-wide free memory.
  runVitestPath(p, path.join(os.tmpdir(), `rg-vitest-${i}.json`), 480_000, ['--no-file-parallelism'], counts);
}
const record = { paths, commit: process.env['RG_COMMIT'] ?? null, ...counts };
writeFileSync(path.join(outDir, 'tests.json'), `${JSON.stringify(record, null, 2)}\n`);
console.log(`tests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
for (const f of counts.failures) console.log(`  FAILED ${f.slice(0, 300)}`);
process.exit(counts.failed === 0 && counts.exitCode === 0 ? 0 : 1);
