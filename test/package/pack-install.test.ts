/**
 * Ringgrain used from outside this repository, as a user adds it: build the packages to JavaScript with
 * type declarations, pack them (`pnpm pack`: publishConfig exports, workspace versions rewritten), install
 * the tarballs into a fresh project in the system's temp directory, then
 * - type-check the README's program (TypeScript) against the installed declarations,
 * - run it, compiled to JavaScript, with plain `node` (no tsx) on the CPU backend,
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
const PACKAGES = ['core', 'cpu-backend', 'cuda-backend', 'codegen', 'inline-backend'] as const;
const pnpm = ['--yes', 'pnpm@10.34.8'];
const tmp = mkdtempSync(path.join(os.tmpdir(), 'ringgrain-user-'));

function run(cmd: string, args: string[], cwd: string, timeout = 180_000): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout, env: { ...process.env, RINGGRAIN_LOG: 'warn', npm_config_yes: 'true' } });
  if (r.error || r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) failed: ${r.error?.message ?? `exit ${r.status}`}\n${r.stdout}\n${r.stderr}`);
  return r;
}

/** The README's first two ```ts blocks (the grain, the system) as one program, and a line that shows it ended. */
function readmeProgram(): string {
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  return `${blocks[0]}\n${blocks[1]}\nconsole.log('README PROGRAM DONE');\n`;
}

beforeAll(() => {
  run('npx', [...pnpm, '-r', 'build'], root);
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
}, 600_000);

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('the packed packages, installed outside the workspace', () => {
  it('declare their exports as built JavaScript with types', () => {
    for (const p of PACKAGES) {
      const pkg = JSON.parse(readFileSync(path.join(tmp, 'node_modules', '@ringgrain', p, 'package.json'), 'utf8')) as { exports: Record<string, { types: string; import: string }>; dependencies?: Record<string, string> };
      expect(pkg.exports['.']).toEqual({ types: './dist/index.d.ts', import: './dist/index.js' });
      for (const [dep, v] of Object.entries(pkg.dependencies ?? {})) expect(v, `${p} → ${dep}`).not.toMatch(/^workspace:/);
    }
  });

  it("type-check the README's program against the installed declarations", () => {
    writeFileSync(path.join(tmp, 'bank.ts'), readmeProgram());
    const tsconfig = { compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, types: ['node'], skipLibCheck: true }, files: ['bank.ts'] };
    writeFileSync(path.join(tmp, 'tsconfig.json'), JSON.stringify(tsconfig));
    run(process.execPath, [path.join(tmp, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], tmp);
  });

  it("run the README's program, compiled to JavaScript, with plain node on the CPU backend", async () => {
    const ts = (await import(path.join(tmp, 'node_modules', 'typescript', 'lib', 'typescript.js'))).default as typeof import('typescript');
    const js = ts.transpileModule(readmeProgram(), { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true } }).outputText;
    writeFileSync(path.join(tmp, 'bank.mjs'), js);
    const r = run(process.execPath, ['bank.mjs'], tmp, 60_000);
    expect(r.stdout).toContain('README PROGRAM DONE');
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
