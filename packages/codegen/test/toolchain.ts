import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Build outputs are cached in a temp dir keyed by the hash of what was compiled. */
export const CACHE = join(tmpdir(), 'ringgrain-codegen-test');
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

/** nvcc device compile (cubin) of a unit for one arch; warnings are errors. */
export function nvccCompile(source: string, arch: string): BuildResult {
  const key = hash('nvcc', arch, source);
  const dir = join(CACHE, key);
  const out = join(dir, 'unit.cubin');
  if (existsSync(out)) return { ok: true, log: '', out };
  mkdirSync(dir, { recursive: true });
  const src = join(dir, 'unit.cu');
  writeFileSync(src, source);
  const r = spawnSync('nvcc', ['-cubin', `-arch=${arch}`, '-Werror', 'all-warnings', '-x', 'cu', src, '-o', out], { encoding: 'utf8' });
  return { ok: r.status === 0, log: `${r.stdout}${r.stderr}`, out };
}

/** g++ build of the host harness around a unit (handlers + codecs, RG_HOST_HARNESS). */
export function gxxBuild(unit: string, harness: string, flags: readonly string[] = []): BuildResult {
  const key = hash('g++', unit, harness, ...flags);
  const dir = join(CACHE, key);
  const out = join(dir, 'harness');
  if (existsSync(out)) return { ok: true, log: '', out };
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'unit.cu'), unit);
  writeFileSync(join(dir, 'harness.cpp'), harness);
  // -ffp-contract=off: no fused multiply-add, as in JS (the device side uses __dadd_rn & co.).
  const r = spawnSync('g++', ['-std=c++17', '-O1', '-ffp-contract=off', '-Wall', '-Wno-unused-function', '-Werror', ...flags, join(dir, 'harness.cpp'), '-o', out, '-lm'], { encoding: 'utf8' });
  return { ok: r.status === 0, log: `${r.stdout}${r.stderr}`, out };
}

/** nvccCompile without blocking: the compile test builds every unit × arch two at a time. */
export function nvccCompileAsync(source: string, arch: string): Promise<BuildResult> {
  const key = hash('nvcc', arch, source);
  const dir = join(CACHE, key);
  const out = join(dir, 'unit.cubin');
  if (existsSync(out)) return Promise.resolve({ ok: true, log: '', out });
  mkdirSync(dir, { recursive: true });
  const src = join(dir, 'unit.cu');
  writeFileSync(src, source);
  return new Promise((resolve) => {
    const p = spawn('nvcc', ['-cubin', `-arch=${arch}`, '-Werror', 'all-warnings', '-x', 'cu', src, '-o', out]);
    let log = '';
    p.stdout.on('data', (d) => (log += d));
    p.stderr.on('data', (d) => (log += d));
    p.on('close', (code) => resolve({ ok: code === 0, log, out }));
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
