/**
 * Finding and opening libcuda.so.1 and libnvrtc.
 *
 * The toolkit ships a stub libcuda.so (…/lib/stubs/) for linking on machines without a driver: loading
 * it makes every call fail with CUDA_ERROR_STUB_LIBRARY, so no path containing "/stubs/" is ever tried,
 * and a library that the loader resolved is checked against /proc/self/maps for the same reason.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import koffi from 'koffi';
import type { LibraryHandle } from 'koffi';
import { CudaUnavailableError } from './errors.ts';

/** The environment variables that discovery reads (process.env by default; tests pass their own). */
export type DiscoveryEnv = Readonly<Record<string, string | undefined>>;

export interface OpenedLibrary {
  readonly handle: LibraryHandle;
  /** The file that was loaded (resolved through /proc/self/maps when the loader found it by name). */
  readonly path: string;
}

/** Where the driver library lives on common Linux installs (distro packages, containers, WSL). */
const LIBCUDA_DIRS = [
  '/usr/lib/x86_64-linux-gnu',
  '/usr/lib/aarch64-linux-gnu',
  '/usr/lib64',
  '/usr/lib',
  '/usr/local/nvidia/lib64',
  '/usr/local/nvidia/lib',
  '/usr/lib/wsl/lib',
];

const NVRTC_NAMES = ['libnvrtc.so.13', 'libnvrtc.so.12', 'libnvrtc.so'];

export function isStubPath(p: string): boolean {
  return p.replaceAll('\\', '/').includes('/stubs/');
}

/**
 * The libcuda candidates in the order they are tried. A bare name is resolved by the dynamic loader
 * (LD_LIBRARY_PATH, ld.so.cache); an absolute path is tried only if the file exists.
 */
export function libcudaCandidates(env: DiscoveryEnv = process.env): string[] {
  const override = env['RINGGRAIN_LIBCUDA'];
  if (override) return [override];
  return ['libcuda.so.1', ...LIBCUDA_DIRS.map((d) => path.join(d, 'libcuda.so.1'))];
}

/** The NVRTC candidates: the toolkit under CUDA_HOME / CUDA_PATH / /usr/local/cuda*, then the loader. */
export function nvrtcCandidates(env: DiscoveryEnv = process.env): string[] {
  const override = env['RINGGRAIN_NVRTC'];
  if (override) return [override];
  const roots: string[] = [];
  for (const v of [env['CUDA_HOME'], env['CUDA_PATH']]) if (v) roots.push(v);
  roots.push('/usr/local/cuda');
  roots.push(...versionedCudaRoots());
  const dirs: string[] = [];
  for (const r of roots) dirs.push(path.join(r, 'lib64'), path.join(r, 'lib'));
  dirs.push('/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu');
  const out: string[] = [];
  for (const d of dirs) for (const n of NVRTC_NAMES) out.push(path.join(d, n));
  out.push(...NVRTC_NAMES);
  return [...new Set(out)];
}

/** /usr/local/cuda-13.0, /usr/local/cuda-12.8, … newest first. */
function versionedCudaRoots(): string[] {
  try {
    return readdirSync('/usr/local')
      .filter((n) => /^cuda-\d+(\.\d+)*$/.test(n))
      .sort((a, b) => b.localeCompare(a, 'en', { numeric: true }))
      .map((n) => path.join('/usr/local', n));
  } catch {
    return [];
  }
}

/** The file a library name resolved to, read from this process's memory map (Linux). */
function mappedPathOf(basenamePrefix: string): string | undefined {
  let maps: string;
  try {
    maps = readFileSync('/proc/self/maps', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of maps.split('\n')) {
    const i = line.indexOf('/');
    if (i < 0) continue;
    const file = line.slice(i).trim();
    if (path.basename(file).startsWith(basenamePrefix)) return file;
  }
  return undefined;
}

/**
 * Open the first candidate that loads and exports `probeSymbol`. Throws CudaUnavailableError listing
 * every attempt when none does.
 */
export function openFirst(
  what: string,
  candidates: readonly string[],
  probeSymbol: string,
  basenamePrefix: string,
): OpenedLibrary {
  if (process.platform !== 'linux') {
    throw new CudaUnavailableError(`${what}: platform ${process.platform} is not supported (Linux only)`);
  }
  const attempts: string[] = [];
  for (const candidate of candidates) {
    if (isStubPath(candidate)) {
      attempts.push(`${candidate}: refused (a toolkit stub, not a driver)`);
      continue;
    }
    const isPath = candidate.includes('/');
    if (isPath && !existsSync(candidate)) {
      attempts.push(`${candidate}: no such file`);
      continue;
    }
    let handle: LibraryHandle;
    try {
      handle = koffi.load(candidate);
    } catch (e) {
      attempts.push(`${candidate}: ${firstLine(e)}`);
      continue;
    }
    const resolved = isPath ? candidate : (mappedPathOf(basenamePrefix) ?? candidate);
    if (isStubPath(resolved)) {
      handle.unload();
      attempts.push(`${candidate}: resolved to stub ${resolved}, refused`);
      continue;
    }
    try {
      handle.symbol(probeSymbol);
    } catch (e) {
      handle.unload();
      attempts.push(`${resolved}: no ${probeSymbol} (${firstLine(e)})`);
      continue;
    }
    return { handle, path: resolved };
  }
  throw new CudaUnavailableError(`${what} not found; tried ${attempts.join('; ')}`);
}

function firstLine(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  return m.split('\n')[0] ?? m;
}

export function openLibcuda(env: DiscoveryEnv = process.env): OpenedLibrary {
  return openFirst('the CUDA driver library (libcuda.so.1)', libcudaCandidates(env), 'cuInit', 'libcuda.so');
}

export function openNvrtc(env: DiscoveryEnv = process.env): OpenedLibrary {
  const lib = openFirst('NVRTC (libnvrtc.so)', nvrtcCandidates(env), 'nvrtcCompileProgram', 'libnvrtc.so');
  preloadBuiltins(lib.path);
  return lib;
}

/** Builtins libraries loaded beside an NVRTC found by path (kept, so they stay loaded). */
const builtins = new Map<string, LibraryHandle>();

/**
 * NVRTC opens libnvrtc-builtins.so.<major>.<minor> by name when it compiles, so an NVRTC outside the loader's
 * path (RINGGRAIN_NVRTC=…/nvidia/cu13/lib/libnvrtc.so.13 of a pip wheel) failed every compile with "failed to open
 * libnvrtc-builtins" unless LD_LIBRARY_PATH named its directory too. Loading the builtins found beside it first
 * lets the loader match that name to the library already loaded (by its soname).
 */
function preloadBuiltins(nvrtcPath: string): void {
  if (!nvrtcPath.includes('/')) return;
  const dir = path.dirname(nvrtcPath);
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => /^libnvrtc-builtins\.so\.\d+\.\d+$/.test(n));
  } catch {
    return;
  }
  for (const n of names) {
    const file = path.join(dir, n);
    if (builtins.has(file)) continue;
    try {
      builtins.set(file, koffi.load(file));
    } catch {
      // Not loadable here: NVRTC's own lookup (LD_LIBRARY_PATH) still applies, and its compile error names the file.
    }
  }
}
