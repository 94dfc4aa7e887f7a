/**
 * Timers by the kernel's own clock (no injected system clock): the lane that holds an actor ticks it from
 * Date.now(), with no host message per tick — the host sends only the asks below, and a parked pool
 * thread wakes itself when a tick is due. Real time, so the figures are bounds, not exact counts.
 */
import { GrainSystem } from '@ringgrain/core';
import type { Backend } from '@ringgrain/core/types';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { InlineBackend } from '@ringgrain/inline-backend';
import { describe, expect, it } from 'vitest';
import { Ticker } from '../fixtures/timers.ts';

/**
 * The CUDA lane (ticks from the kernel's %globaltimer, codegen timers.ts) where a device is there and
 * RINGGRAIN_CONFORMANCE_CUDA is not 0.
 */
async function cudaLane(): Promise<{ name: string; make: () => Backend; skip?: string }> {
  const name = 'cuda';
  if (process.env['RINGGRAIN_CONFORMANCE_CUDA'] === '0')
    return { name, make: () => undefined as never, skip: 'RINGGRAIN_CONFORMANCE_CUDA=0' };
  const { CudaBackend, probeCuda } = await import('@ringgrain/cuda-backend');
  const probe = probeCuda();
  if (!probe.ok) return { name, make: () => undefined as never, skip: probe.reason ?? 'no CUDA device' };
  return { name, make: () => new CudaBackend({ hostLanes: 1 }) };
}

const lanes: Array<{ name: string; make: () => Backend; skip?: string }> = [
  { name: 'cpu pool (2 threads)', make: () => new CpuBackend({ threads: 2 }) },
  { name: 'inline', make: () => new InlineBackend() },
  await cudaLane(),
];

for (const lane of lanes) {
  describe.skipIf(lane.skip !== undefined)(
    'timers by the kernel ' +
      `clock, ${lane.name}${lane.skip ? ` (skipped: ${lane.skip.split('\n')[0]!.slice(0, 80)})` : ''}`,
    () => {
      it('every actor ticks about every 100 ms while the host sends nothing', async () => {
        const system = new GrainSystem({ backends: { x: lane.make() }, logLevel: 'silent', handleSignals: false });
        system.register(Ticker, { placement: 'x' });
        await system.start();
        try {
          const keys = Array.from({ length: 20 }, (_, i) => i);
          const t0 = Date.now();
          for (const k of keys) await system.grain(Ticker, k).get({});
          const sentBefore = system.metrics()['Ticker']!.sent;
          await new Promise((r) => setTimeout(r, 650));
          const elapsed = Date.now() - t0;
          const m = system.metrics()['Ticker']!;
          expect(m.sent).toBe(sentBefore); // no host message while the timers ran
          const readAt = Date.now();
          const got = await Promise.all(keys.map(async (k) => system.grain(Ticker, k).get({})));
          const readFor = Date.now() - readAt;
          for (const r of got) {
            // At most one tick per elapsed period; at least 3 of the ~6 (a loaded 2-core machine may delay some).
            expect(r.ticks).toBeLessThanOrEqual(Math.floor(elapsed / 100) + 1);
            expect(r.ticks).toBeGreaterThanOrEqual(3);
            expect(r.lastTick).toBeGreaterThanOrEqual(t0 + 100);
            expect(r.lastTick).toBeLessThanOrEqual(Date.now());
          }
          expect(m.timers?.armed).toBe(20);
          // The metrics were read before the gets; timers tick on while they run (at most one period each).
          const sum = got.reduce((n, r) => n + r.ticks, 0);
          expect(m.timers?.ticks).toBeLessThanOrEqual(sum);
          expect(sum - (m.timers?.ticks ?? 0)).toBeLessThanOrEqual(keys.length * (Math.floor(readFor / 100) + 1));
        } finally {
          await system.shutdown();
        }
      });
    },
  );
}
