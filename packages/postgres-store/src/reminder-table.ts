import pg from 'pg';
import { remindersIdent } from './ident.ts';
import {
  StateDecodeError,
  type PartitionFence,
  type ReminderId,
  type ReminderRow,
  type ReminderTable,
  type StateKey,
  type StateTableSpec,
} from '@ringgrain/core/store';
import { KIND } from './errors.ts';
import { inTransaction, withClient, type Owner } from './session.ts';
import type { PgFences } from './fences.ts';

/**
 * A grain class's reminders as one table beside its states, `<name>__reminders`: a row per actor and
 * reminder (key bigint or text, name, method, period_ms, next_due). A write call is one transaction
 * (multi-row upsert or delete from arrays: reminders change a few rows at a time, COPY would not pay).
 */
export class PgReminderTable<K extends StateKey> implements ReminderTable<K> {
  private readonly t: string;
  private readonly keyType: 'bigint' | 'text';

  constructor(
    private readonly owner: Owner,
    readonly spec: StateTableSpec,
    private readonly fences: PgFences,
  ) {
    this.t = `${pg.escapeIdentifier(owner.schema)}.${pg.escapeIdentifier(remindersIdent(spec.name))}`;
    this.keyType = spec.keyKind === 'string' ? 'text' : 'bigint';
  }

  createSql(): string {
    return (
      `CREATE TABLE IF NOT EXISTS ${this.t} (key ${this.keyType} NOT NULL, name text NOT NULL, method text ` +
      'NOT NULL, period_ms float8 NOT NULL, next_due float8 NOT NULL, PRIMARY KEY (key, name))'
    );
  }

  async put(rows: readonly ReminderRow<K>[], fence?: PartitionFence): Promise<void> {
    this.owner.check('put reminders');
    if (rows.length === 0) return;
    await inTransaction(this.owner, `put reminders of "${this.spec.name}"`, async (c) => {
      // Fenced: the partitions' claims held (FOR SHARE) until this commits, as a state write's.
      await this.fences.check(
        c,
        this.spec,
        rows.map((r) => r.key),
        fence,
        rows.length,
      );
      await c.query(
        `INSERT INTO ${this.t} (key, name, method, period_ms, next_due) SELECT * FROM ` +
          `unnest($1::${this.keyType}[], $2::text[], $3::text[], $4::float8[], $5::float8[])
         ON CONFLICT (key, name) DO UPDATE SET method = EXCLUDED.method, period_ms = ` +
          'EXCLUDED.period_ms, next_due = EXCLUDED.next_due',
        [
          rows.map((r) => String(r.key)),
          rows.map((r) => r.name),
          rows.map((r) => r.method),
          rows.map((r) => r.periodMs),
          rows.map((r) => r.nextDue),
        ],
      );
    });
  }

  async delete(ids: readonly ReminderId<K>[], fence?: PartitionFence): Promise<number> {
    this.owner.check('delete reminders');
    if (ids.length === 0) return 0;
    return inTransaction(this.owner, `delete reminders of "${this.spec.name}"`, async (c) => {
      await this.fences.check(
        c,
        this.spec,
        ids.map((i) => i.key),
        fence,
        ids.length,
      );
      const r = await c.query(
        `DELETE FROM ${this.t} WHERE (key, name) IN (SELECT * FROM unnest($1::${this.keyType}[], $2::text[]))`,
        [ids.map((i) => String(i.key)), ids.map((i) => i.name)],
      );
      return r.rowCount ?? 0;
    });
  }

  async list(): Promise<ReminderRow<K>[]> {
    this.owner.check('list reminders');
    // bigint as text: node-postgres would otherwise give a string anyway; parsed and checked below.
    const r = await withClient(this.owner, `list reminders of "${this.spec.name}"`, (c) =>
      c.query<{ key: string; name: string; method: string; period_ms: number; next_due: number }>(
        `SELECT key::text AS key, name, method, period_ms, next_due FROM ${this.t} ORDER BY key, name`,
      ),
    );
    return r.rows.map((row) => {
      const key = this.spec.keyKind === 'string' ? row.key : Number(row.key);
      if (typeof key === 'number' && !Number.isSafeInteger(key))
        throw new StateDecodeError(
          KIND,
          this.spec.name,
          row.key,
          `reminder "${row.name}": key ${row.key} is not a safe integer`,
        );
      if (!(row.period_ms > 0) || !Number.isFinite(row.period_ms) || !Number.isFinite(row.next_due)) {
        throw new StateDecodeError(
          KIND,
          this.spec.name,
          key,
          `reminder "${row.name}": period_ms ${row.period_ms}, next_due ${row.next_due} (a period > 0 and ` +
            'a finite due time are required)',
        );
      }
      return { key: key as K, name: row.name, method: row.method, periodMs: row.period_ms, nextDue: row.next_due };
    });
  }
}
