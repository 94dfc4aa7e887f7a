import type { Logger } from 'pino';
import type { WriteFence } from '../persist/write-behind.ts';
import type { RouterCounts } from './counts.ts';
import { writeOwnership } from './ownership.ts';
import { partitionOf } from './partition.ts';
import { EntryKind, type ClusterConnection, type MessageEntry, type PartitionTable } from './types.ts';

/** A failed claim is tried again after this long (the partition's messages wait meanwhile). */
const CLAIM_RETRY_MS = 500;
/**
 * The longest a gained partition's messages wait for the old owner's handoff (then they run: at-most-once, newest
 * flushed state).
 */
export const HANDOFF_MS = 5_000;

/** What the router needs of a class's write-behind to fence it (persist/write-behind.ts). */
export interface FencedWrites {
  /** Whether its store can fence (StateTable.claim). */
  readonly canFence: boolean;
  claim(partitions: ArrayLike<number>, epochs: ArrayLike<number>): Promise<Float64Array> | undefined;
  fence: WriteFence | undefined;
}

/** What the handoffs need of the system (a part of RouterHost). */
export interface HandOffHost {
  readonly logger: Logger;
  /**
   * This silo lost partitions of `grain`: write its actors' states (deactivating them) before the new owners load them.
   */
  handOff?(grain: string): Promise<void>;
  /**
   * A hosted class's ownership memory shared with its kernels (ownership.ts): K2K to a key not owned here is refused
   * there.
   */
  ownership?(grain: string): SharedArrayBuffer | undefined;
  /** A hosted class's write-behind (undefined: no storage): partitions are claimed in its store, its writes fenced. */
  fenced?(grain: string): FencedWrites | undefined;
  /** The partitions of `grain` served here changed (as the kernels' ownership): its reminders follow them. */
  served?(grain: string, partitions: number, serves: (p: number) => boolean): void;
}

/** What the handoffs need of the router. */
export interface HandOffRouter {
  /** Routes an entry that waited here (its partition is served now, or moved on). */
  route(entry: MessageEntry): void;
  /** A claim settled: parked entries may route now. */
  unpark(): void;
  claimed(e: { grain: string; partitions: readonly number[]; epochs: readonly number[] }): void;
  readonly closed: boolean;
}

interface Wait {
  /** The old owner whose HandOff entry is awaited, or '' while the partition is being claimed in the store. */
  from: string;
  since: number;
}

/**
 * Moving partitions between silos. A new table: partitions this silo lost are handed off (states written,
 * then a HandOff entry to each new owner, after every entry forwarded so far); partitions it gained from a
 * live old owner wait for that entry (bounded by HANDOFF_MS), then are claimed in the store (fenced storage)
 * and served. Messages for waiting partitions are held here, in arrival order, and released in order.
 * The kernels see the partitions served here through the class's ownership memory (K2K sends check it).
 */
export class HandOffs {
  /** The owners each class's previous table named (what a new table moved). */
  private readonly prevOwners = new Map<string, readonly string[]>();
  /** Per class, partitions gained and not served yet. */
  private readonly awaiting = new Map<string, Map<number, Wait>>();
  /** Per class, entries for awaited partitions, in arrival order (released in order). */
  private readonly held = new Map<string, MessageEntry[]>();
  /** Per class and old owner, the newest table version it said it handed off for. */
  private readonly handedOff = new Map<string, Map<string, number>>();
  /** Silos seen to die: nothing more comes from them (no handoff to wait for). */
  private readonly deadIds = new Set<string>();
  private readonly warnedNoFence = new Set<string>();

  constructor(
    private readonly host: HandOffHost,
    private readonly conn: ClusterConnection,
    private readonly counts: RouterCounts,
    private readonly router: HandOffRouter,
  ) {}

  private get self(): string {
    return this.conn.self;
  }

  /** Whether `key`'s partition waits for a handoff (or a claim) here. */
  awaited(grain: string, key: number | string): boolean {
    if (this.awaiting.size === 0) return false;
    const w = this.awaiting.get(grain);
    return w !== undefined && w.has(partitionOf(key, this.conn.table(grain)!.owners.length));
  }

  /** Entries held here now. */
  get heldCount(): number {
    let n = 0;
    for (const h of this.held.values()) n += h.length;
    return n;
  }

  /** Holds an entry for an awaited partition until it is served. */
  hold(entry: MessageEntry): void {
    let h = this.held.get(entry[1]);
    if (!h) this.held.set(entry[1], (h = []));
    h.push(entry);
    this.counts.heldForHandOff++;
  }

  /**
   * Silo `id` died: it sends nothing more; partitions waiting for its handoff are claimed and run from the newest
   * flushed state.
   */
  died(id: string): void {
    this.deadIds.add(id);
    this.release((w) => w.from === id);
  }

  /** `from` wrote the states of the partitions of `grain` it lost in table `version`. */
  onHandOff(from: string, grain: string, version: number): void {
    let done = this.handedOff.get(grain);
    if (!done) this.handedOff.set(grain, (done = new Map()));
    if (version > (done.get(from) ?? -1)) done.set(from, version);
    this.release((w) => w.from === from);
  }

  /** Waits past HANDOFF_MS end: those partitions run from the newest flushed state. */
  sweep(now: number): void {
    if (this.awaiting.size === 0) return;
    const before = this.counts.handOffsTimedOut;
    this.release((w) => {
      if (now - w.since < HANDOFF_MS) return false;
      this.counts.handOffsTimedOut++;
      return true;
    });
    if (this.counts.handOffsTimedOut > before)
      this.host.logger.warn(
        { partitions: this.counts.handOffsTimedOut - before },
        `cluster: no handoff within ${HANDOFF_MS} ms; the partitions run from the newest flushed state`,
      );
  }

  /** A new table of `t.grain`: hands off what it lost, waits for (or claims) what it gained. */
  onTable(t: PartitionTable): void {
    const prev = this.prevOwners.get(t.grain);
    this.prevOwners.set(t.grain, t.owners);
    const fencing = this.fencing(t.grain, t.owners.length);
    let waits = this.awaiting.get(t.grain);
    // Waits for partitions this table gives to another silo end: their held entries go to it.
    let dropped = false;
    if (waits) for (const p of [...waits.keys()]) if (t.owners[p] !== this.self) dropped = waits.delete(p) || dropped;
    const claims: number[] = [];
    const lostTo = new Set<string>();
    if (!prev || prev.length !== t.owners.length) {
      // The first table seen: every partition it gives this silo is claimed before it is served.
      if (fencing) for (let p = 0; p < t.owners.length; p++) if (t.owners[p] === this.self) claims.push(p);
    } else {
      const now = performance.now();
      const done = this.handedOff.get(t.grain);
      for (let p = 0; p < prev.length; p++) {
        const was = prev[p]!;
        const is = t.owners[p]!;
        if (was === this.self && is !== this.self) {
          if (is !== '') lostTo.add(is);
        } else if (is === this.self && was !== this.self) {
          // Any old owner not seen dead writes the states and says so (HandOff): a live one, one that left and
          // is draining, or one this silo has not heard of yet (a table can arrive before the membership
          // records of a silo that just joined); bounded by HANDOFF_MS.
          if (was !== '' && !this.deadIds.has(was) && (done?.get(was) ?? -1) < t.version) {
            if (!waits) this.awaiting.set(t.grain, (waits = new Map()));
            waits.set(p, { from: was, since: now });
          } else if (fencing) claims.push(p);
        }
      }
    }
    if (claims.length) this.claim(t.grain, claims);
    if (dropped) this.drain(t.grain);
    if (lostTo.size === 0) return;
    const send = () => {
      for (const to of lostTo) {
        this.counts.handOffsSent++;
        this.conn.send(to, [EntryKind.HandOff, t.grain, t.version]);
      }
    };
    const h = this.host.handOff?.(t.grain);
    if (!h) send();
    else
      h.then(send, (e: unknown) => {
        this.host.logger.warn(
          { err: e, grain: t.grain },
          'cluster: handoff failed to write states; the new owners load the newest written',
        );
        send();
      });
  }

  /**
   * The kernels' view of which partitions of `grain` run here (K2K sends check it): owned by the table
   * and not waiting for a handoff, as the router decides LOCAL. A partition lost is cleared here at
   * once, before its actors are handed off. The host's reminders follow the same view (HandOffHost.served),
   * told before a drain routes the partition's held messages.
   */
  publishOwnership(grain: string): void {
    const sab = this.host.ownership?.(grain);
    const t = this.conn.table(grain);
    if (!t) return;
    const waits = this.awaiting.get(grain);
    const serves = (p: number) => t.owners[p] === this.self && !(waits?.has(p) ?? false);
    if (sab) writeOwnership(sab, t.owners.length, serves);
    this.host.served?.(grain, t.owners.length, serves);
  }

  /**
   * The epoch this silo claimed `key`'s partition under (0: not claimed here; undefined: the class is not fenced here).
   */
  claimedEpoch(grain: string, key: number | string): number | undefined {
    const f = this.host.fenced?.(grain)?.fence;
    return f && f.epochs[partitionOf(key, f.partitions)];
  }

  /**
   * Stops waiting for the handoffs `which` picks: those partitions are claimed in the store (a class with
   * fenced storage), then served; held entries no longer waiting run, in order.
   */
  private release(which: (w: Wait) => boolean): void {
    for (const [grain, waits] of this.awaiting) {
      const claims: number[] = [];
      for (const [p, w] of waits) {
        if (w.from === '' || !which(w)) continue;
        waits.delete(p);
        claims.push(p);
      }
      if (claims.length && this.fencing(grain, this.conn.table(grain)!.owners.length)) this.claim(grain, claims);
      this.drain(grain);
    }
  }

  /** Publishes the class's ownership and runs (in order) its held entries that no longer wait. */
  private drain(grain: string): void {
    if (this.awaiting.get(grain)?.size === 0) this.awaiting.delete(grain);
    this.publishOwnership(grain);
    const h = this.held.get(grain);
    if (!h) return;
    const keep: MessageEntry[] = [];
    this.held.delete(grain);
    for (const e of h) {
      if (this.awaited(grain, e[3])) keep.push(e);
      else this.router.route(e);
    }
    if (keep.length) this.held.set(grain, keep.concat(this.held.get(grain) ?? []));
  }

  /**
   * Whether `grain`'s writes are fenced here: it has storage whose store can claim partitions. Sets up the
   * write-behind's fence (per partition, the epoch this silo claimed it under) for `partitions` partitions.
   */
  private fencing(grain: string, partitions: number): boolean {
    const f = this.host.fenced?.(grain);
    if (!f) return false;
    if (!f.canFence) {
      if (!this.warnedNoFence.has(grain)) {
        this.warnedNoFence.add(grain);
        this.host.logger.warn(
          { grain },
          `cluster: ${grain}'s store cannot claim partitions (no StateTable.claim): its writes are not ` +
            `fenced, so a stale owner's writes are not refused (docs/cluster.md)`,
        );
      }
      return false;
    }
    if (f.fence?.partitions !== partitions) f.fence = { partitions, epochs: new Float64Array(partitions) };
    return true;
  }

  /**
   * Claims partitions in the store before serving them: the store raises each one's epoch above every
   * earlier claim, and this silo's writes carry the epoch it got, so an earlier owner's writes are refused
   * from now on. Their messages wait (held) until the claim commits; a failed claim is retried.
   */
  private claim(grain: string, parts: number[]): void {
    const f = this.host.fenced?.(grain)!;
    let waits = this.awaiting.get(grain);
    if (!waits) this.awaiting.set(grain, (waits = new Map()));
    const now = performance.now();
    for (const p of parts) waits.set(p, { from: '', since: now });
    const t = this.conn.table(grain)!;
    const pr = f.claim(
      parts,
      parts.map((p) => t.epochs[p] ?? 0),
    );
    this.counts.claims++;
    const settle = () => {
      const w = this.awaiting.get(grain);
      if (w) this.drain(grain);
      this.router.unpark();
    };
    if (!pr) {
      for (const p of parts) waits.delete(p);
      settle();
      return;
    }
    pr.then(
      (epochs) => {
        const w = this.awaiting.get(grain);
        const fence = f.fence;
        const got: number[] = [];
        parts.forEach((p, i) => {
          // Still ours and still waiting for this claim (a newer table may have moved it meanwhile).
          if (w?.get(p)?.from !== '' || !fence) return;
          fence.epochs[p] = epochs[i]!;
          w.delete(p);
          got.push(p);
          this.counts.partitionsClaimed++;
        });
        settle();
        if (got.length) this.router.claimed({ grain, partitions: got, epochs: got.map((p) => fence!.epochs[p]!) });
      },
      (e: unknown) => {
        this.counts.claimFailures++;
        this.host.logger.warn(
          { err: e, grain, partitions: parts.length },
          `cluster: claiming ${parts.length} partitions of ${grain} in the store failed; their messages ` +
            `wait, retrying in ${CLAIM_RETRY_MS} ms`,
        );
        const retry = setTimeout(() => {
          if (this.router.closed) return;
          const w = this.awaiting.get(grain);
          const again = parts.filter((p) => w?.get(p)?.from === '');
          if (again.length) this.claim(grain, again);
        }, CLAIM_RETRY_MS);
        retry.unref();
      },
    );
  }
}
