/**
 * README "One file is fine": the grain and the program that uses it may live in one file; CPU worker threads
 * import the file for its grain classes and a system in it never starts there. one-file-program.ts is such a
 * program as a user writes it (classes not exported, a top-level await first, the system inside main()).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const program = fileURLToPath(new URL('./one-file-program.ts', import.meta.url));

describe('one file', () => {
  it('runs on a two-thread CPU pool to the end and exits by itself, every message counted once', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', program], {
      cwd: root,
      encoding: 'utf8',
      timeout: 90_000,
    });
    expect(r.error, `${r.stdout}\n${r.stderr}`).toBeUndefined();
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    // Printed once: the workers that import the file never reach the end of main().
    expect(lines.length, r.stdout).toBe(1);
    expect(JSON.parse(lines[0]!)).toEqual({ counts: Array(10).fill(100), totals: [334, 333, 333], k2k: [1000, 1000] });
  }, 120_000);
});
