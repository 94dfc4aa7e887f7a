import { EventEmitter } from 'eventemitter3';
import type { Logger } from 'pino';
import type { GrainDef, MethodDef } from '../grain.ts';
import type { Schema } from '../schema/types.ts';
import { HandlerError, RinggrainError } from '../errors.ts';
import { decodeValue, encodeValue } from './codec.ts';
import { partitionOf } from './partition.ts';
import { writeOwnership } from './ownership.ts';
import type { WriteFence } from '../persist/write-behind.ts';
import { EntryKind, type ClusterConnection, type Entry, type MessageEntry, type PartitionTable, type SiloInfo } from './types.ts';
import { MalformedEntryError, NoSiloError, RemoteGrainError, SiloEvictedError, SiloUnavailableError } from './errors.ts';

/** What the router needs of the system (system.ts builds it). `R` is the system's Route. */
export interface RouterHost<R> {
  readonly logger: Logger;
  readonly askTimeoutMs: number;
  /** The route (and method) of a class this silo hosts (undefined: not hosted here). */
  hostedRoute(grain: string, method: string): { readonly route: R; readonly method: MethodDef } | undefined;
  /** The single-process send path (no cluster routing). */
  sendLocal(route: R, key: number | string, payload: unknown, ask: boolean): Promise<unknown> | undefined;
  /** This silo lost partitions of `grain`: write its actors' states (deactivating them) before the new owners load them. */
  handOff?(grain: string): Promise<void>;
  /** A hosted class's ownership memory shared with its kernels (ownership.ts): K2K to a key not owned here is refused there. */
  ownership?(grain: string): SharedArrayBuffer | undefined;
  /** A hosted class's write-behind (undefined: no storage): partitions are claimed in its store, its writes fenced. */
  fenced?(grain: string): FencedWrites | undefined;
}

/** What the router needs of a class's write-behind to fence it (persist/write-behind.ts). */
export interface FencedWrites {
  /** Whether its store can fence (StateTable.claim). */
  readonly canFence: boolean;
  claim(partitions: ArrayLike<number>, epochs: ArrayLike<number>): Promise<Float64Array> | undefined;
  fence: WriteFence | undefined;
}

export interface ClusterEvents {
  join: (s: SiloInfo) => void;
  leave: (s: SiloInfo, reason: 'left' | 'dead') => void;
  /** Tells this process sent that were not confirmed before their silo died (or that found no silo in time). */
  tellsLost: (e: { silo: string; count: number; reason: string }) => void;
  /** A frame or entry that did not decode: refused and counted (the silo keeps serving). */
  malformed: (e: { from: string | undefined; error: Error }) => void;
  table: (t: PartitionTable) => void;
  evicted: (e: { error: Error }) => void;
  /** Partitions of `grain` this silo claimed in the store (fenced storage): served from now on, under `epochs`. */
  claimed: (e: { grain: string; partitions: readonly number[]; epochs: readonly number[] }) => void;
}

/** Returned by `intercept` when the key lives on this silo: the caller takes the local path. */
export const LOCAL: unique symbol = Symbol('ringgrain.local');

interface RemoteAsk {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  silo: string;
  grain: string;
  method: string;
  deadline: number;
  into: Readonly<Record<string, unknown>> | undefined;
  /** The reply's schema (replies travel as its bytes). */
  reply: Schema | undefined;
}

interface Parked {
  entry: MessageEntry;
  since: number;
}

const MAX_HOPS = 4;
const LEFT_GRACE_MS = 10_000;
/** A failed claim is tried again after this long (the partition's messages wait meanwhile). */
const CLAIM_RETRY_MS = 500;
/** The longest a gained partition's messages wait for the old owner's handoff (then they run: at-most-once, newest flushed state). */
const HANDOFF_MS = 5_000;
const SWEEP_MS = 100;

/**
 * Routes a clustered system's sends: a key whose partition this silo owns takes the local path; any
 * other goes to its owner as an entry (asks wait here by correlation id); a key with no live owner
 * (a move or a death under way) parks, in order, until a table names one. Entries that arrive are run
 * locally, forwarded to the owner the local table names (a move the sender had not seen yet), or parked.
 * Tells are acknowledged per hop (cumulative counts), so a silo that dies leaves an exact count of the
 * tells it had not confirmed: counted as lost, and an event.
 */
export class ClusterRouter<R> extends EventEmitter<ClusterEvents> {
  private readonly pending = new Map<number, RemoteAsk>();
  private corr = 0;
  private readonly sentTells = new Map<string, number>();
  private readonly ackedTells = new Map<string, number>();
  private readonly recvTells = new Map<string, number>();
  private parked: Parked[] = [];
  private readonly parkedGrains = new Map<string, number>();
  private readonly liveIds = new Set<string>();
  private readonly leftAt = new Map<string, number>();
  /** Silos seen to die: nothing more comes from them (no handoff to wait for). */
  private readonly deadIds = new Set<string>();
  /** The owners each class's previous table named (what a new table moved). */
  private readonly prevOwners = new Map<string, readonly string[]>();
  /**
   * Per class, partitions gained and not served yet: from a live old owner whose handoff has not come
   * (p → old owner, since), or being claimed in the store (from: '').
   */
  private readonly awaiting = new Map<string, Map<number, { from: string; since: number }>>();
  /** Per class, entries for awaited partitions, in arrival order (released in order). */
  private readonly held = new Map<string, MessageEntry[]>();
  /** Per class and old owner, the newest table version it said it handed off for. */
  private readonly handedOff = new Map<string, Map<string, number>>();
  private readonly sweeper: ReturnType<typeof setInterval>;
  private evicted: Error | undefined;
  private closed = false;
  private readonly counts = {
    asksOut: 0,
    tellsOut: 0,
    /** Tells the silos they went to confirmed (acks): with lostTells and unconfirmedTells, every tellsOut (and forward) is accounted for. */
    tellsConfirmed: 0,
    messagesIn: 0,
    forwarded: 0,
    parked: 0,
    lostTells: 0,
    asksFailedDead: 0,
    malformed: 0,
    lateReplies: 0,
    localRejected: 0,
    heldForHandOff: 0,
    handOffsSent: 0,
    handOffsTimedOut: 0,
    claims: 0,
    partitionsClaimed: 0,
    claimFailures: 0,
  };
  private warnedNoFence = new Set<string>();
  private readonly routes = new Map<string, Map<string, { readonly route: R; readonly method: MethodDef } | undefined>>();
  /** How long a message waits for a partition owner before it fails (asks: NoSiloError; tells: lost). */
  readonly parkMs: number;

  constructor(
    private readonly host: RouterHost<R>,
    readonly conn: ClusterConnection,
    opts: { parkMs?: number } = {},
  ) {
    super();
    this.parkMs = opts.parkMs ?? Math.min(host.askTimeoutMs, 10_000);
    for (const s of conn.live()) this.liveIds.add(s.id);
    conn.on('join', (s) => {
      this.liveIds.add(s.id);
      this.emit('join', s);
      this.unpark();
    });
    conn.on('leave', (s, reason) => this.onLeave(s, reason));
    conn.on('table', (t) => {
      this.onTable(t);
      this.publishOwnership(t.grain);
      this.emit('table', t);
      this.unpark();
    });
    conn.on('entries', (from, entries) => this.onEntries(from, entries));
    conn.on('frameError', (e) => {
      this.counts.malformed++;
      this.emit('malformed', e);
    });
    conn.on('evicted', ({ reason }) => {
      this.evicted = new SiloEvictedError(reason);
      host.logger.error({ err: this.evicted }, 'cluster: this silo was evicted');
      this.failAll(this.evicted);
      this.emit('evicted', { error: this.evicted });
    });
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweeper.unref();
  }

  get self(): string {
    return this.conn.self;
  }

  /** The silo that owns `key` of `grain` now ('' when none), or undefined while no table was written. */
  ownerOf(grain: string, key: number | string): string | undefined {
    const t = this.conn.table(grain);
    return t === undefined ? undefined : t.owners[partitionOf(key, t.owners.length)];
  }

  /** Members alive now. */
  live(): readonly SiloInfo[] {
    return this.conn.live();
  }

  /**
   * LOCAL when this silo owns the key; otherwise the send goes to (or parks for) its owner: an ask's
   * Promise, or undefined for a tell.
   */
  intercept(def: GrainDef, m: MethodDef, key: number | string, payload: unknown, ask: boolean, into?: Readonly<Record<string, unknown>>): typeof LOCAL | Promise<unknown> | undefined {
    if (this.evicted) throw this.evicted;
    const grain = def.name;
    const method = m.name;
    const owner = this.parkedGrains.has(grain) ? undefined : this.ownerOf(grain, key);
    if (owner === this.self && this.hosted(grain, method) !== undefined && !this.awaited(grain, key)) return LOCAL;
    // Encoded here: a bad payload fails at the call (SchemaValidationError), nothing sent, as locally.
    const bytes = encodeValue(m.request, payload, grain, method);
    const corr = ask ? this.nextCorr() : 0;
    const entry: MessageEntry = [EntryKind.Message, grain, method, key, bytes, corr, this.self, 0];
    let p: Promise<unknown> | undefined;
    if (ask) {
      this.counts.asksOut++;
      p = new Promise((resolve, reject) => {
        this.pending.set(corr, { resolve, reject, silo: owner ?? '', grain, method, deadline: performance.now() + this.host.askTimeoutMs, into, reply: m.reply });
      });
    } else this.counts.tellsOut++;
    this.route(entry, undefined, owner);
    return p;
  }

  private nextCorr(): number {
    this.corr = this.corr >= 0x7fffffff ? 1 : this.corr + 1;
    return this.corr;
  }

  private hosted(grain: string, method: string): { readonly route: R; readonly method: MethodDef } | undefined {
    let byMethod = this.routes.get(grain);
    if (!byMethod) this.routes.set(grain, (byMethod = new Map()));
    let r = byMethod.get(method);
    if (r === undefined && !byMethod.has(method)) byMethod.set(method, (r = this.host.hostedRoute(grain, method)));
    return r;
  }

  /** Sends an entry to its owner, runs it here, or parks it. `from`: the silo that handed it to us (acks). */
  private route(entry: MessageEntry, from: string | undefined, known?: string): void {
    const grain = entry[1];
    const owner = known ?? (this.parkedGrains.has(grain) ? undefined : this.ownerOf(grain, entry[3]));
    if (owner === this.self) {
      if (this.awaited(grain, entry[3])) {
        let h = this.held.get(grain);
        if (!h) this.held.set(grain, (h = []));
        h.push(entry);
        this.counts.heldForHandOff++;
      } else this.runHere(entry);
      return;
    }
    if (owner === undefined || owner === '' || !this.liveIds.has(owner)) {
      this.parked.push({ entry, since: performance.now() });
      this.parkedGrains.set(grain, (this.parkedGrains.get(grain) ?? 0) + 1);
      this.counts.parked++;
      return;
    }
    if (from !== undefined) {
      if (entry[7] >= MAX_HOPS) {
        this.failEntry(entry, new RinggrainError('CLUSTER_ROUTING', `${grain}.${entry[2]}: forwarded ${MAX_HOPS} times without reaching the owner`, { hint: 'placement tables were changing; retry' }));
        return;
      }
      entry[7]++;
      this.counts.forwarded++;
    }
    if (entry[5] === 0) this.sentTells.set(owner, (this.sentTells.get(owner) ?? 0) + 1);
    else if (entry[6] === this.self) {
      const p = this.pending.get(entry[5]);
      if (p) p.silo = owner;
    }
    this.conn.send(owner, entry);
  }

  private runHere(entry: MessageEntry): void {
    const [, grain, method, key, bytes, corr, origin] = entry;
    const hosted = this.hosted(grain, method);
    if (hosted === undefined) {
      this.failEntry(entry, new RinggrainError('UNKNOWN_GRAIN', `grain "${grain}" method "${method}" is not hosted by silo ${this.self}, which owns its partition`, { hint: 'every silo that hosts a class must register the same class (same methods)' }));
      return;
    }
    let r: Promise<unknown> | undefined;
    try {
      r = this.host.sendLocal(hosted.route, key, decodeValue(hosted.method.request, bytes, grain, method), corr !== 0);
    } catch (e) {
      this.failEntry(entry, e as Error);
      return;
    }
    if (corr === 0) {
      // A full ring's wait: its failure is already a tellError event of this system.
      r?.catch(() => {});
      return;
    }
    const reply = hosted.method.reply;
    r!.then(
      (v) => {
        let out: unknown = null;
        try {
          if (reply) out = encodeValue(reply, v, grain, `${method} reply`);
        } catch (e) {
          this.reply(origin, corr, 0, e);
          return;
        }
        this.reply(origin, corr, 1, out);
      },
      (e: unknown) => this.reply(origin, corr, 0, e),
    );
  }

  private failEntry(entry: MessageEntry, error: Error): void {
    if (entry[5] !== 0) this.reply(entry[6], entry[5], 0, error);
    else {
      this.counts.localRejected++;
      this.host.logger.warn({ err: error, grain: entry[1], method: entry[2] }, 'cluster: a tell from another silo was refused here');
    }
  }

  private reply(to: string, corr: number, ok: 0 | 1, v: unknown): void {
    if (to === this.self) {
      // Our own ask (parked too long, or hosted here after a move): the error object itself, typed.
      this.settle(to, corr, ok, v);
      return;
    }
    this.conn.send(to, [EntryKind.Reply, corr, ok, ok ? v : errorShape(v)]);
  }

  private settle(from: string, corr: number, ok: 0 | 1, v: unknown): void {
    const p = this.pending.get(corr);
    if (!p) {
      this.counts.lateReplies++;
      return;
    }
    this.pending.delete(corr);
    if (ok) {
      let value: unknown;
      try {
        value = p.reply ? decodeValue(p.reply, v, p.grain, `${p.method} reply`) : undefined;
      } catch (e) {
        p.reject(e as Error);
        return;
      }
      p.resolve(p.into ? copyInto(value, p.into) : value);
    } else if (v instanceof Error) p.reject(v);
    else p.reject(remoteError(from, v));
  }

  private onEntries(from: string, entries: unknown[]): void {
    let tells = 0;
    for (const e of entries) {
      const bad = checkEntry(e);
      if (bad !== undefined) {
        this.counts.malformed++;
        this.emit('malformed', { from, error: new MalformedEntryError(from, bad) });
        continue;
      }
      const entry = e as Entry;
      switch (entry[0]) {
        case EntryKind.Message:
          this.counts.messagesIn++;
          if (entry[5] === 0) tells++;
          if (this.evicted) {
            this.failEntry(entry, this.evicted);
            break;
          }
          this.route(entry, from);
          break;
        case EntryKind.Reply:
          this.settle(from, entry[1], entry[2], entry[3]);
          break;
        case EntryKind.Ack: {
          const had = this.ackedTells.get(from) ?? 0;
          if (entry[1] > had) {
            this.ackedTells.set(from, entry[1]);
            this.counts.tellsConfirmed += entry[1] - had;
          }
          break;
        }
        case EntryKind.HandOff:
          this.onHandOff(from, entry[1], entry[2]);
          break;
      }
    }
    if (tells > 0) {
      const n = (this.recvTells.get(from) ?? 0) + tells;
      this.recvTells.set(from, n);
      this.conn.send(from, [EntryKind.Ack, n]);
    }
  }

  private onLeave(s: SiloInfo, reason: 'left' | 'dead'): void {
    this.liveIds.delete(s.id);
    if (reason === 'dead') {
      this.deadIds.add(s.id);
      for (const [corr, p] of this.pending) {
        if (p.silo !== s.id) continue;
        this.pending.delete(corr);
        this.counts.asksFailedDead++;
        p.reject(new SiloUnavailableError(p.grain, p.method, s.id, 'died'));
      }
      const lost = (this.sentTells.get(s.id) ?? 0) - (this.ackedTells.get(s.id) ?? 0);
      this.sentTells.delete(s.id);
      this.ackedTells.delete(s.id);
      if (lost > 0) {
        this.counts.lostTells += lost;
        this.host.logger.warn({ silo: s.id, lost }, `cluster: ${lost} tells sent to silo ${s.id} were not confirmed before it died (lost)`);
        this.emit('tellsLost', { silo: s.id, count: lost, reason: 'silo died' });
      }
    }
    else this.leftAt.set(s.id, performance.now());
    this.recvTells.delete(s.id);
    // A dead silo sends nothing more: partitions waiting for its handoff are claimed and run from the newest
    // flushed state. One that left still drains: it hands its partitions off as the new table reaches it.
    if (reason === 'dead') this.release((w) => w.from === s.id);
    this.emit('leave', s, reason);
  }

  /**
   * A new table: partitions this silo lost are handed off (states written, then a HandOff entry to each new
   * owner, after every entry forwarded so far); partitions it gained from a live owner wait for that entry.
   */
  private onTable(t: PartitionTable): void {
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
        this.host.logger.warn({ err: e, grain: t.grain }, 'cluster: handoff failed to write states; the new owners load the newest written');
        send();
      });
  }

  private onHandOff(from: string, grain: string, version: number): void {
    let done = this.handedOff.get(grain);
    if (!done) this.handedOff.set(grain, (done = new Map()));
    if (version > (done.get(from) ?? -1)) done.set(from, version);
    this.release((w) => w.from === from);
  }

  /**
   * The kernels' view of which partitions of `grain` run here (K2K sends check it): owned by the table
   * and not waiting for a handoff, as `intercept` decides LOCAL. A partition lost is cleared here at
   * once, before its actors are handed off.
   */
  private publishOwnership(grain: string): void {
    const sab = this.host.ownership?.(grain);
    const t = this.conn.table(grain);
    if (!sab || !t) return;
    const waits = this.awaiting.get(grain);
    writeOwnership(sab, t.owners.length, (p) => t.owners[p] === this.self && !(waits?.has(p) ?? false));
  }

  /** Whether `key`'s partition waits for a handoff here. */
  private awaited(grain: string, key: number | string): boolean {
    if (this.awaiting.size === 0) return false;
    const w = this.awaiting.get(grain);
    return w !== undefined && w.has(partitionOf(key, this.conn.table(grain)!.owners.length));
  }

  /**
   * Stops waiting for the handoffs `which` picks: those partitions are claimed in the store (a class with
   * fenced storage), then served; held entries no longer waiting run, in order.
   */
  private release(which: (w: { from: string; since: number }) => boolean): void {
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
      else this.route(e, undefined);
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
        this.host.logger.warn({ grain }, `cluster: ${grain}'s store cannot claim partitions (no StateTable.claim): its writes are not fenced, so a stale owner's writes are not refused (docs/cluster.md)`);
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
    const pr = f.claim(parts, parts.map((p) => t.epochs[p] ?? 0));
    this.counts.claims++;
    const settle = () => {
      const w = this.awaiting.get(grain);
      if (w) this.drain(grain);
      this.unpark();
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
        if (got.length) this.emit('claimed', { grain, partitions: got, epochs: got.map((p) => fence!.epochs[p]!) });
      },
      (e: unknown) => {
        this.counts.claimFailures++;
        this.host.logger.warn({ err: e, grain, partitions: parts.length }, `cluster: claiming ${parts.length} partitions of ${grain} in the store failed; their messages wait, retrying in ${CLAIM_RETRY_MS} ms`);
        const retry = setTimeout(() => {
          if (this.closed) return;
          const w = this.awaiting.get(grain);
          const again = parts.filter((p) => w?.get(p)?.from === '');
          if (again.length) this.claim(grain, again);
        }, CLAIM_RETRY_MS);
        retry.unref();
      },
    );
  }

  /** The epoch this silo claimed `key`'s partition under (0: not claimed here; undefined: the class is not fenced here). */
  claimedEpoch(grain: string, key: number | string): number | undefined {
    const f = this.host.fenced?.(grain)?.fence;
    return f && f.epochs[partitionOf(key, f.partitions)];
  }

  /**
   * A silo that left (shut down) drains before it closes; tells to it that stay unconfirmed LEFT_GRACE_MS
   * after its leave were sent as it closed: counted as lost, never silent.
   */
  private settleLeft(now: number): void {
    for (const [id, at] of this.leftAt) {
      if (now - at < LEFT_GRACE_MS) continue;
      this.leftAt.delete(id);
      const lost = (this.sentTells.get(id) ?? 0) - (this.ackedTells.get(id) ?? 0);
      this.sentTells.delete(id);
      this.ackedTells.delete(id);
      if (lost > 0) {
        this.counts.lostTells += lost;
        this.emit('tellsLost', { silo: id, count: lost, reason: 'silo left before it confirmed them' });
      }
    }
  }

  /** Parked entries retried in order; one that still has no owner keeps its place (and those behind it). */
  private unpark(): void {
    if (this.parked.length === 0) return;
    const list = this.parked;
    this.parked = [];
    this.parkedGrains.clear();
    for (const p of list) {
      const grain = p.entry[1];
      if (this.parkedGrains.has(grain)) {
        this.parked.push(p);
        this.parkedGrains.set(grain, this.parkedGrains.get(grain)! + 1);
        continue;
      }
      const owner = this.ownerOf(grain, p.entry[3]);
      if (owner === undefined || owner === '' || (owner !== this.self && !this.liveIds.has(owner))) {
        this.parked.push(p);
        this.parkedGrains.set(grain, 1);
        continue;
      }
      this.route(p.entry, undefined);
    }
  }

  private sweep(): void {
    const now = performance.now();
    this.expireParked(now);
    if (this.awaiting.size) {
      const before = this.counts.handOffsTimedOut;
      this.release((w) => {
        if (now - w.since < HANDOFF_MS) return false;
        this.counts.handOffsTimedOut++;
        return true;
      });
      if (this.counts.handOffsTimedOut > before) this.host.logger.warn({ partitions: this.counts.handOffsTimedOut - before }, `cluster: no handoff within ${HANDOFF_MS} ms; the partitions run from the newest flushed state`);
    }
    if (this.leftAt.size) this.settleLeft(now);
    for (const [corr, p] of this.pending) {
      if (p.deadline > now) continue;
      this.pending.delete(corr);
      p.reject(new RinggrainError('ASK_TIMEOUT', `${p.grain}.${p.method}: no reply from silo ${p.silo || '(none yet)'} within ${this.host.askTimeoutMs} ms`, { hint: 'the owner may be overloaded or partitioned; raise askTimeoutMs' }));
    }
  }

  /** Parked entries older than parkMs fail: asks with NoSiloError, tells counted as lost (an event). */
  private expireParked(now: number): void {
    if (this.parked.length && now - this.parked[0]!.since >= this.parkMs) {
      const keep: Parked[] = [];
      let lost = 0;
      for (const p of this.parked) {
        if (now - p.since < this.parkMs) {
          keep.push(p);
          continue;
        }
        const e = p.entry;
        if (e[5] !== 0) this.failEntry(e, new NoSiloError(e[1], Math.round(now - p.since)));
        else lost++;
      }
      this.parked = keep;
      this.parkedGrains.clear();
      for (const p of keep) this.parkedGrains.set(p.entry[1], (this.parkedGrains.get(p.entry[1]) ?? 0) + 1);
      if (lost) {
        this.counts.lostTells += lost;
        this.emit('tellsLost', { silo: '', count: lost, reason: `no live silo owned their partition within ${this.parkMs} ms` });
      }
    }
  }

  private failAll(error: Error): void {
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
  }

  /** Router and engine figures. */
  metrics(): Record<string, number | string> {
    let unconfirmed = 0;
    for (const [id, n] of this.sentTells) unconfirmed += n - (this.ackedTells.get(id) ?? 0);
    return { silo: this.self, members: this.liveIds.size, pendingAsks: this.pending.size, parkedNow: this.parked.length, unconfirmedTells: unconfirmed, ...this.counts, ...this.conn.metrics() };
  }

  /** Resolves once `pred` holds (checked now and on every membership or table change), or rejects after timeoutMs. */
  waitFor(pred: () => boolean, timeoutMs = 10_000): Promise<void> {
    if (pred()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!pred()) return;
        done();
        resolve();
      };
      const timer = setTimeout(() => {
        done();
        reject(new RinggrainError('CLUSTER_WAIT', `cluster: condition not reached within ${timeoutMs} ms`, { hint: 'are the other silos running and connected to the same cluster?' }));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.off('join', check).off('leave', check).off('table', check).off('claimed', check);
      };
      this.on('join', check).on('leave', check).on('table', check).on('claimed', check);
    });
  }

  /**
   * Whether `silos` silos host classes, and every class's table gives every partition to one of them
   * with each of them owning a share (placement settled after joins and leaves).
   */
  settled(silos: number): boolean {
    const hosts = this.conn.live().filter((s) => !s.client && Object.keys(s.grains).length > 0);
    if (hosts.length !== silos) return false;
    const grains = new Set(hosts.flatMap((s) => Object.keys(s.grains)));
    for (const g of grains) {
      const t = this.conn.table(g);
      if (!t) return false;
      const eligible = new Set(hosts.filter((s) => s.grains[g] !== undefined).map((s) => s.id));
      const owning = new Set(t.owners);
      if (t.owners.some((o) => !eligible.has(o))) return false;
      for (const id of eligible) if (!owning.has(id)) return false;
    }
    return true;
  }

  async close(opts: { drainMs?: number } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.conn.close(opts);
    clearInterval(this.sweeper);
    this.failAll(new RinggrainError('CLUSTER_CLOSED', 'the system left the cluster before the reply came', { hint: 'await asks before system.shutdown()' }));
  }
}

/** An error as it travels in a reply (a handler's failure keeps its grain and method). */
function errorShape(e: unknown): { name: string; code: string; message: string; grain?: string; method?: string } {
  if (e instanceof HandlerError) return { name: e.name, code: e.code, message: e.message, grain: e.grain, method: e.method };
  if (e instanceof Error) return { name: e.name, code: (e as { code?: string }).code ?? 'ERROR', message: e.message };
  return { name: 'Error', code: 'ERROR', message: String(e) };
}

/** A reply's error back as a typed error: a handler's failure as HandlerError, anything else as RemoteGrainError with its code. */
function remoteError(from: string, v: unknown): Error {
  const e = (v ?? {}) as { name?: unknown; code?: unknown; message?: unknown; grain?: unknown; method?: unknown };
  const message = String(e.message ?? 'remote error');
  if (e.code === 'HANDLER' && typeof e.grain === 'string' && typeof e.method === 'string') {
    const prefix = `${e.grain}.${e.method} failed: `;
    return new HandlerError(e.grain, e.method, message.startsWith(prefix) ? message.slice(prefix.length) : message);
  }
  return new RemoteGrainError(from, String(e.name ?? 'Error'), String(e.code ?? 'REMOTE'), message);
}

function copyInto(v: unknown, into: Readonly<Record<string, unknown>>): unknown {
  if (v === null || typeof v !== 'object') return v;
  const out = v as Record<string, unknown>;
  for (const [f, arr] of Object.entries(into)) {
    const src = out[f] as ArrayLike<number> | undefined;
    const dst = arr as { set(a: ArrayLike<number>): void; subarray(a: number, b: number): unknown; length: number } | undefined;
    if (!dst || !src || src.length > dst.length) continue;
    dst.set(src);
    out[f] = src.length === dst.length ? dst : dst.subarray(0, src.length);
  }
  return out;
}

/** undefined when `e` is a well-formed entry; otherwise what is wrong with it. */
function checkEntry(e: unknown): string | undefined {
  if (!Array.isArray(e)) return 'not an array';
  switch (e[0]) {
    case EntryKind.Message:
      if (e.length !== 8) return `a message has 8 fields, got ${e.length}`;
      if (typeof e[1] !== 'string' || typeof e[2] !== 'string') return 'grain and method must be strings';
      if (!(typeof e[3] === 'string' || Number.isSafeInteger(e[3]))) return 'key must be a safe integer or a string';
      if (!Number.isInteger(e[5]) || e[5] < 0) return 'corr must be a non-negative integer';
      if (typeof e[6] !== 'string' || !Number.isInteger(e[7]) || e[7] < 0) return 'origin must be a string and hops an integer';
      return undefined;
    case EntryKind.Reply:
      if (e.length !== 4 || !Number.isInteger(e[1]) || (e[2] !== 0 && e[2] !== 1)) return 'a reply is [1, corr, 0|1, value]';
      return undefined;
    case EntryKind.Ack:
      if (e.length !== 2 || !Number.isSafeInteger(e[1]) || e[1] < 0) return 'an ack is [2, count]';
      return undefined;
    case EntryKind.HandOff:
      if (e.length !== 3 || typeof e[1] !== 'string' || !Number.isSafeInteger(e[2])) return 'a handoff is [3, grain, version]';
      return undefined;
    default:
      return `unknown entry kind ${JSON.stringify(e[0])}`;
  }
}
