/**
 * The persistent-state conformance cases (test/conformance/persistence.ts) on PostgreSQL: write-behind,
 * load on first activation, version conflicts, hooks, idle collection, preload and reminders, through the inline
 * backend and the CPU pool, against the global setup's server (a fresh schema per case).
 */
import { GrainSystem } from '@ringgrain/core';
import type { Backend } from '@ringgrain/core/types';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { InlineBackend } from '@ringgrain/inline-backend';
import { describe, inject, it } from 'vitest';
import { persistenceCases, type StoreFixture } from '../../../test/conformance/persistence.ts';
import { reminderCases } from '../../../test/conformance/reminders.ts';
import { PostgresStore } from '../src/index.ts';

const url = inject('pgUrl');
let n = 0;
const postgres: StoreFixture = {
  name: 'postgres',
  make: async () => new PostgresStore({ connection: url, schema: `persist_${process.pid}_${n++}` }),
  reopen: async (store) => new PostgresStore({ connection: url, schema: (store as PostgresStore).schema }),
};

const lanes: Array<{ name: string; make: () => Backend }> = [
  { name: 'inline', make: () => new InlineBackend() },
  { name: 'cpu-pool', make: () => new CpuBackend({ threads: 3 }) },
];

for (const lane of lanes) {
  describe(`persistent state on PostgreSQL, ${lane.name} backend`, () => {
    for (const c of [...persistenceCases, ...reminderCases]) {
      it(c.name, async () => {
        const clock = { now: 1_000_000 };
        const fresh = () =>
          new GrainSystem({
            backends: { x: lane.make() },
            logLevel: 'silent',
            handleSignals: false,
            clock: () => clock.now,
          });
        await c.run({ fresh, placement: 'x', clock }, postgres);
      }, 120_000);
    }
  });
}
