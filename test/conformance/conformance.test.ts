/**
 * Runs the ONE list of conformance cases (cases.ts) against every backend fixture (backends.ts), minus
 * the explicit SKIP list (skips.ts). Each case gets a fresh system with an injected clock, and ends with
 * the counter balance check before the system is shut down.
 */
import { GrainSystem } from '@ringgrain/core';
import { afterEach, describe, it } from 'vitest';
import { backendFixtures } from './backends.ts';
import { cases, expectBalanced } from './cases.ts';
import { SKIPS } from './skips.ts';

const fixtures = await backendFixtures();

for (const fx of fixtures) {
  const title = fx.skip ? `${fx.name} (skipped: ${fx.skip})` : fx.name;
  describe.skipIf(fx.skip !== undefined)(title, () => {
    let system: GrainSystem | undefined;
    afterEach(async () => {
      const s = system;
      system = undefined;
      if (s) await s.shutdown({ mode: 'reject', timeoutMs: 2000 });
    });

    for (const c of cases) {
      const reason = SKIPS[fx.name][c.name];
      const name = reason ? `${c.name} (skipped: ${reason})` : c.name;
      it.skipIf(reason !== undefined)(name, async () => {
        const clock = { now: 1_000_000 };
        system = new GrainSystem({
          backends: { [fx.name]: fx.make() },
          logLevel: 'silent',
          clock: () => clock.now,
          handleSignals: false,
          ...c.system,
        });
        for (const [cls, opts] of c.grains) system.register(cls, { placement: fx.name, ...opts });
        await system.start();
        await c.run({ system, backend: fx.name, clock });
        await expectBalanced(system);
      });
    }
  });
}
