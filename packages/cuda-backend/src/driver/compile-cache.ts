/**
 * compileCached: NVRTC with an on-disk cache, so that a kernel is compiled once per
 * (source, arch, options, NVRTC version; and the driver version for PTX, which the driver JITs) — NVRTC takes
 * ~50 ms for a small kernel (seconds for a grain class's unit) and a driver JIT of PTX ~190 ms, both too slow to
 * repeat at every launch. A cubin's key has no driver version, so `ringgrain build` can fill the cache on a
 * machine without a GPU (NVRTC alone) for the machines that have one.
 * compileCachedAsync compiles on the NVRTC pool's worker threads (nvrtc-pool.ts), only on a cache miss: a system's
 * classes compile side by side, and a cached unit never reaches a worker.
 *
 * Cache: $RINGGRAIN_CACHE_DIR or ~/.cache/ringgrain/cubin, one file per key (sha256), written to a
 * temporary name and renamed, so concurrent processes never read half a file.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadCudaDriver } from './driver.ts';
import type { DiscoveryEnv } from './library.ts';
import { loadNvrtc, type Nvrtc, type NvrtcOutput } from './nvrtc.ts';
import { defaultCompileThreads, sharedNvrtcPool } from './nvrtc-pool.ts';

export interface CompileCachedOptions {
  /** "sm_90" (cubin) or "compute_90" (PTX). Usually ctx.device.arch. */
  readonly arch: string;
  /** Program name for compiler messages. */
  readonly name?: string;
  /** NVRTC options besides -arch. */
  readonly extraOpts?: readonly string[];
  /** Override the cache directory (default: $RINGGRAIN_CACHE_DIR or ~/.cache/ringgrain/cubin). */
  readonly cacheDir?: string;
  readonly env?: DiscoveryEnv;
  /**
   * compileCachedAsync: NVRTC compiles at once on the process's pool of this many worker threads (default
   * $RINGGRAIN_COMPILE_THREADS, else one per core); 0: koffi's async call on libuv's threads, without the pool.
   */
  readonly threads?: number;
}

export interface CompileCachedResult {
  /** The image for loadModule: a cubin, or NUL-terminated PTX when `kind` is "ptx". */
  readonly cubin: Uint8Array;
  readonly kind: 'cubin' | 'ptx';
  /** True when the image came from the cache and nothing was compiled. */
  readonly cached: boolean;
  /** Time NVRTC spent compiling (0 when cached). */
  readonly compileMs: number;
  /** Time the whole call took, lookup included. */
  readonly elapsedMs: number;
  readonly key: string;
  /** The cache file. */
  readonly path: string;
  /** NVRTC's log of this compile ("" when cached). */
  readonly log: string;
}

export function defaultCacheDir(env: DiscoveryEnv = process.env): string {
  return env['RINGGRAIN_CACHE_DIR'] || path.join(os.homedir(), '.cache', 'ringgrain', 'cubin');
}

/** Driver version for the key; 0 where there is no driver (compiling without a GPU is allowed). */
function driverVersionOr0(env: DiscoveryEnv | undefined): number {
  try {
    return loadCudaDriver(env ? { env } : {}).version;
  } catch {
    return 0;
  }
}

function looksValid(image: Uint8Array, kind: 'cubin' | 'ptx'): boolean {
  if (image.byteLength < 16) return false;
  if (kind === 'cubin') return image[0] === 0x7f && image[1] === 0x45 && image[2] === 0x4c && image[3] === 0x46; // ELF
  return image[image.byteLength - 1] === 0; // PTX for cuModuleLoadData must be NUL-terminated
}

interface Pending {
  readonly t0: number;
  readonly nvrtc: Nvrtc;
  readonly kind: 'cubin' | 'ptx';
  readonly key: string;
  readonly file: string;
  readonly dir: string;
  readonly extraOpts: readonly string[];
  readonly hit: CompileCachedResult | undefined;
}

/** The cache key and file, and the image if the cache has it. */
function lookup(source: string, opts: CompileCachedOptions): Pending {
  const t0 = performance.now();
  const nvrtc = loadNvrtc(opts.env ? { env: opts.env } : {});
  const extraOpts = opts.extraOpts ?? [];
  const kind: 'cubin' | 'ptx' = opts.arch.startsWith('sm_') ? 'cubin' : 'ptx';
  const key = cacheKey(
    source,
    opts.arch,
    nvrtc.versionString,
    kind === 'ptx' ? driverVersionOr0(opts.env) : undefined,
    extraOpts,
    opts.name ?? '',
  );
  const dir = opts.cacheDir ?? defaultCacheDir(opts.env ?? process.env);
  const file = path.join(dir, `${key}.${kind}`);
  let image: Uint8Array | undefined;
  try {
    image = new Uint8Array(readFileSync(file));
  } catch {
    image = undefined;
  }
  const hit =
    image && looksValid(image, kind)
      ? { cubin: image, kind, cached: true, compileMs: 0, elapsedMs: performance.now() - t0, key, path: file, log: '' }
      : undefined;
  return { t0, nvrtc, kind, key, file, dir, extraOpts, hit };
}

/** The cache key: sha256 over what the image depends on. */
export function cacheKey(
  source: string,
  arch: string,
  nvrtcVersion: string,
  driver: number | undefined,
  options: readonly string[],
  name: string,
): string {
  return createHash('sha256')
    .update(
      JSON.stringify({ source, arch, nvrtc: nvrtcVersion, ...(driver === undefined ? {} : { driver }), options, name }),
    )
    .digest('hex');
}

function store(p: Pending, out: NvrtcOutput, compileMs: number): CompileCachedResult {
  mkdirSync(p.dir, { recursive: true });
  const tmp = `${p.file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(tmp, out.image);
  renameSync(tmp, p.file);
  return {
    cubin: out.image,
    kind: p.kind,
    cached: false,
    compileMs,
    elapsedMs: performance.now() - p.t0,
    key: p.key,
    path: p.file,
    log: out.log,
  };
}

export function compileCached(source: string, opts: CompileCachedOptions): CompileCachedResult {
  const p = lookup(source, opts);
  if (p.hit) return p.hit;
  const c0 = performance.now();
  const out = p.nvrtc.compile(source, {
    arch: opts.arch,
    extraOpts: p.extraOpts,
    ...(opts.name === undefined ? {} : { name: opts.name }),
  });
  return store(p, out, performance.now() - c0);
}

/**
 * compileCached with NVRTC on a worker thread of the NVRTC pool (`threads`): call it for every class at once and
 * await them together. The disk cache is read first, on this thread; only a miss is compiled.
 */
export async function compileCachedAsync(source: string, opts: CompileCachedOptions): Promise<CompileCachedResult> {
  const p = lookup(source, opts);
  if (p.hit) return p.hit;
  const named = opts.name === undefined ? {} : { name: opts.name };
  const nvrtcOpts = { arch: opts.arch, extraOpts: p.extraOpts, ...named };
  const threads = opts.threads ?? defaultCompileThreads(opts.env ?? process.env);
  if (threads === 0) {
    const c0 = performance.now();
    const out = await p.nvrtc.compileAsync(source, nvrtcOpts);
    return store(p, out, performance.now() - c0);
  }
  const out = await sharedNvrtcPool(threads, p.nvrtc.libPath).compile(source, nvrtcOpts);
  return store(p, out, out.compileMs);
}
