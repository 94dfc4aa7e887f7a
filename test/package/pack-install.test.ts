/**
 * Ringgrain used from outside this repository, as a user adds it: build the packages to JavaScript with
 * type declarations, pack them (`pnpm pack`: publishConfig exports, workspace versions rewritten), install
 * the tarballs into a fresh project in the system's temp directory, then
 * - compile the README's program (TypeScript) with `tsc` and the README's tsconfig.json against the
 *   installed declarations (the README's dev dependencies: typescript, @types/node),
 * - run the JavaScript tsc wrote with plain `node` (no tsx) on the CPU backend,
 * - run the installed `ringgrain --help`.
 * The install resolves third-party packages through pnpm's store first (the workspace install filled it)
 * and the registry otherwise.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
/** The README's pack loop ("Use Ringgrain in your own project"), in its order. */
const PACKAGES = [
  'core',
  'cpu-backend',
  'inline-backend',
  'cuda-backend',
  'codegen',
  'lmdb-store',
  'postgres-store',
] as const;
const pnpm = ['--yes', 'pnpm@10.34.8'];
const tmp = mkdtempSync(path.join(os.tmpdir(), 'ringgrain-user-'));

function run(cmd: string, args: string[], cwd: string, timeout = 180_000): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    timeout,
    env: { ...process.env, RINGGRAIN_LOG: 'warn', npm_config_yes: 'true' },
  });
  if (r.error || r.status !== 0)
    throw new Error(
      `${cmd} ${args.join(' ')} (in ${cwd}) ` +
        `failed: ${r.error?.message ?? `exit ${r.status}`}\n${r.stdout}\n${r.stderr}`,
    );
  return r;
}

/** The README's first two ```ts blocks (the grain, the system) as one program, and a line that shows it ended. */
function readmeProgram(): string {
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  return `${blocks[0]}\n${blocks[1]}\nconsole.log('README PROGRAM DONE');\n`;
}

/** The README's tsconfig.json (its ```json block with compilerOptions). */
function readmeTsconfig(): string {
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
  const block = [...readme.matchAll(/```json\n([\s\S]*?)```/g)]
    .map((m) => m[1]!)
    .find((b) => b.includes('"compilerOptions"'));
  if (!block) throw new Error('README.md has no tsconfig.json block');
  return block;
}

beforeAll(() => {
  run('npx', [...pnpm, '-r', 'build'], root, 420_000); // tsc of every package: minutes on a loaded 2-core machine
  const packs = path.join(tmp, 'packs');
  const tgz: Record<string, string> = {};
  for (const p of PACKAGES) {
    run('npx', [...pnpm, 'pack', '--pack-destination', packs], path.join(root, 'packages', p));
    const file = readdirSync(packs).find((f) => f.startsWith(`ringgrain-${p}-`) && f.endsWith('.tgz'));
    if (!file) throw new Error(`pnpm pack left no tarball for ${p} in ${packs}`);
    tgz[`@ringgrain/${p}`] = `file:${path.join(packs, file)}`;
  }
  const project = {
    name: 'ringgrain-user',
    private: true,
    type: 'module',
    dependencies: { ...tgz, '@types/node': '^20.19.0', typescript: '~5.9.3' },
    // The packed packages depend on each other by version; point those at the tarballs too.
    pnpm: { overrides: tgz, onlyBuiltDependencies: ['esbuild', 'koffi'] },
  };
  writeFileSync(path.join(tmp, 'package.json'), JSON.stringify(project, null, 2));
  run('npx', [...pnpm, 'install', '--prefer-offline', '--config.confirmModulesPurge=false'], tmp, 240_000);
}, 900_000);

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('the packed packages, installed outside the workspace', () => {
  it('declare their exports as built JavaScript with types', () => {
    for (const p of PACKAGES) {
      const pkg = JSON.parse(readFileSync(path.join(tmp, 'node_modules', '@ringgrain', p, 'package.json'), 'utf8')) as {
        exports: Record<string, { types: string; import: string }>;
        dependencies?: Record<string, string>;
      };
      expect(pkg.exports['.']).toEqual({ types: './dist/index.d.ts', import: './dist/index.js' });
      for (const [dep, v] of Object.entries(pkg.dependencies ?? {}))
        expect(v, `${p} → ${dep}`).not.toMatch(/^workspace:/);
    }
  });

  it("load every entry of core and the CPU consumer's with plain node", () => {
    const core = JSON.parse(
      readFileSync(path.join(tmp, 'node_modules', '@ringgrain', 'core', 'package.json'), 'utf8'),
    ) as { exports: Record<string, { types: string; import: string }> };
    const entries = ['.', './backend', './cluster', './errors', './internal', './store', './types'];
    expect(Object.keys(core.exports).sort()).toEqual(entries);
    const probe = [
      "import { GrainSystem, RinggrainError } from '@ringgrain/core';",
      "import { RinggrainError as Base, SystemOptionsError } from '@ringgrain/core/errors';",
      "import * as types from '@ringgrain/core/types';",
      'const same = Base === RinggrainError && SystemOptionsError.prototype instanceof Base;',
      "if (!same || Object.keys(types).length !== 0) throw new Error('entries: /errors or /types');",
      "import { RingProducer, layoutOf } from '@ringgrain/core/backend';",
      "import { stateTableSpec } from '@ringgrain/core/store';",
      "import { partitionOf } from '@ringgrain/core/cluster';",
      "import { Dispatcher } from '@ringgrain/cpu-backend/consumer';",
      'console.log([GrainSystem, RingProducer, layoutOf, stateTableSpec, partitionOf, Dispatcher].map((x) ' +
        '=> typeof x).join(" "));',
    ].join('\n');
    writeFileSync(path.join(tmp, 'entries-probe.mjs'), probe);
    const r = run(process.execPath, ['entries-probe.mjs'], tmp, 60_000);
    expect(r.stdout).toContain('function function function function function function');
  });

  it(
    "compile the README's program with tsc and the README's tsconfig.json, then run it with plain node on " +
      'the CPU backend',
    () => {
      writeFileSync(path.join(tmp, 'bank.ts'), readmeProgram());
      writeFileSync(path.join(tmp, 'tsconfig.json'), readmeTsconfig());
      // `npx tsc`: -p tsconfig.json
      run(process.execPath, [path.join(tmp, 'node_modules', 'typescript', 'bin', 'tsc')], tmp);
      const r = run(process.execPath, ['bank.js'], tmp, 60_000);
      expect(r.stdout).toContain('README PROGRAM DONE');
    },
  );

  it('install the stores the README names: LmdbStore and PostgresStore load from the installed packages', () => {
    writeFileSync(
      path.join(tmp, 'stores.mjs'),
      "import { LmdbStore } from '@ringgrain/lmdb-store';\nimport { PostgresStore } from " +
        "'@ringgrain/postgres-store';\nconsole.log(typeof LmdbStore, typeof PostgresStore);\n",
    );
    const r = run(process.execPath, ['stores.mjs'], tmp, 60_000);
    expect(r.stdout).toContain('function function');
  });

  it('ship the CUDA runtime files: the installed code generator reads them from its dist/', () => {
    const probe = [
      "import { RUNTIME_DIR, RUNTIME_FILES, runtimeFile } from '@ringgrain/codegen';",
      "for (const f of RUNTIME_FILES) if (!runtimeFile(f).includes('Ringgrain CUDA runtime')) throw new Error(f);",
      'console.log(RUNTIME_DIR, RUNTIME_FILES.length);',
    ].join('\n');
    writeFileSync(path.join(tmp, 'runtime-probe.mjs'), probe);
    const r = run(process.execPath, ['runtime-probe.mjs'], tmp, 60_000);
    expect(r.stdout).toContain(path.join('node_modules', '@ringgrain', 'codegen', 'dist', 'cuda', 'runtime'));
  });

  it('install the ringgrain command', () => {
    const r = run(path.join(tmp, 'node_modules', '.bin', 'ringgrain'), ['--help'], tmp, 60_000);
    expect(r.stdout + r.stderr).toMatch(/codegen/);
  });
});
