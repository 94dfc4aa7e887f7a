/**
 * The whole project type-checks (`pnpm typecheck`: tsc on tsconfig.json, whose include has every package's
 * src and test, examples, test, bench and scripts), the type tests (`*.test-d.ts`: expectTypeOf and
 * @ts-expect-error lines) among them. Run here as one test file rather than vitest's typecheck mode, which
 * runs after every other file as a group of its own (a serial ~30–60 s tail on the 2-core machine); here it
 * overlaps the other files. Incremental: a later run on the machine reads what did not change from
 * node_modules/.cache.
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

it('tsc -p tsconfig.json --noEmit reports no error (type tests included)', async () => {
  const cache = join(ROOT, 'node_modules/.cache/ringgrain');
  mkdirSync(cache, { recursive: true });
  const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
  const args = [
    tsc,
    '-p',
    join(ROOT, 'tsconfig.json'),
    '--noEmit',
    '--pretty',
    'false',
    '--incremental',
    '--tsBuildInfoFile',
    join(cache, 'tsc.tsbuildinfo'),
  ];
  const { code, out } = await new Promise<{ code: number | null; out: string }>((done) => {
    const p = spawn(process.execPath, args, { cwd: ROOT });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.on('close', (c) => done({ code: c, out }));
  });
  expect(out).toBe('');
  expect(code).toBe(0);
}, 600_000);
