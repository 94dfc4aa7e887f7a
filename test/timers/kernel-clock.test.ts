/**
 * Timers by the kernel's own clock (no injected system clock): the lane that holds an actor ticks it from
 * Date.now(), with no host message per tick — the host sends only the asks below, and a parked pool
 * thread wakes itself when a tick is due. Real time, so the figures are bounds, not exact counts.
 */
import { GrainSystem, type Backend } from '@ringgrain/core';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { InlineBackend } from '@ringgrain/inline-backend';
import { describe, expect, it } from 'vitest';
import { Ticker } from '../fixtures/timers.ts';

const lanes: Array<{ name: string; make: () => Backend }> = [
  { name: 'cpu pool (2 threads)', make: () => new CpuBackend({ threads: 2 }) },
  { name: 'inline', make: () => new InlineBackend() },
];

for (const lane of lanes) {
  describe(`timers by the kernel clock, ${lane.name}`, () => {
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
        const got = await Promise.all(keys.map(async (k) => system.grain(Ticker, k).get({})));
        for (const r of got) {
          // At most one tick per elapsed period; at least 3 of the ~6 (a loaded 2-core machine may delay some).
          expect(r.ticks).toBeLessThanOrEqual(Math.floor(elapsed / 100) + 1);
          expect(r.ticks).toBeGreaterThanOrEqual(3);
          expect(r.lastTick).toBeGreaterThanOrEqual(t0 + 100);
          expect(r.lastTick).toBeLessThanOrEqual(Date.now());
        }
        expect(m.timers?.armed).toBe(20);
        expect(m.timers?.ticks).toBe(got.reduce((n, r) => n + r.ticks, 0));
      } finally {
        await system.shutdown();
      }
    });
  });
}
