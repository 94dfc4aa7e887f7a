/**
 * README "Backends by name": `backends` maps names of your choosing to backend instances; a placement is one of
 * those names or 'auto' (the first backend whose probe passes, in `autoOrder` if given, else by `autoRank`: the
 * CUDA backends rank above the CPU). The choice, and why others were passed over, is logged.
 * On this machine there is no GPU: the CUDA backend's probe fails.
 */
import { GrainSystem, type RinggrainError } from '@ringgrain/core';
import { BackendUnavailableError, PlacementError } from '@ringgrain/core/errors';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { CudaBackend } from '@ringgrain/cuda-backend';
import { InlineBackend } from '@ringgrain/inline-backend';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { Account, Probe } from './grains.ts';

const systems: GrainSystem[] = [];
afterEach(async () => {
  for (const s of systems.splice(0)) await s.shutdown({ mode: 'reject', timeoutMs: 2000 }).catch(() => undefined);
});

function logged(): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { logger, lines };
}

function make(opts: ConstructorParameters<typeof GrainSystem>[0]): GrainSystem {
  const s = new GrainSystem({ logLevel: 'silent', handleSignals: false, ...opts });
  systems.push(s);
  return s;
}

async function thrown(p: () => Promise<unknown>): Promise<unknown> {
  try {
    await p();
  } catch (e) {
    return e;
  }
  return undefined;
}

describe('placement', () => {
  it('names of your choosing: two classes on two backends in one system, each reporting its backend', async () => {
    const s = make({ backends: { workers: new CpuBackend({ threads: 1 }), here: new InlineBackend() } });
    s.register(Account, { placement: 'workers' }).register(Probe, { placement: 'here' });
    await s.start();
    expect(await s.grain(Account, 1).deposit({ amount: 4 })).toEqual({ balance: 4 });
    expect(await s.grain(Probe, 1).flip({ on: true })).toEqual({ on: true });
    const m = s.metrics();
    expect([m['Account']!.backend, m['Probe']!.backend]).toEqual(['cpu', 'inline']);
  });

  it(
    "'auto' without autoOrder: CUDA ranks first, its probe fails here (no driver), the CPU runs the class; " +
      'the log says why',
    async () => {
      const { logger, lines } = logged();
      const s = make({ backends: { cpu: new CpuBackend({ threads: 1 }), cuda: new CudaBackend() }, logger });
      s.register(Account, { placement: 'auto' });
      await s.start();
      expect(await s.grain(Account, 1).deposit({ amount: 1 })).toEqual({ balance: 1 });
      expect(s.metrics()['Account']!.backend).toBe('cpu');
      const line = lines.find((l) => String(l['msg']).startsWith('placement auto'));
      expect(line, JSON.stringify(lines.map((l) => l['msg']))).toBeDefined();
      expect(String(line!['msg'])).toMatch(/Account on cpu/);
      expect(String(line!['msg'])).toMatch(/passed over cuda: .*libcuda/);
    },
  );

  it("'auto' with autoOrder: the first listed backend whose probe passes wins, even over a higher rank", async () => {
    const { logger, lines } = logged();
    const s = make({
      backends: { cpu: new CpuBackend({ threads: 1 }), cuda: new CudaBackend(), inline: new InlineBackend() },
      autoOrder: ['cuda', 'inline', 'cpu'],
      logger,
    });
    s.register(Account, { placement: 'auto' });
    await s.start();
    expect(s.metrics()['Account']!.backend).toBe('inline');
    expect(String(lines.find((l) => String(l['msg']).startsWith('placement auto'))?.['msg'])).toMatch(
      /on inline.*passed over cuda/,
    );
  });

  it('autoOrder naming a backend that was not given is a PlacementError at construction', () => {
    const e = (() => {
      try {
        new GrainSystem({
          backends: { cpu: new CpuBackend({ threads: 1 }) },
          autoOrder: ['gpu'],
          logLevel: 'silent',
          handleSignals: false,
        });
      } catch (x) {
        return x;
      }
      return undefined;
    })();
    expect(e).toBeInstanceOf(PlacementError);
    expect((e as Error).message).toMatch(/gpu/);
  });

  it('a placement that names no backend is a typed error at start, naming it and nothing left running', async () => {
    const s = make({ backends: { cpu: new CpuBackend({ threads: 1 }) } });
    s.register(Account, { placement: 'gpu' });
    const e = await thrown(() => s.start());
    expect(e).toBeInstanceOf(BackendUnavailableError);
    expect((e as RinggrainError).code).toBe('BACKEND_UNAVAILABLE');
    expect((e as Error).message).toMatch(/"gpu"/);
  });

  it(
    "placement: 'cuda' with no GPU: a typed BackendUnavailableError at start saying why (no crash), and " +
      'shutdown still works',
    async () => {
      const s = make({ backends: { cuda: new CudaBackend(), cpu: new CpuBackend({ threads: 1 }) } });
      s.register(Account, { placement: 'cuda' }).register(Probe, { placement: 'cpu' });
      const e = await thrown(() => s.start());
      expect(e).toBeInstanceOf(BackendUnavailableError);
      expect((e as RinggrainError).hint).toBeTruthy();
      expect((e as Error).message).toMatch(/backend "cuda" is unavailable: .*libcuda/);
      await s.shutdown();
    },
  );

  it("'auto' with only a CUDA backend: BackendUnavailableError listing the reason", async () => {
    const s = make({ backends: { cuda: new CudaBackend() } });
    s.register(Account, { placement: 'auto' });
    const e = await thrown(() => s.start());
    expect(e).toBeInstanceOf(BackendUnavailableError);
    expect((e as Error).message).toMatch(/cuda: .*libcuda/);
  });

  it(
    'a start that failed is not a started system: start() again fails the same way (it does not resolve with ' +
      'nothing running)',
    async () => {
      const s = make({ backends: { cpu: new CpuBackend({ threads: 1 }) } });
      s.register(Account, { placement: 'gpu' });
      await expect(s.start()).rejects.toBeInstanceOf(BackendUnavailableError);
      await expect(s.start()).rejects.toBeInstanceOf(BackendUnavailableError);
    },
  );
});
