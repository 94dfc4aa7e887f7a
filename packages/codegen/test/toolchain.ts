import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Build outputs are cached in a temp dir keyed by the hash of what was compiled (tool, flags, source): a
 * unit compiled once is not compiled again, by this run or a later one on the machine. RINGGRAIN_BUILD_CACHE
 * moves it. Builds of one key are locked against each other across processes (the prebuild that the
 * run's global setup starts, prebuild.ts, and the test files), and every output appears by rename, so a
 * reader never sees half a file.
 */
export const CACHE = process.env.RINGGRAIN_BUILD_CACHE ?? join(tmpdir(), 'ringgrain-codegen-test');
mkdirSync(CACHE, { recursive: true });

function has(tool: string): boolean {
  return spawnSync(tool, ['--version'], { stdio: 'ignore' }).status === 0;
}
export const HAVE_NVCC = has('nvcc');
export const HAVE_GXX = has('g++');

export function hash(...parts: string[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(p).update('\0');
  return h.digest('hex').slice(0, 20);
}

export interface BuildResult {
  readonly ok: boolean;
  readonly log: string;
  readonly out: string;
}

/** One cached build: a directory named by its key holding the inputs, the output and result.json. */
interface Job {
  readonly dir: string;
  readonly out: string;
  /** Writes the inputs into `dir`; returns the command that writes `tmpOut`. */
  readonly prepare: (tmpOut: string) => readonly [string, readonly string[]];
}

/** A finished build of this key (by any process), or undefined. */
function cached(job: Job): BuildResult | undefined {
  const res = join(job.dir, 'result.json');
  if (existsSync(res)) {
    try {
      const r = JSON.parse(readFileSync(res, 'utf8')) as { ok: boolean; log: string };
      if (!r.ok || existsSync(job.out)) return { ok: r.ok, log: r.log, out: job.out };
    } catch {
      // A result.json being replaced: read it again on the next look.
    }
  }
  return undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the key's lock (true), or finds it held by a live process (false); a dead holder's lock is taken over. */
function lock(job: Job): boolean {
  mkdirSync(job.dir, { recursive: true });
  const path = join(job.dir, 'lock');
  for (;;) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      let holder = 0;
      try {
        holder = Number(readFileSync(path, 'utf8'));
      } catch {
        continue; // released meanwhile
      }
      // An empty lock file is one being written: its holder is alive.
      if (!holder || alive(holder)) return false;
      rmSync(path, { force: true });
    }
  }
}

function finish(job: Job, tmpOut: string, code: number | null, log: string): BuildResult {
  const ok = code === 0;
  if (ok) renameSync(tmpOut, job.out);
  else rmSync(tmpOut, { force: true });
  // A build killed by a signal (code null) is not a result: the next one builds again.
  if (code !== null) {
    writeFileSync(join(job.dir, 'result.json.tmp'), JSON.stringify({ ok, log }));
    renameSync(join(job.dir, 'result.json.tmp'), join(job.dir, 'result.json'));
  }
  rmSync(join(job.dir, 'lock'), { force: true });
  return { ok, log, out: job.out };
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/**
 * A job's cached result, or 'build' when this process took its lock (the result was not cached meanwhile),
 * or undefined when another process holds the lock (wait, then ask again).
 */
function claim(job: Job): BuildResult | 'build' | undefined {
  const hit = cached(job);
  if (hit) return hit;
  if (!lock(job)) return undefined;
  const again = cached(job);
  if (!again) return 'build';
  rmSync(join(job.dir, 'lock'), { force: true });
  return again;
}

function buildSync(job: Job): BuildResult {
  for (;;) {
    const got = claim(job);
    if (got === 'build') {
      const tmpOut = `${job.out}.${process.pid}.tmp`;
      const [cmd, args] = job.prepare(tmpOut);
      const r = spawnSync(cmd, args, { encoding: 'utf8' });
      return finish(job, tmpOut, r.status, `${r.stdout ?? ''}${r.stderr ?? ''}`);
    }
    if (got) return got;
    Atomics.wait(sleeper, 0, 0, 100); // another process builds this key: wait for its result
  }
}

async function buildAsync(job: Job): Promise<BuildResult> {
  for (;;) {
    const got = claim(job);
    if (got === 'build') {
      const tmpOut = `${job.out}.${process.pid}.tmp`;
      const [cmd, args] = job.prepare(tmpOut);
      return new Promise((resolve) => {
        const p = spawn(cmd, args);
        let log = '';
        p.stdout.on('data', (d) => (log += d));
        p.stderr.on('data', (d) => (log += d));
        p.on('error', (e) => resolve(finish(job, tmpOut, 127, String(e))));
        p.on('close', (code) => resolve(finish(job, tmpOut, code, log)));
      });
    }
    if (got) return got;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * How deep nvcc goes. 'front' (the main suite): the C++ front end and NVVM without its optimiser, to PTX —
 * every error, warning (as an error) and static_assert a unit can raise, ~1 s of CPU a unit. 'cubin' adds
 * NVVM's optimiser and ptxas (register allocation, stack, ptxas's own warnings), ~25 s of CPU a unit on the
 * 2-core machine: the compile test builds two units so in every run, and `pnpm test:long`
 * (RINGGRAIN_LONG=1, which CI runs after the main suite) builds every unit so. RINGGRAIN_NVCC=cubin forces it.
 */
export type NvccDepth = 'front' | 'cubin';
export const NVCC_DEPTH: NvccDepth =
  process.env.RINGGRAIN_LONG === '1' || process.env.RINGGRAIN_NVCC === 'cubin' ? 'cubin' : 'front';

function nvccJob(source: string, arch: string, depth: NvccDepth): Job {
  // The cubin key is the one used before depths existed, so caches built then stay valid.
  const dir = join(CACHE, depth === 'cubin' ? hash('nvcc', arch, source) : hash('nvcc', depth, arch, source));
  return {
    dir,
    out: join(dir, depth === 'cubin' ? 'unit.cubin' : 'unit.ptx'),
    prepare: (tmpOut) => {
      const src = join(dir, 'unit.cu');
      writeFileSync(src, source);
      const mode = depth === 'cubin' ? ['-cubin'] : ['-ptx', '-Xcicc', '-O0'];
      return ['nvcc', [...mode, `-arch=${arch}`, '-Werror', 'all-warnings', '-x', 'cu', src, '-o', tmpOut]];
    },
  };
}

/** nvcc device compile of a unit for one arch (to NVCC_DEPTH unless `depth` is given); warnings are errors. */
export function nvccCompile(source: string, arch: string, depth: NvccDepth = NVCC_DEPTH): BuildResult {
  return buildSync(nvccJob(source, arch, depth));
}

/** nvccCompile without blocking: the compile test builds every unit × arch two at a time. */
export function nvccCompileAsync(source: string, arch: string, depth: NvccDepth = NVCC_DEPTH): Promise<BuildResult> {
  return buildAsync(nvccJob(source, arch, depth));
}

/**
 * nvcc -c (host and device code, no link) of a hand-written C++ driver that includes a generated unit as
 * `unitName` (found through -I on the build's directory), cached by the driver's text, the unit and the flags.
 */
export function nvccDriverBuild(
  driverPath: string,
  unitName: string,
  unit: string,
  defines: readonly string[],
  depth: NvccDepth = NVCC_DEPTH,
): BuildResult {
  const driver = readFileSync(driverPath, 'utf8');
  // At 'front' the device code is not optimised (NVVM and ptxas at -O0): the host code's calls into the unit
  // are what these builds check.
  const opt = depth === 'cubin' ? [] : ['-Xcicc', '-O0', '-Xptxas', '-O0'];
  const dir = join(
    CACHE,
    hash('nvcc-driver', depth, driverPath.replace(/^.*\//, ''), driver, unitName, unit, ...defines),
  );
  return buildSync({
    dir,
    out: join(dir, 'driver.o'),
    prepare: (tmpOut) => {
      writeFileSync(join(dir, unitName), unit);
      return ['nvcc', ['-arch=sm_90', '-std=c++17', '-c', ...opt, `-I${dir}`, ...defines, driverPath, '-o', tmpOut]];
    },
  });
}

const GXX_FLAGS = ['-std=c++17', '-O1', '-ffp-contract=off', '-Wall', '-Wno-unused-function', '-Werror'];

/**
 * The C++ standard headers the host harnesses include (harness.ts and the units' math.h), precompiled once per
 * set of flags and cached as a build: parsing them is ~0.8 s of a ~1.9 s harness build (user CPU, measured
 * on the 2-core machine, g++ 12, 2026-11-28), and a cold build cache holds ~75 harness builds. `-include`
 * reads them before the harness's first line, so the harness's own macros (RG_HOST_COOP's `__noinline__`)
 * never reach them; a .gch that g++ finds unusable is skipped without a word and the header parsed instead.
 */
const STD_HEADERS = [
  ...['cmath', 'condition_variable', 'cstdio', 'cstdlib', 'cstring', 'iostream', 'math.h'],
  ...['memory', 'mutex', 'sstream', 'string', 'thread', 'vector'],
];

function gxxStdHeaders(flags: readonly string[]): string[] {
  const text = STD_HEADERS.map((h) => `#include <${h}>\n`).join('');
  const dir = join(CACHE, hash('g++-std-pch', text, ...GXX_FLAGS, ...flags));
  const header = join(dir, 'rg-std.h');
  const r = buildSync({
    dir,
    out: `${header}.gch`,
    prepare: (tmpOut) => {
      writeFileSync(header, text);
      return ['g++', [...GXX_FLAGS, ...flags, '-x', 'c++-header', header, '-o', tmpOut]];
    },
  });
  return r.ok ? ['-include', header] : [];
}

/**
 * g++ build of the host harness around a unit (handlers + codecs, RG_HOST_HARNESS). `stdPch`: the standard
 * headers come precompiled (gxxStdHeaders), for harnesses that include no others before them.
 */
export function gxxBuild(
  unit: string,
  harness: string,
  flags: readonly string[] = [],
  opts: { stdPch?: boolean } = {},
): BuildResult {
  const pch = opts.stdPch === true;
  const dir = join(CACHE, pch ? hash('g++', unit, harness, ...flags, 'std-pch') : hash('g++', unit, harness, ...flags));
  return buildSync({
    dir,
    out: join(dir, 'harness'),
    prepare: (tmpOut) => {
      writeFileSync(join(dir, 'unit.cu'), unit);
      writeFileSync(join(dir, 'harness.cpp'), harness);
      const std = pch ? gxxStdHeaders(flags) : [];
      // -ffp-contract=off: no fused multiply-add, as in JS (the device side uses __dadd_rn & co.).
      return ['g++', [...GXX_FLAGS, ...flags, ...std, join(dir, 'harness.cpp'), '-o', tmpOut, '-lm']];
    },
  });
}

export async function pool<T, R>(items: readonly T[], width: number, f: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await f(items[i] as T);
      }
    }),
  );
  return out;
}
