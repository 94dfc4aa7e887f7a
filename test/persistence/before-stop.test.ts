/**
 * A backend that asks core to deactivate its actors before STOP (BackendKernel.deactivateBeforeStop: the CUDA
 * backend, whose stopped kernel left that request unanswered on the H200 at d4c1e90): at shutdown every actor is
 * deactivated (onDeactivate) and written while the kernel still runs, so a stopped kernel that never answers loses
 * nothing; and when the deactivation before STOP fails too, the stopped kernel is not asked again and the flush
 * writes what the actors left dirty. Played by the inline backend, its kernels wrapped: deactivateBeforeStop set, and
 * the stopped kernel's deactivation (before = Infinity) failing as an unanswered request does (a typed timeout).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GrainSystem } from '@ringgrain/core';
import type { Backend, BackendKernel, KernelPlan } from '@ringgrain/core/backend';
import { InlineBackend } from '@ringgrain/inline-backend';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { afterAll, describe, expect, it } from 'vitest';
import { EV, Stored, events } from '../fixtures/stored.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rg-before-stop-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let dirs = 0;

/** Inline kernels that ask for the deactivation before STOP; `fail` says which deactivations fail (by `before`). */
function wrapped(fail: (before: number) => boolean, calls: number[]): Backend {
  const inner = new InlineBackend();
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop !== 'createKernel') return Reflect.get(target, prop, receiver);
      return async (plan: KernelPlan): Promise<BackendKernel> => {
        const k = await target.createKernel(plan);
        const deactivate = k.deactivateIdle?.bind(k);
        return new Proxy(k, {
          get(t, p, r) {
            if (p === 'deactivateBeforeStop') return true;
            if (p !== 'deactivateIdle' || !deactivate) return Reflect.get(t, p, r);
            return async (before: number, now: number) => {
              calls.push(before);
              if (fail(before)) throw new Error('the kernel did not answer a deactivation within 60000 ms');
              return deactivate(before, now);
            };
          },
        });
      };
    },
  });
}

async function run(fail: (before: number) => boolean): Promise<{ calls: number[]; after: Record<number, unknown> }> {
  const dir = path.join(tmp, String(dirs++));
  const calls: number[] = [];
  const store = new LmdbStore({ dataDir: dir });
  const a = new GrainSystem({ backends: { x: wrapped(fail, calls) }, logLevel: 'silent', handleSignals: false });
  a.register(Stored, { placement: 'x', storage: store });
  await a.start();
  for (const k of [5, 6]) await a.grain(Stored, k).add({ n: k });
  await a.shutdown();
  await store.close();
  // Read back through a plain inline system: what the first one wrote.
  const again = new LmdbStore({ dataDir: dir });
  const b = new GrainSystem({ backends: { x: new InlineBackend() }, logLevel: 'silent', handleSignals: false });
  b.register(Stored, { placement: 'x', storage: again });
  await b.start();
  const after: Record<number, unknown> = {};
  try {
    for (const k of [5, 6]) after[k] = await b.grain(Stored, k).get({});
  } finally {
    await b.shutdown();
    await again.close();
  }
  return { calls, after };
}

describe('deactivation before STOP (a backend that asks for it)', () => {
  it('writes every actor, onDeactivate run, while the kernel ' +
    'runs; the stopped kernel failing loses nothing', async () => {
    const { calls, after } = await run((before) => before === Number.POSITIVE_INFINITY);
    // Before STOP (every actor not waiting for a load), then the stopped kernel (Infinity), which failed.
    expect(calls).toEqual([Number.MAX_VALUE, Number.POSITIVE_INFINITY]);
    for (const k of [5, 6]) {
      const r = after[k] as { count: number; sum: number; deactivations: number; logLen: number; log: number[] };
      expect(r.count).toBe(1);
      expect(r.sum).toBe(k);
      expect(r.deactivations).toBe(1);
      expect(events(r)).toEqual([EV.activate, EV.add, EV.deactivate, EV.activate, EV.get]);
    }
  }, 60_000);

  it('when the deactivation before STOP fails, the stopped ' +
    'kernel is not asked and the flush writes the states', async () => {
    const { calls, after } = await run(() => true);
    expect(calls).toEqual([Number.MAX_VALUE]);
    for (const k of [5, 6]) {
      const r = after[k] as { count: number; sum: number; deactivations: number };
      // Written by the flush (dirty), without onDeactivate: the kernel could not run it.
      expect(r.count).toBe(1);
      expect(r.sum).toBe(k);
      expect(r.deactivations).toBe(0);
    }
  }, 60_000);
});
