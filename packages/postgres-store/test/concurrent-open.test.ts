/**
 * Several processes open one store at once (silos of a cluster starting together): each creates the
 * schema and the tables IF NOT EXISTS, which PostgreSQL does not make safe under concurrency (the loser
 * of a race fails on pg_type's unique index, SQLSTATE 23505). Stores here are separate pools, as
 * separate processes' are; every open must succeed and see one table.
 */
import { describe, expect, inject, it } from 'vitest';
import type { StateTable, StateTableSpec } from '@ringgrain/core/store';
import { PostgresStore } from '../src/index.ts';

const url = inject('pgUrl');
const spec: StateTableSpec = { name: 'Racer', keyKind: 'int', stateSize: 8 };

describe('PostgreSQL: stores opened at once on one schema', () => {
  const title =
    'every store opens the schema, the table, its reminders and its fences; the claim each makes is read by the others';
  it(title, async () => {
    for (let round = 0; round < 4; round++) {
      const schema = `race_${process.pid}_${round}`;
      const stores = Array.from({ length: 4 }, () => new PostgresStore({ connection: url, schema, maxConnections: 2 }));
      try {
        await Promise.all(stores.map((s) => s.open()));
        const tables = (await Promise.all(stores.map((s) => s.table(spec)))) as StateTable<number>[];
        await Promise.all(stores.map((s) => s.reminders(spec)));
        // Each store claims its own partition (the fences table is created on first use, at once too).
        await Promise.all(tables.map((t, i) => t.claim!([i], [i + 1])));
        const claims = await tables[0]!.claimed!([0, 1, 2, 3]);
        expect(Array.from(claims)).toEqual([1, 2, 3, 4]);
      } finally {
        await Promise.all(stores.map((s) => s.close()));
      }
    }
  }, 120_000);
});
