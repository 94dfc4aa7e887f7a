/**
 * Runs the ONE list of conformance cases (cases.ts) against every backend fixture (backends.ts), minus
 * the explicit SKIP list (skips.ts). Isolated cases get a fresh system each; the others share one system
 * per backend (every grain class they need registered once). All systems get an injected clock, and the
 * counter balance check runs after every case, before anything is shut down.
 */
import { GrainSystem } from '@ringgrain/core';
import type { AnyGrainClass } from '@ringgrain/core/types';
import { afterAll, describe, expect, it } from 'vitest';
import { backendFixtures, type BackendFixture } from './backends.ts';
import { cases, expectBalanced, type CaseContext, type ConformanceCase } from './cases.ts';
import { SKIPS } from './skips.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LmdbStore } from '@ringgrain/lmdb-store';
import type { StateStore } from '@ringgrain/core/types';
import type { StoreFixture } from './persistence.ts';

const fixtures = await backendFixtures();

/** LMDB in a temp directory per case (removed after the file). */
const tmp = mkdtempSync(path.join(os.tmpdir(), 'rg-conformance-'));
let dirs = 0;
const lmdb: StoreFixture = {
  name: 'lmdb',
  make: async () => new LmdbStore({ dataDir: path.join(tmp, String(dirs++)) }),
  reopen: async (store: StateStore) => new LmdbStore({ dataDir: store.location }),
};
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function makeSystem(fx: BackendFixture, clock: { now: number }, c?: ConformanceCase): GrainSystem {
  return new GrainSystem({
    backends: { [fx.placement]: fx.make() },
    logLevel: 'silent',
    clock: () => clock.now,
    handleSignals: false,
    ...c?.system,
  });
}

for (const fx of fixtures) {
  const title = fx.skip ? `${fx.name} (skipped: ${fx.skip})` : fx.name;
  describe.skipIf(fx.skip !== undefined)(title, () => {
    let shared: Promise<CaseContext> | undefined;
    const sharedClock = { now: 1_000_000 };

    function sharedSystem(): Promise<CaseContext> {
      shared ??= (async () => {
        const system = makeSystem(fx, sharedClock);
        const grains = new Set<AnyGrainClass>();
        for (const c of cases) {
          if (c.isolated) continue;
          for (const [cls, opts] of c.grains) {
            if (opts || c.system) throw new Error(`case "${c.name}" sets options: mark it isolated`);
            grains.add(cls);
          }
        }
        for (const cls of grains) system.register(cls, { placement: fx.placement });
        await system.start();
        return { system, backend: fx.placement, clock: sharedClock };
      })();
      return shared;
    }

    afterAll(async () => {
      if (shared) await (await shared).system.shutdown({ mode: 'reject', timeoutMs: 2000 });
    });

    // Shared cases first, then the shared system goes, then the isolated cases: on CUDA every grain of a
    // process must be loaded before the first ring kernel runs (a module load waits for running kernels),
    // so a second system may only load its grains once the first one's kernels are gone.
    const ordered = [...cases.filter((c) => !c.isolated), ...cases.filter((c) => c.isolated)];
    // Its own test, with room for the compile: on CUDA a cold start compiles every shared class with
    // NVRTC (about a minute on the GPU machine), which would otherwise count against the first case.
    it.skipIf(ordered.every((c) => c.isolated || SKIPS[fx.name][c.name] !== undefined))(
      'the shared system starts: every shared grain class compiled, launched and active',
      async () => {
        const { system } = await sharedSystem();
        const names = new Set(
          ordered.filter((c) => !c.isolated).flatMap((c) => c.grains.map(([cls]) => cls.grain.name)),
        );
        for (const name of names) expect(system.metrics()[name]?.state, name).toBe('active');
      },
      300_000,
    );
    // An isolated case on CUDA compiles its own unit (its routes differ from the shared system's) with
    // NVRTC, cold: 34-49 s for Small on the GPU machine alone, past the default 60 s while other test
    // files compile beside it. Room for that compile, as the shared system's start has.
    const caseTimeout = (c: (typeof cases)[number]) => (c.isolated && fx.placement === 'cuda' ? 300_000 : 60_000);
    for (const c of ordered) {
      const reason = SKIPS[fx.name][c.name];
      const name = reason ? `${c.name} (skipped: ${reason})` : c.name;
      it.skipIf(reason !== undefined)(name, { timeout: caseTimeout(c) }, async () => {
        if (!c.isolated) {
          const ctx = await sharedSystem();
          await c.run(ctx);
          await expectBalanced(ctx.system);
          return;
        }
        if (shared) {
          const done = shared;
          shared = undefined;
          await (await done).system.shutdown({ mode: 'reject', timeoutMs: 2000 });
        }
        const clock = { now: 1_000_000 };
        if (c.persistence) {
          await c.persistence.run({ fresh: () => makeSystem(fx, clock), placement: fx.placement, clock }, lmdb);
          return;
        }
        const system = makeSystem(fx, clock, c);
        try {
          for (const [cls, opts] of c.grains) system.register(cls, { placement: fx.placement, ...opts });
          await system.start();
          await c.run({ system, backend: fx.placement, clock });
          await expectBalanced(system);
        } finally {
          await system.shutdown({ mode: 'reject', timeoutMs: 2000 });
        }
      });
    }
  });
}
