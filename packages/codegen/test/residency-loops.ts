import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { Stored } from '../../../test/fixtures/stored.ts';
import { generateKernel } from '../src/index.ts';
import { gxxBuild } from './toolchain.ts';

/**
 * The kernel's own control, worker and host-lane ingress loops (control.cuh, worker.cuh, residency.cuh: the
 * DRAIN → RESIDENT stop, the residency requests' relay, service, acks and publication) run on the host: the
 * generated unit of test/fixtures/stored.ts (storage and both hooks) compiled by g++ with __CUDACC__ defined,
 * its inline-PTX helpers replaced by sequentially consistent host atomics (hostUnit), each lane a thread and each
 * warp 32 of them (residency-loops/prelude.h), and a C++ host (residency-loops/driver.cpp) that plays the backend:
 * control handshakes, messages into the partition queues, the load-request ring, install and deactivation
 * requests, EXIT. What the residency harness (residency-harness.ts) drives one step at a time, here every warp
 * runs its real loop at once.
 */

const file = (f: string) => readFileSync(new URL(`./residency-loops/${f}`, import.meta.url), 'utf8');

/** Host versions of the runtime's functions whose bodies are inline PTX, by name (residency-loops/ptx-host.h). */
const HOST: Record<string, string> = Object.fromEntries(
  file('ptx-host.h')
    .split(/^\/\* @(\w+) \*\/$/m)
    .slice(1)
    .flatMap((x, i, all) => (i % 2 === 0 ? [[x, all[i + 1]!.trim()]] : [])),
);
/** Left out: RG_PEER=2's producer copies (not built here) and the dirty gather kernel (another launch). */
const DROPPED = new Set(['rg_k2k_ld_acq', 'rg_k2k_st_rel', 'rg_k2k_exch_acq_rel', 'gather_dirty']);

/** The unit with every function holding inline PTX replaced (HOST) or left out (DROPPED), for a host build. */
export function hostUnit(source: string): string {
  const lines = source.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (!/^(extern "C" )?(__device__|__global__)/.test(l) || !l.trimEnd().endsWith('{')) {
      out.push(l);
      continue;
    }
    let j = i;
    while (lines[j] !== '}') j++;
    const body = lines.slice(i, j + 1);
    if (body.some((b) => b.includes('asm volatile'))) {
      const sig = l.replace(/__launch_bounds__\([^)]*\)/, '').replace(/RG_G\((\w+)\)/g, '$1');
      const name = /(\w+)\(/.exec(sig)?.[1] ?? '?';
      const dropped = [...DROPPED].find((d) => name.endsWith(d));
      if (HOST[name] === undefined && dropped === undefined) {
        throw new Error(`residency-loops: no host version of ${name}`);
      }
      out.push(HOST[name] ?? `/* host build: ${name} left out */`);
    } else {
      out.push(...body);
    }
    i = j;
  }
  let text = out.join('\n');
  const vol = '__device__ static inline unsigned int rg_ld_vol(const unsigned int* p) { ' +
    'return *(const volatile unsigned int*)p; }';
  if (!text.includes(vol)) throw new Error('residency-loops: rg_ld_vol moved');
  text = text.replace(vol, 'static inline unsigned int rg_ld_vol(const unsigned int* p) { return rg_h_ld_vol(p); }');
  // Every warp in one block (the __shared__ stages and coop blocks are indexed by the warp within its block).
  return text.replace(/#define RG_WARPS_PER_BLOCK \d+u/, '#define RG_WARPS_PER_BLOCK 32u');
}

/** A harness run: its exit status (null: killed at the bound) and output lines. */
export interface LoopsRun {
  readonly status: number | null;
  readonly lines: string[];
}

/**
 * Builds the harness (cached) and runs one scenario of driver.cpp: its exit status and output lines. `via`: the
 * messages written into the partition queues directly, or into the host inbound rings (moved by the ingress warps).
 */
export function runLoops(scenario: string, via: 'queues' | 'rings' = 'queues'): LoopsRun {
  const unit = hostUnit(generateKernel(Stored.grain).source);
  const harness = `${file('prelude.h')}\n#include "unit.cu"\n${file('driver.cpp')}`;
  const b = gxxBuild(unit, harness, ['-w', '-D__CUDACC__', '-pthread']);
  expect(b.log).toBe('');
  // Bounded: a warp that never ends (a request or EXIT not answered) is killed, and says so in its status.
  const r = spawnSync(b.out, [scenario, via], { encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL' });
  return { status: r.status, lines: r.stdout.trim().split('\n') };
}
