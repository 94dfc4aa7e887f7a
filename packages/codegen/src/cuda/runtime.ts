/**
 * The CUDA runtime's C files (src/cuda/runtime/*.cuh, shipped as dist/cuda/runtime/ by `pnpm build`): the
 * static part of every unit, one concern per file. A generated unit names them with `#include "<file>"`
 * lines between its own generated parts (GeneratedKernel.grainSource); `source` has them inlined, so NVRTC,
 * the disk cache and the tests get one self-contained text. A C tool compiles grainSource with
 * `-I <RUNTIME_DIR>` (scripts/ptx-identity.ts checks that both give the same PTX).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The runtime files' directory (src/cuda/runtime under tsx, dist/cuda/runtime in a built package). */
export const RUNTIME_DIR = fileURLToPath(new URL('./runtime/', import.meta.url));

/**
 * Every runtime file, in the order a unit includes them (lanes.cuh through k2k.cuh, residency-evict.cuh and
 * residency-load.cuh through residency.cuh).
 */
export const RUNTIME_FILES = [
  'prelude.cuh',
  'numbers.cuh',
  'turn.cuh',
  'msgpack-read.cuh',
  'msgpack-write.cuh',
  'ring.cuh',
  'lanes.cuh',
  'k2k.cuh',
  'coop.cuh',
  'host-coop.cuh',
  'worker-config.cuh',
  'kernel-state.cuh',
  'state-meta.cuh',
  'reply.cuh',
  'directory.cuh',
  'turn-run.cuh',
  'residency.cuh',
  'residency-evict.cuh',
  'residency-load.cuh',
  'worker.cuh',
  'ingress.cuh',
  'control.cuh',
  'entry.cuh',
] as const;
export type RuntimeFile = (typeof RUNTIME_FILES)[number];

const texts = new Map<string, string>();

/** A runtime file's text (read once per process). */
export function runtimeFile(name: RuntimeFile): string {
  let t = texts.get(name);
  if (t === undefined) {
    t = readFileSync(`${RUNTIME_DIR}${name}`, 'utf8');
    texts.set(name, t);
  }
  return t;
}

/** The line a unit names a runtime file with. */
export const includeRuntime = (name: RuntimeFile): string => `#include "${name}"`;

const INCLUDE = /^#include "([a-z0-9-]+\.cuh)"$/gm;

/**
 * A unit with its runtime `#include` lines replaced by the files' text, a runtime file's own includes too (one
 * self-contained translation unit).
 */
export function inlineRuntime(unit: string): string {
  return unit.replace(INCLUDE, (line, name: string) =>
    (RUNTIME_FILES as readonly string[]).includes(name)
      ? `/* ---- runtime/${name} ---- */\n${inlineRuntime(runtimeFile(name as RuntimeFile).replace(/\n$/, ''))}`
      : line,
  );
}
