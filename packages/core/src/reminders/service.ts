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
 * - In a cluster (ReminderCluster) a silo keeps only the reminders of the partitions it serves (as Orleans:
 *   a reminder is owned by the silo owning its grain). A partition's rows are read from the store when
 *   its claim commits (`stage`), armed when the silo starts serving it (`serve`, before its held messages
 *   run) and dropped when it stops; every write carries the silo's fence (partition and claimed epoch),
 *   so a stale owner's write is refused by the store (StateFencedError: a storageError event, counted in
 *   `fenced`) and that partition's reminders stop firing here.
 */
import type { ActorKey } from '../backend.ts';
import type { GrainDef, MethodDef } from '../grain.ts';
import { partitionOf } from '../cluster/partition.ts';
import { fenceOf, type StorageErrorEvent, type WriteFence } from '../persist/write-behind.ts';
import { StateDecodeError, StateFencedError } from '../store/errors.ts';
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
  /** Rows a fenced store refused (cluster: this silo was a stale owner of their partitions; a storageError a call). */
  readonly fenced: number;
}

/** What a clustered service needs of the system: the fence its writes carry, and the clock. */
export interface ReminderCluster {
  /** The class's write fence (the write-behind's: partitions and this silo's claimed epochs); undefined: not fenced. */
  fence(): WriteFence | undefined;
  now(): number;
}

function idOf(key: ActorKey, name: string): string {
  return `${typeof key === 'number' ? 'n' : 's'}${key}\u0000${name}`;
}

export class ReminderService {
  private readonly armed = new Map<string, Armed>();
  private chain: Promise<void> = Promise.resolve();
  private fired = 0;
  private writeErrors = 0;
  private fenced = 0;
  /** Cluster: per partition, 1 where this silo serves it (its reminders are armed here); undefined: one process. */
  private served: Uint8Array | undefined;
  /** Cluster: rows of partitions whose claim committed, read from the store, armed once the partition is served. */
  private readonly staged = new Map<number, Armed[]>();

  constructor(
    private readonly def: GrainDef,
    private readonly store: StateStore,
    private readonly table: ReminderTable,
    /** Sends the reminder's tell (the system's send path: the actor activates like on any message). */
    private readonly send: (method: MethodDef, key: ActorKey, now: number) => void,
    private readonly report: (e: StorageErrorEvent) => void,
    /** Set in a cluster: the service keeps the partitions this silo serves (nothing until the first `serve`). */
    private readonly cluster?: ReminderCluster,
  ) {
    if (cluster) this.served = new Uint8Array(0);
  }

  /** Reads every stored reminder of the class (at start, before the first fire; one process). */
  async load(): Promise<number> {
    for (const a of this.readRows(await this.table.list())) this.armed.set(idOf(a.key, a.name), a);
    return this.armed.size;
  }

  /** The rows the class declares, armed form; the others reported (storageError) and left in the store. */
  private readRows(rows: readonly ReminderRow[]): Armed[] {
    const out: Armed[] = [];
    for (const row of rows) {
      const decl = this.def.reminders.find((r) => r.name === row.name);
      if (!decl || decl.method.name !== row.method) {
        const why = decl
          ? `it delivers "${row.method}", the spec says "${decl.method.name}"`
          : `the class declares no reminder "${row.name}"`;
        const error = new StateDecodeError(
          this.store.kind,
          this.def.name,
          row.key,
          `stored reminder "${row.name}" is not armed: ${why}`,
        );
        this.report({ grain: this.def.name, op: 'reminder', error, keys: [row.key] });
        continue;
      }
      out.push({ key: row.key, name: row.name, method: decl.method, periodMs: row.periodMs, nextDue: row.nextDue });
    }
    return out;
  }

  /**
   * Cluster: this silo claimed `parts` (of `partitions`) in the store; reads their rows (after the claim
   * committed, so every write of an earlier owner is either read here or refused) to arm them when served.
   */
  async stage(parts: ArrayLike<number>, partitions: number): Promise<void> {
    const want = new Set(Array.from(parts));
    const rows = (await this.table.list()).filter((r) => want.has(partitionOf(r.key, partitions)));
    for (const p of want) this.staged.set(p, []);
    for (const a of this.readRows(rows)) this.staged.get(partitionOf(a.key, partitions))!.push(a);
  }

  /**
   * Cluster: the partitions this silo serves now (the router's view, published on every table and
   * claim). Reminders of partitions no longer served stop here at once; a partition served from now on
   * arms its staged rows (a store that cannot claim: read now) and fires those due, before the
   * partition's held messages run.
   */
  serve(partitions: number, serves: (p: number) => boolean): void {
    if (!this.served) return;
    if (this.served.length !== partitions) {
      this.served = new Uint8Array(partitions);
      this.staged.clear();
    }
    const served = this.served;
    for (const [id, a] of this.armed) if (!serves(partitionOf(a.key, partitions))) this.armed.delete(id);
    const gained: number[] = [];
    for (let p = 0; p < partitions; p++) {
      const s = serves(p) ? 1 : 0;
      if (s && !served[p]) gained.push(p);
      served[p] = s;
    }
    if (gained.length === 0) return;
    const unstaged = gained.filter((p) => !this.staged.has(p));
    this.adopt(gained.filter((p) => this.staged.has(p)));
    // A store that cannot claim partitions has no claim to read them after: read them now (not fenced).
    if (unstaged.length)
      this.stage(unstaged, partitions).then(
        () => this.adopt(unstaged.filter((p) => served === this.served && served[p])),
        (e: unknown) => this.report({ grain: this.def.name, op: 'reminder', error: e as Error, keys: [] }),
      );
  }

  /** Arms the staged rows of `parts` (a row set here meanwhile is newer and stays) and fires those due. */
  private adopt(parts: readonly number[]): void {
    const fresh: Armed[] = [];
    for (const p of parts) {
      for (const a of this.staged.get(p) ?? []) {
        const id = idOf(a.key, a.name);
        if (this.armed.has(id)) continue;
        this.armed.set(id, a);
        fresh.push(a);
      }
      this.staged.delete(p);
    }
    if (fresh.length) this.fireRows(fresh, this.cluster!.now());
  }

  /** Cluster: whether every partition `owned` picks (of `partitions`) is served here, its reminders armed. */
  servesAll(partitions: number, owned: (p: number) => boolean): boolean {
    const s = this.served;
    if (s === undefined) return true;
    if (s.length !== partitions) return false;
    for (let p = 0; p < partitions; p++) if (owned(p) && s[p] !== 1) return false;
    return true;
  }

  /** Whether this silo keeps `key`'s reminders (one process: always; a cluster: it serves the key's partition). */
  serves(key: ActorKey): boolean {
    const s = this.served;
    return s === undefined || (s.length > 0 && s[partitionOf(key, s.length)] === 1);
  }

  /** Sets (or replaces) a reminder: first fire at `dueAt`, then every `periodMs`; written at once. */
  set(key: ActorKey, name: string, periodMs: number, dueAt: number): Promise<void> {
    const decl = byName(`${this.def.name}.setReminder(${JSON.stringify(name)})`, 'reminder', this.def.reminders, name);
    const a: Armed = { key, name, method: decl.method, periodMs, nextDue: dueAt };
    // Written under this silo's fence either way: a silo that does not serve the key (a stale owner) is refused.
    if (this.serves(key)) this.armed.set(idOf(key, name), a);
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
    return this.fireRows(this.armed.values(), now);
  }

  private fireRows(rows: Iterable<Armed>, now: number): number {
    const changed: Armed[] = [];
    for (const a of rows) {
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
    return { armed: this.armed.size, fired: this.fired, writeErrors: this.writeErrors, fenced: this.fenced };
  }

  /** Resolves once every write queued so far has been tried. */
  settled(): Promise<void> {
    return this.chain;
  }

  /**
   * Queues one put and one delete (writes of a class run one at a time, in the order they were made). In a
   * cluster each row carries the fence of when it was queued (its partition, this silo's epoch then).
   */
  private write(put: readonly Armed[], del: readonly ReminderId[]): Promise<void> {
    let rows: ReminderRow[] = put.map((a) => ({
      key: a.key,
      name: a.name,
      method: a.method.name,
      periodMs: a.periodMs,
      nextDue: a.nextDue,
    }));
    const f = this.cluster?.fence();
    let putFence =
      f &&
      fenceOf(
        f,
        rows.map((r) => r.key),
      );
    const delFence =
      f &&
      fenceOf(
        f,
        del.map((d) => d.key),
      );
    const run = async () => {
      let failed: Error | undefined;
      // A put refused for one stale partition drops that partition's rows (counted, reported) and writes the rest.
      while (rows.length) {
        try {
          await this.table.put(rows, putFence);
          break;
        } catch (e) {
          failed = this.failed(
            e as Error,
            rows.map((r) => r.key),
            f,
          );
          if (!(e instanceof StateFencedError) || !putFence) throw failed;
          const keep = rows.map((_, i) => putFence!.partitions[i] !== e.partition);
          if (keep.every(Boolean)) throw failed; // not one of this batch's partitions: nothing to drop and retry
          rows = rows.filter((_, i) => keep[i]);
          putFence = {
            partitions: putFence.partitions.filter((_, i) => keep[i]),
            epochs: putFence.epochs.filter((_, i) => keep[i]),
          };
        }
      }
      if (del.length) {
        try {
          await this.table.delete(del, delFence);
        } catch (e) {
          throw this.failed(
            e as Error,
            del.map((d) => d.key),
            f,
          );
        }
      }
      if (failed) throw failed;
    };
    const p = this.chain.then(run);
    this.chain = p.catch(() => undefined);
    return p;
  }

  /**
   * A write call failed: counted and reported (a storageError event). A fenced refusal counts the refused
   * partition's rows, and this silo stops firing that partition's reminders while its epoch is still the
   * refused one (another silo claimed it; a newer claim here stages them again).
   */
  private failed(error: Error, keys: readonly ActorKey[], f: WriteFence | undefined): Error {
    this.writeErrors++;
    if (error instanceof StateFencedError && f) {
      const p = error.partition;
      this.fenced += keys.filter((k) => partitionOf(k, f.partitions) === p).length;
      if (f.epochs[p] === error.epoch)
        for (const [id, a] of this.armed) if (partitionOf(a.key, f.partitions) === p) this.armed.delete(id);
    }
    this.report({ grain: this.def.name, op: 'reminder', error, keys: [...keys] });
    return error;
  }
}
