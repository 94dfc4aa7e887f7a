/**
 * Reminders of one grain class: persisted in its state store, kept by the host, fired as tells.
 *
 * Unlike timers (per activation, ticked by the kernel that holds the actor), a reminder outlives its
 * activation and the process: it must reach actors that are not active, and it must be written before
 * it is trusted. So the host owns them: one row per actor and reminder in the store's reminder table, an
 * in-memory copy checked on every sweep, and a fire is an ordinary host tell of the reminder's method
 * (which activates the actor, loading its state, like any message). Reminders are for coarse schedules
 * (seconds to days); a fire is a host message, never a per-tick kernel job.
 *
 * Semantics:
 * - A row stores `nextDue`; each fire moves it to the next point of the period grid after the clock and
 *   writes the row (one write call for every row fired in the same sweep).
 * - Missed fires: a system that starts on a store fires every reminder whose `nextDue` has passed once,
 *   at start (however many periods passed while nothing ran), then on its grid. A fire that was sent
 *   but whose row update was not committed before a crash is sent again at the next start: a fire is
 *   delivered at least once across crashes, and never more than once while the process runs.
 * - A stored row naming a reminder or method the class no longer declares is reported (a storageError
 *   event) and left in the store untouched; it is not armed.
 */
import type { ActorKey } from '../backend.ts';
import type { GrainDef, MethodDef } from '../grain.ts';
import type { StorageErrorEvent } from '../persist/write-behind.ts';
import { StateDecodeError } from '../store/errors.ts';
import type { ReminderId, ReminderRow, ReminderTable, StateStore } from '../store/types.ts';
import { byName, nextDue, startArgs, type TimerStart } from '../timers/spec.ts';

interface Armed {
  readonly key: ActorKey;
  readonly name: string;
  readonly method: MethodDef;
  periodMs: number;
  nextDue: number;
}

/** A reminder as `list` shows it. */
export interface ReminderInfo {
  readonly key: ActorKey;
  readonly name: string;
  readonly method: string;
  readonly periodMs: number;
  readonly nextDue: number;
}

export interface ReminderMetrics {
  /** Reminders set now, fires sent, and store writes that failed (each a storageError event). */
  readonly armed: number;
  readonly fired: number;
  readonly writeErrors: number;
}

function idOf(key: ActorKey, name: string): string {
  return `${typeof key === 'number' ? 'n' : 's'}${key}\u0000${name}`;
}

export class ReminderService {
  private readonly armed = new Map<string, Armed>();
  private chain: Promise<void> = Promise.resolve();
  private fired = 0;
  private writeErrors = 0;

  constructor(
    private readonly def: GrainDef,
    private readonly store: StateStore,
    private readonly table: ReminderTable,
    /** Sends the reminder's tell (the system's send path: the actor activates like on any message). */
    private readonly send: (method: MethodDef, key: ActorKey, now: number) => void,
    private readonly report: (e: StorageErrorEvent) => void,
  ) {}

  /** Reads every stored reminder of the class (at start, before the first fire). */
  async load(): Promise<number> {
    const rows = await this.table.list();
    for (const row of rows) {
      const decl = this.def.reminders.find((r) => r.name === row.name);
      if (!decl || decl.method.name !== row.method) {
        const why = decl ? `it delivers "${row.method}", the spec says "${decl.method.name}"` : `the class declares no reminder "${row.name}"`;
        const error = new StateDecodeError(this.store.kind, this.def.name, row.key, `stored reminder "${row.name}" is not armed: ${why}`);
        this.report({ grain: this.def.name, op: 'reminder', error, keys: [row.key] });
        continue;
      }
      this.armed.set(idOf(row.key, row.name), { key: row.key, name: row.name, method: decl.method, periodMs: row.periodMs, nextDue: row.nextDue });
    }
    return this.armed.size;
  }

  /** Sets (or replaces) a reminder: first fire at `dueAt`, then every `periodMs`; written at once. */
  set(key: ActorKey, name: string, periodMs: number, dueAt: number): Promise<void> {
    const decl = byName(`${this.def.name}.setReminder(${JSON.stringify(name)})`, 'reminder', this.def.reminders, name);
    const a: Armed = { key, name, method: decl.method, periodMs, nextDue: dueAt };
    this.armed.set(idOf(key, name), a);
    return this.write([a], []);
  }

  /** The system API's set: `opts` as ctx.setReminder takes them, from the clock `now`. */
  setFrom(key: ActorKey, name: string, opts: TimerStart & { periodMs: number }, now: number): Promise<void> {
    const { periodMs, dueMs } = startArgs(`${this.def.name}.setReminder(${JSON.stringify(name)})`, opts, {});
    return this.set(key, name, periodMs, now + dueMs);
  }

  /** Removes a reminder; resolves to whether it was set. */
  async clear(key: ActorKey, name: string): Promise<boolean> {
    byName(`${this.def.name}.clearReminder(${JSON.stringify(name)})`, 'reminder', this.def.reminders, name);
    const had = this.armed.delete(idOf(key, name));
    await this.write([], [{ key, name }]);
    return had;
  }

  /** Fires every reminder due by `now` (once each, however late), then writes their next due times. */
  fireDue(now: number): number {
    const changed: Armed[] = [];
    for (const a of this.armed.values()) {
      if (a.nextDue > now) continue;
      a.nextDue = nextDue(a.nextDue, a.periodMs, now);
      changed.push(a);
      this.fired++;
      this.send(a.method, a.key, now);
    }
    // A failed write is reported (storageError) and the fire stands: the row keeps its old nextDue in the store.
    if (changed.length) this.write(changed, []).catch(() => undefined);
    return changed.length;
  }

  list(key?: ActorKey): ReminderInfo[] {
    const out: ReminderInfo[] = [];
    for (const a of this.armed.values()) {
      if (key !== undefined && a.key !== key) continue;
      out.push({ key: a.key, name: a.name, method: a.method.name, periodMs: a.periodMs, nextDue: a.nextDue });
    }
    return out;
  }

  metrics(): ReminderMetrics {
    return { armed: this.armed.size, fired: this.fired, writeErrors: this.writeErrors };
  }

  /** Resolves once every write queued so far has been tried. */
  settled(): Promise<void> {
    return this.chain;
  }

  /** Queues one put and one delete (writes of a class run one at a time, in the order they were made). */
  private write(put: readonly Armed[], del: readonly ReminderId[]): Promise<void> {
    const rows: ReminderRow[] = put.map((a) => ({ key: a.key, name: a.name, method: a.method.name, periodMs: a.periodMs, nextDue: a.nextDue }));
    const run = async () => {
      try {
        if (rows.length) await this.table.put(rows);
        if (del.length) await this.table.delete(del);
      } catch (e) {
        this.writeErrors++;
        this.report({ grain: this.def.name, op: 'reminder', error: e as Error, keys: [...rows.map((r) => r.key), ...del.map((d) => d.key)] });
        throw e;
      }
    };
    const p = this.chain.then(run);
    this.chain = p.catch(() => undefined);
    return p;
  }
}
