import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { GrainDef } from '@ringgrain/core/backend';
// Loaded when a module is to be translated (main): --help and a wrong word answer without the code
// generator and the TypeScript compiler it loads (2.9 s of CPU a run before, 0.5 s now).
import type { generateKernel } from './cuda/kernel.ts';

export const USAGE = `usage: ringgrain codegen <module.ts> [--grain Name] [--out dir] [--explain]
  Translates the grain classes exported by <module.ts> to CUDA C (one .cu per grain class).
  --grain Name   only this grain class (default: every grain class the module exports)
  --out dir      write <dir>/<Grain>.cu and <dir>/<Grain>.abi.json (default: print the .cu to stdout)
  --explain      print, instead of the code, which handler loops run element-parallel on the warp and why the others do not
usage: ringgrain build <module.ts> [--grains A,B] [--arch sm_90] [--cache dir]
  Compiles the grain classes for the CUDA backend ahead of the first run (@ringgrain/cuda-backend; ringgrain build --help)`;

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

interface Args {
  module: string;
  grain: string | undefined;
  outDir: string | undefined;
  explain: boolean;
}

function parseArgs(argv: readonly string[]): Args | string {
  const rest = argv[0] === 'codegen' ? argv.slice(1) : [...argv];
  let module: string | undefined;
  let grain: string | undefined;
  let outDir: string | undefined;
  let explain = false;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i] as string;
    if (a === '--grain' || a === '--out') {
      const v = rest[++i];
      if (v === undefined || v.startsWith('--')) return `${a} needs a value`;
      if (a === '--grain') grain = v;
      else outDir = v;
    } else if (a === '--explain') explain = true;
    else if (a.startsWith('-')) return `unknown option ${a}`;
    else if (module === undefined) module = a;
    else return `unexpected argument ${a}`;
  }
  if (module === undefined) return 'missing <module>';
  return { module, grain, outDir, explain };
}

/** Serialisable part of the ABI (sizes and launch are functions of the options: see src/cuda/abi.ts). */
function abiJson(abi: ReturnType<typeof generateKernel>['abi']): string {
  const { version, grain, grainId, entry, params, stateSize, stateAlign, errors } = abi;
  return `${JSON.stringify({ version, grain, grainId, entry, params, stateSize, stateAlign, errors }, null, 2)}\n`;
}

/** `--explain`: one line per top-level handler loop, parallel or not, with the reason. */
export function explainLoops(grain: string, loops: ReturnType<typeof generateKernel>['loops']): string {
  if (loops.length === 0) return `${grain}: no loops in its handlers\n`;
  return loops
    .map((l) => `${grain}.${l.method} line ${l.line}: ${l.parallel ? 'element-parallel' : 'sequential'}: ${l.why}\n`)
    .join('');
}

/**
 * `mkdir -p`, one level at a time: `mkdirSync(dir, { recursive: true })` never returns for a path under /proc (Node
 * 20).
 */
function makeDir(dir: string): void {
  const abs = resolve(dir);
  if (existsSync(abs)) return;
  if (dirname(abs) !== abs) makeDir(dirname(abs));
  try {
    mkdirSync(abs);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
}

/**
 * @ringgrain/cuda-backend, which `ringgrain build` needs (this package does not depend on it): as this package
 * resolves it, else the workspace's sibling (a clone of the repository), else the project's own node_modules.
 */
async function cudaBackend(): Promise<{ buildMain(argv: readonly string[], io: Io): Promise<number> } | undefined> {
  const name = '@ringgrain/cuda-backend';
  try {
    return await import(name);
  } catch {
    /* not resolvable from here */
  }
  const sibling = new URL('../../cuda-backend/src/index.ts', import.meta.url);
  if (existsSync(sibling)) return import(sibling.href);
  for (let dir = process.cwd(); ; dir = dirname(dir)) {
    const pkg = join(dir, 'node_modules', name, 'package.json');
    if (existsSync(pkg)) {
      const exp = (JSON.parse(readFileSync(pkg, 'utf8')) as { exports?: Record<string, string | { import?: string }> })
        .exports?.['.'];
      const entry = typeof exp === 'string' ? exp : exp?.import;
      if (entry) return import(pathToFileURL(join(dirname(pkg), entry)).href);
    }
    if (dirname(dir) === dir) return undefined;
  }
}

export async function main(argv: readonly string[], io: Io): Promise<number> {
  if (argv[0] === 'build') {
    const backend = await cudaBackend();
    if (!backend) {
      io.err(
        'ringgrain build compiles kernels for @ringgrain/cuda-backend, which is not installed here\n  hint: npm ' +
          'install @ringgrain/cuda-backend (it compiles with NVRTC; no GPU is needed)\n',
      );
      return 1;
    }
    return backend.buildMain(argv.slice(1), io);
  }
  if (argv.includes('--help') || argv.includes('-h')) {
    io.out(`${USAGE}\n`);
    return 0;
  }
  const args = parseArgs(argv);
  if (typeof args === 'string') {
    io.err(`${args}\n${USAGE}\n`);
    return 2;
  }
  const path = isAbsolute(args.module) ? args.module : resolve(process.cwd(), args.module);
  if (!existsSync(path)) {
    io.err(
      `cannot import ${args.module}: no such file (${path})\n  hint: name the .ts module that exports the grain ` +
        `classes, e.g. pnpm codegen examples/bank/grains.ts\n`,
    );
    return 1;
  }
  const { loadGrainClasses } = await import('@ringgrain/core/backend');
  let grains: GrainDef[];
  try {
    // The module may also be a program (grain and system in one file): its system does not start here.
    grains = (await loadGrainClasses(pathToFileURL(path).href))
      .map((c) => c.grain as GrainDef)
      .filter((d) => Array.isArray(d.methods));
  } catch (e) {
    io.err(`cannot import ${args.module}: ${(e as Error).message}\n`);
    return 1;
  }
  if (grains.length === 0) {
    io.err(`${args.module} exports no grain classes\n`);
    return 1;
  }
  const chosen = args.grain === undefined ? grains : grains.filter((g) => g.name === args.grain);
  if (chosen.length === 0) {
    io.err(
      `${args.module} has no grain class "${args.grain}" (it has ${grains.map((g) => g.name).join(', ')})\n${USAGE}\n`,
    );
    return 2;
  }
  const [{ generateKernel }, { CodegenError }] = await Promise.all([
    import('./cuda/kernel.ts'),
    import('./front/errors.ts'),
  ]);
  try {
    for (const def of chosen) {
      const k = generateKernel(def, { grains });
      if (args.explain) io.out(explainLoops(def.name, k.loops));
      else if (args.outDir === undefined) io.out(k.source);
      else {
        const cu = join(args.outDir, `${def.name}.cu`);
        try {
          makeDir(args.outDir);
          writeFileSync(cu, k.source);
          writeFileSync(join(args.outDir, `${def.name}.abi.json`), abiJson(k.abi));
        } catch (e) {
          io.err(
            `cannot write to --out ${args.outDir}: ${(e as Error).message}\n  hint: --out names a directory to ` +
              `create (or reuse) that you can write to\n`,
          );
          return 1;
        }
        io.out(`wrote ${cu}\n`);
      }
    }
  } catch (e) {
    if (e instanceof CodegenError) {
      io.err(`${e.message}\n`);
      return 1;
    }
    throw e;
  }
  return 0;
}

const invoked = process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (invoked) {
  // `ringgrain codegen … | head`: the reader went away; stop quietly instead of printing an EPIPE stack.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
  main(process.argv.slice(2), { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) }).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
      process.exitCode = 1;
    },
  );
}
