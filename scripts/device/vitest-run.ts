/**
 * Runs vitest on one path in a child process (GPU-machine scripts) and reads its JSON report into
 * counts. One place for both device record scripts.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface TestCounts {
  passed: number;
  failed: number;
  skipped: number;
  total: number;
  exitCode: number | null;
  failures: string[];
  skippedNames: string[];
}

export function emptyCounts(): TestCounts {
  return { passed: 0, failed: 0, skipped: 0, total: 0, exitCode: 0, failures: [], skippedNames: [] };
}

/** Runs `vitest run <path> ...args`, adds its results to `into`; a run past timeoutMs is recorded, not thrown. */
export function runVitestPath(
  path: string,
  report: string,
  timeoutMs: number,
  args: readonly string[],
  into: TestCounts,
): TestCounts {
  const r = spawnSync(
    process.execPath,
    [
      'node_modules/vitest/vitest.mjs',
      'run',
      path,
      ...args,
      '--reporter=verbose',
      '--reporter=json',
      `--outputFile.json=${report}`,
    ],
    {
      stdio: 'inherit',
      timeout: timeoutMs,
    },
  );
  if (r.status !== 0) into.exitCode = r.status ?? -1;
  if (r.error) into.failures.push(`${path}: vitest did not finish (${String(r.error)})`);
  try {
    const json = JSON.parse(readFileSync(report, 'utf8')) as {
      testResults: { assertionResults: { status: string; fullName: string; failureMessages?: string[] }[] }[];
    };
    for (const file of json.testResults) {
      for (const t of file.assertionResults) {
        into.total++;
        if (t.status === 'passed') into.passed++;
        else if (t.status === 'failed') {
          into.failed++;
          into.failures.push(`${t.fullName}: ${(t.failureMessages ?? []).join(' | ').slice(0, 600)}`);
        } else {
          into.skipped++;
          into.skippedNames.push(t.fullName);
        }
      }
    }
  } catch (e) {
    into.failures.push(`${path}: could not read the vitest JSON report: ${String(e)}`);
  }
  return into;
}
