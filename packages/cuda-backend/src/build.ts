/**
 * `ringgrain build`: compiles a program's grain classes ahead into the kernel cache, for the GPU architectures
 * it will run on, so that its first launch loads cubins instead of waiting for NVRTC (seconds a class). The
 * units and NVRTC options are those the backend uses (nvrtc-unit.ts), so the cache keys are the same; a cubin's
 * key has no driver version, so this runs wherever NVRTC does (no GPU needed). Classes compile side by side on the
 * NVRTC pool's worker threads, one per core unless --threads says otherwise (nvrtc-pool.ts, the backend's pool).
 */
import { pathToFileURL } from 'node:url';
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadGrainClasses, type GrainDef } from '@ringgrain/core/backend';
import { generateKernel } from '@ringgrain/codegen';
import { closeSharedNvrtcPools, compileCachedAsync, defaultCacheDir } from './driver/index.ts';
import type { CompileCachedResult } from './driver/index.ts';
import { unitCompileOptions } from './nvrtc-unit.ts';

export interface BuildKernelsOptions {
  /**
   * The grain classes as the program registers them on its CUDA backend, in registration order (a class's id
   * in that order is part of every unit that sends to it); undefined for a class placed elsewhere.
   */
  readonly grains: ReadonlyArray<GrainDef | undefined>;
  /** "sm_90" and the like: one cubin per class and architecture. */
  readonly archs: readonly string[];
  /** Default: the backend's ($RINGGRAIN_CACHE_DIR or ~/.cache/ringgrain/cubin). */
  readonly cacheDir?: string;
  /** NVRTC compiles at once (default $RINGGRAIN_COMPILE_THREADS, else one per core; 0: libuv's threads, no pool). */
  readonly threads?: number;
}

export interface BuiltKernel {
  readonly grain: string;
  readonly arch: string;
  /** Already in the cache (nothing compiled). */
  readonly cached: boolean;
  readonly compileMs: number;
  readonly path: string;
}

/** Compiles every class for every architecture at once; resolves when all are in the cache. */
export async function buildKernels(opts: BuildKernelsOptions): Promise<BuiltKernel[]> {
  const jobs: Promise<BuiltKernel>[] = [];
  for (const def of opts.grains) {
    if (!def) continue;
    const { source } = generateKernel(def, { grains: opts.grains });
    for (const arch of opts.archs) {
      const threads = opts.threads === undefined ? {} : { threads: opts.threads };
      const built = (r: CompileCachedResult): BuiltKernel => {
        return { grain: def.name, arch, cached: r.cached, compileMs: r.compileMs, path: r.path };
      };
      const unit = { ...unitCompileOptions(def, arch, opts.cacheDir), ...threads };
      jobs.push(compileCachedAsync(source, unit).then(built));
    }
  }
  return Promise.all(jobs);
}

export const BUILD_USAGE = `usage: ringgrain build <module.ts> [--grains A,B,...] [--arch sm_90[,sm_80...]] [--cache dir]
                      [--threads n]
  Compiles the grain classes of <module.ts> for the CUDA backend ahead of the first run, into the kernel cache
  the backend reads (no GPU needed: NVRTC only).
  --grains A,B   the classes in the order the program registers them (default: the order the module exports them);
                 write - for a class registered on another backend
  --arch list    GPU architectures (default: sm_90)
  --cache dir    the cache directory (default: $RINGGRAIN_CACHE_DIR or ~/.cache/ringgrain/cubin)
  --threads n    NVRTC compiles at once, each on a worker thread
                 (default: $RINGGRAIN_COMPILE_THREADS, else one per core)`;

interface Io {
  out(text: string): void;
  err(text: string): void;
}

/** The `ringgrain build` command (the codegen package's `ringgrain` bin hands it its arguments). */
export async function buildMain(argv: readonly string[], io: Io): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.out(`${BUILD_USAGE}\n`);
    return 0;
  }
  let module: string | undefined;
  let names: string[] | undefined;
  let archs = ['sm_90'];
  let cacheDir: string | undefined;
  let threads: number | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--grains' || a === '--arch' || a === '--cache' || a === '--threads') {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) return usage(io, `${a} needs a value`);
      if (a === '--grains') names = v.split(',').map((s) => s.trim());
      else if (a === '--arch') archs = v.split(',').map((s) => s.trim());
      else if (a === '--threads') {
        threads = Number(v);
        if (!/^\d+$/.test(v)) return usage(io, `--threads ${v} is not a whole number ≥ 0`);
      } else cacheDir = v;
    } else if (a.startsWith('-')) return usage(io, `unknown option ${a}`);
    else if (module === undefined) module = a;
    else return usage(io, `unexpected argument ${a}`);
  }
  if (module === undefined) return usage(io, 'missing <module>');
  const bad = archs.find((a) => !/^sm_\d{2,3}[af]?$/.test(a));
  if (bad !== undefined) return usage(io, `--arch ${bad} is not a GPU architecture like sm_90`);
  const path = isAbsolute(module) ? module : resolve(process.cwd(), module);
  if (!existsSync(path)) {
    io.err(
      `cannot import ${module}: no such file (${path})\n  hint: name the .ts module that exports the grain ` +
        `classes, e.g. examples/sir/grains.ts\n`,
    );
    return 1;
  }
  let all: GrainDef[];
  try {
    all = (await loadGrainClasses(pathToFileURL(path).href))
      .map((c) => c.grain as GrainDef)
      .filter((d) => Array.isArray(d.methods));
  } catch (e) {
    io.err(`cannot import ${module}: ${(e as Error).message}\n`);
    return 1;
  }
  let grains: (GrainDef | undefined)[] = all;
  if (names) {
    const missing = names.filter((n) => n !== '-' && !all.some((g) => g.name === n));
    if (missing.length)
      return usage(
        io,
        `${module} has no grain class ${missing.join(', ')} (it has ${all.map((g) => g.name).join(', ')})`,
      );
    grains = names.map((n) => (n === '-' ? undefined : all.find((g) => g.name === n)));
  }
  if (!grains.some((g) => g)) {
    io.err(`${module} exports no grain classes\n`);
    return 1;
  }
  const t0 = performance.now();
  try {
    const more = { ...(cacheDir ? { cacheDir } : {}), ...(threads === undefined ? {} : { threads }) };
    const built = await buildKernels({ grains, archs, ...more });
    for (const b of built)
      io.out(
        `${b.grain} ${b.arch}: ` +
          `${b.cached ? 'already in the cache' : `compiled in ${Math.round(b.compileMs)} ms`} (${b.path})\n`,
      );
    io.out(`${built.length} kernels in ${cacheDir ?? defaultCacheDir()} (${Math.round(performance.now() - t0)} ms)\n`);
    return 0;
  } catch (e) {
    io.err(`ringgrain build: ${(e as Error).message}\n`);
    return 1;
  } finally {
    // The compile workers would end when idle anyway; a command ends them now.
    await closeSharedNvrtcPools();
  }
}

function usage(io: Io, why: string): number {
  io.err(`${why}\n${BUILD_USAGE}\n`);
  return 2;
}
