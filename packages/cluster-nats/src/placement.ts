import { EventEmitter } from 'eventemitter3';
import type { KV, KvWatchEntry } from '@nats-io/kv';
import type { Logger } from 'pino';
import { assignPartitions, type PartitionTable, type SiloInfo } from '@ringgrain/core/cluster';

/** KV keys are subject tokens: a grain name goes in as hex of its UTF-8. */
const keyOf = (grain: string) => `g${Buffer.from(grain, 'utf8').toString('hex')}`;

/**
 * Placement tables in a KV bucket, one record per class. Every member watches them; the leader (the
 * smallest id among live silos that host classes) writes them: for each class, its partitions over the
 * live silos hosting it (core's assignPartitions: fewest moves). Writes are compare-and-set on the
 * record's revision, so two members that both think they lead cannot lose each other's update; a loser
 * takes the newer table from the watch and reconciles again.
 */
export class Placement extends EventEmitter<{ table: (t: PartitionTable) => void }> {
  private readonly tables = new Map<string, { t: PartitionTable; rev: number }>();
  private watching: Promise<void> | undefined;
  private watcher: { stop(): void } | undefined;
  private stopped = false;
  private busy = false;
  private again = false;

  constructor(
    private readonly kv: KV,
    private readonly self: string,
    private readonly partitions: number,
    private readonly live: () => readonly SiloInfo[],
    private readonly logger: Logger,
    /** Whether this member's membership is current (Membership.current): a stale or evicted member never leads. */
    private readonly canLead: () => boolean = () => true,
  ) {
    super();
  }

  table(grain: string): PartitionTable | undefined {
    return this.tables.get(grain)?.t;
  }

  /** Whether any table gives a partition to `id`. */
  names(id: string): boolean {
    for (const { t } of this.tables.values()) if (t.owners.includes(id)) return true;
    return false;
  }

  async start(): Promise<void> {
    const w = await this.kv.watch();
    this.watcher = w;
    this.watching = (async () => {
      for await (const e of w) this.onEntry(e);
    })().catch((e: unknown) => {
      if (!this.stopped) this.logger.error({ err: e }, 'cluster: placement watch ended');
    });
  }

  private onEntry(e: KvWatchEntry): void {
    if (e.operation !== 'PUT') return;
    let t: PartitionTable;
    try {
      t = JSON.parse(e.string()) as PartitionTable;
    } catch {
      this.logger.warn({ key: e.key }, 'cluster: a placement record that is not JSON was ignored');
      return;
    }
    const had = this.tables.get(t.grain);
    if (had && had.t.version >= t.version) return;
    this.tables.set(t.grain, { t, rev: e.revision });
    this.emit('table', t);
    // A table written from an older view (a leader that had not seen a join yet) is corrected here.
    this.reconcile();
  }

  private leads(): boolean {
    if (!this.canLead()) return false;
    const hosts = this.live()
      .filter((s) => !s.client && Object.keys(s.grains).length > 0)
      .map((s) => s.id)
      .sort();
    return hosts[0] === this.self;
  }

  /** The leader rewrites every table the live set no longer matches; others do nothing. Serialized. */
  reconcile(): void {
    if (this.stopped) return;
    if (this.busy) {
      this.again = true;
      return;
    }
    if (!this.leads()) return;
    this.busy = true;
    void this.reconcileOnce()
      .catch((e: unknown) =>
        this.logger.warn({ err: e }, 'cluster: a placement write failed; retrying on the next change'),
      )
      .finally(() => {
        this.busy = false;
        if (this.again) {
          this.again = false;
          this.reconcile();
        }
      });
  }

  private async reconcileOnce(): Promise<void> {
    const live = this.live();
    const grains = new Set<string>([...this.tables.keys(), ...live.flatMap((s) => Object.keys(s.grains))]);
    for (const g of grains) {
      const eligible = live.filter((s) => !s.client && s.grains[g] !== undefined).map((s) => s.id);
      const had = this.tables.get(g);
      const a = assignPartitions(this.partitions, eligible, had?.t);
      if (had && a.moved === 0) continue;
      const t: PartitionTable = { grain: g, version: (had?.t.version ?? 0) + 1, owners: a.owners, epochs: a.epochs };
      const body = JSON.stringify(t);
      try {
        if (had) await this.kv.update(keyOf(g), body, had.rev);
        else await this.kv.create(keyOf(g), body);
        this.logger.info(
          { grain: g, version: t.version, moved: a.moved, silos: eligible.length },
          `cluster: placement of ${g} v${t.version}: ${a.moved} partitions moved over ${eligible.length} silos`,
        );
      } catch (e) {
        // Someone wrote first: the watch brings their table, and onEntry reconciles again.
        this.logger.debug({ err: e, grain: g }, 'cluster: placement CAS lost');
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.watcher?.stop();
    await this.watching;
  }
}
