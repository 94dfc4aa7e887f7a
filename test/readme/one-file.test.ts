/**
 * The README's grain and its system snippet, pasted into one file, run as a program: the first thing many
 * users try. Each CPU worker imports that file for the grain class; the system in it must not start
 * again there (core grain-import.ts). The code generator imports it the same way.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = path.join(root, 'test', '.readme-one-file');
const file = path.join(dir, 'bank.ts');

/** The README's ```ts blocks, in order, as one program, plus a line that shows it ran to the end. */
function readmeProgram(): string {
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  expect(blocks.length).toBeGreaterThanOrEqual(2);
  return `${blocks[0]}\n${blocks[1]}\nconsole.log('README PROGRAM DONE');\n`;
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the README's code in one file", () => {
  it('runs to the end on the CPU backend (workers import the file without starting its system)', () => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, readmeProgram());
    const r = spawnSync(process.execPath, ['--import', 'tsx', file], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, RINGGRAIN_LOG: 'warn' },
    });
    expect(r.error, `${r.stdout}\n${r.stderr}`).toBeUndefined();
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('README PROGRAM DONE');
  });

  it('ringgrain codegen generates its kernel without running its system', () => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, readmeProgram());
    const out = path.join(dir, 'out');
    const r = spawnSync(
      process.execPath,
      ['--import', 'tsx', path.join(root, 'packages/codegen/src/cli.ts'), file, '--out', out],
      { cwd: root, encoding: 'utf8', timeout: 60_000 },
    );
    expect(r.error, `${r.stdout}\n${r.stderr}`).toBeUndefined();
    expect(r.status, r.stderr).toBe(0);
    expect(readFileSync(path.join(out, 'Account.cu'), 'utf8')).toContain('rg_Account_main');
  });
});
