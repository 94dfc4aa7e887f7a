import type { Database } from 'lmdb';
import {
  StateDecodeError,
  type PartitionFence,
  type ReminderId,
  type ReminderRow,
  type ReminderTable,
  type StateKey,
  type StateTableSpec,
} from '@ringgrain/core/store';
import { KIND, writeError } from './errors.ts';
import type { LmdbFences } from './fences.ts';

/** What a table needs of its store: the open environment, or a typed error once closed. */
interface Owner {
  root(what: string): unknown;
}

/** A stored value: [method, periodMs, nextDue]. */
type Stored = [string, number, number];

/**
 * A grain class's reminders as one LMDB database beside its state table: key [actor key, name] (lmdb-js
 * orders array keys element by element, so rows come back by key, then name), value
 * [method, periodMs, nextDue] in lmdb-js's msgpack. Each write call is one transactionSync.
 */
export class LmdbReminderTable<K extends StateKey> implements ReminderTable<K> {
  constructor(
    private readonly owner: Owner,
    private readonly db: Database<Stored, [StateKey, string]>,
    readonly spec: StateTableSpec,
    private readonly fences: () => LmdbFences,
  ) {}

  async put(rows: readonly ReminderRow<K>[], fence?: PartitionFence): Promise<void> {
    this.owner.root('put reminders');
    const fences = fence ? this.fences() : undefined;
    try {
      this.db.transactionSync(() => {
        // Fenced: checked in this transaction, as a state write's.
        fences?.check(
          this.spec,
          rows.map((r) => r.key),
          fence,
          rows.length,
        );
        for (const r of rows) this.db.putSync([r.key, r.name], [r.method, r.periodMs, r.nextDue]);
      });
    } catch (e) {
      throw writeError(e, `put reminders of "${this.spec.name}"`);
    }
  }

  async delete(ids: readonly ReminderId<K>[], fence?: PartitionFence): Promise<number> {
    this.owner.root('delete reminders');
    let n = 0;
    const fences = fence ? this.fences() : undefined;
    try {
      this.db.transactionSync(() => {
        fences?.check(
          this.spec,
          ids.map((i) => i.key),
          fence,
          ids.length,
        );
        for (const id of ids) if (this.db.removeSync([id.key, id.name])) n++;
      });
    } catch (e) {
      throw writeError(e, `delete reminders of "${this.spec.name}"`);
    }
    return n;
  }

  async list(): Promise<ReminderRow<K>[]> {
    this.owner.root('list reminders');
    this.db.resetReadTxn();
    const out: ReminderRow<K>[] = [];
    for (const { key, value } of this.db.getRange()) out.push(this.decode(key, value));
    return out;
  }

  /** A stored row checked: a [key, name] key of the table's key kind, a [method, period > 0, due] value. */
  private decode(id: unknown, value: unknown): ReminderRow<K> {
    const [key, name] = Array.isArray(id) ? (id as unknown[]) : [id, undefined];
    const bad = (detail: string) =>
      new StateDecodeError(KIND, this.spec.name, key, `reminder row ${JSON.stringify(id)}: ${detail}`);
    if (typeof key !== (this.spec.keyKind === 'string' ? 'string' : 'number') || typeof name !== 'string')
      throw bad(`the key is not [${this.spec.keyKind} key, name]`);
    if (!Array.isArray(value) || value.length !== 3) throw bad('the value is not [method, periodMs, nextDue]');
    const [method, periodMs, nextDue] = value as unknown[];
    if (
      typeof method !== 'string' ||
      typeof periodMs !== 'number' ||
      !(periodMs > 0) ||
      !Number.isFinite(periodMs) ||
      typeof nextDue !== 'number' ||
      !Number.isFinite(nextDue)
    ) {
      throw bad(`the value ${JSON.stringify(value)} is not [method, periodMs > 0, nextDue]`);
    }
    return { key: key as K, name, method, periodMs, nextDue };
  }
}
