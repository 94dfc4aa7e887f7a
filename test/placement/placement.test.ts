/**
 * Backends by name: core names none. Any key of `backends` is a placement; 'auto' tries backends by
 * `autoOrder`, else by their `autoRank` (higher first), ties in the order given; each choice is logged.
 */
import { GrainSystem } from '@ringgrain/core';
import { BackendUnavailableError, PlacementError } from '@ringgrain/core/errors';
import type { Backend } from '@ringgrain/core/types';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { Numbers } from '../fixtures/grains.ts';

const systems: GrainSystem[] = [];
afterEach(async () => {
  for (const s of systems.splice(0)) await s.shutdown().catch(() => undefined);
});

/** A backend that is never available here (its probe says why); it must never be asked for a kernel. */
function unavailable(name: string, autoRank: number): Backend {
  return {
    name,
    autoRank,
    probe: async () => ({ ok: false, reason: `${name} is absent in this test` }),
    createKernel: () => Promise.reject(new Error(`${name}: createKernel must not be called`)),
    dispose: async () => {},
  };
}

function system(opts: ConstructorParameters<typeof GrainSystem>[0]): GrainSystem {
  const s = new GrainSystem({ logLevel: 'silent', handleSignals: false, ...opts });
  systems.push(s);
  return s;
}

describe('backends by name', () => {
  it('any name is a placement (a CPU backend registered as "mine")', async () => {
    const s = system({ backends: { mine: new CpuBackend() } }).register(Numbers, { placement: 'mine' });
    await s.start();
    expect(await s.grain(Numbers, 1).add({ by: 2 })).toEqual({ count: 1, total: 2 });
    expect(s.metrics()['Numbers']!.backend).toBe('cpu');
  });

  it("'auto' passes over backends whose probe fails, by rank: a rank-5 backend is tried before the CPU", async () => {
    const lines: string[] = [];
    const logger = pino(
      { level: 'info' },
      { write: (line: string) => void lines.push(JSON.parse(line).msg as string) },
    );
    const s = system({ backends: { cpu: new CpuBackend(), fast: unavailable('fast', 5) }, logger });
    s.register(Numbers, { placement: 'auto' });
    await s.start();
    expect(await s.grain(Numbers, 1).add({ by: 1 })).toEqual({ count: 1, total: 1 });
    expect(lines.find((l) => l.startsWith('placement auto'))).toMatch(
      /on cpu.*passed over fast: fast is absent in this test/,
    );
  });

  it("autoOrder sets the preference; a name it lists must be a backend's", async () => {
    const s = system({ backends: { a: unavailable('a', 9), b: new CpuBackend() }, autoOrder: ['b', 'a'] }).register(
      Numbers,
      { placement: 'auto' },
    );
    await s.start();
    expect(s.metrics()['Numbers']!.backend).toBe('cpu');
    expect(() => system({ backends: { b: new CpuBackend() }, autoOrder: ['gpu'] })).toThrow(PlacementError);
  });

  it("'auto' with no backend that can run here fails, listing every reason; an unknown name fails too", async () => {
    const none = system({ backends: { x: unavailable('x', 0), y: unavailable('y', 1) } }).register(Numbers, {
      placement: 'auto',
    });
    await expect(none.start()).rejects.toThrow(BackendUnavailableError);
    await expect(
      system({ backends: { x: unavailable('x', 0), y: unavailable('y', 1) } })
        .register(Numbers, { placement: 'auto' })
        .start(),
    ).rejects.toThrow(/y: y is absent.*x: x is absent/);
    await expect(
      system({ backends: { cpu: new CpuBackend() } })
        .register(Numbers, { placement: 'gpu' })
        .start(),
    ).rejects.toThrow(/no "gpu" backend was given/);
  });
});
