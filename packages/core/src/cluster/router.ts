import { EventEmitter } from 'eventemitter3';
import type { Logger } from 'pino';
import type { GrainDef, MethodDef } from '../grain.ts';
import type { ClassMetrics } from '../system/events.ts';
import { DecodeError, RinggrainError } from '../errors.ts';
import { encodeRequest, encodeValue } from './codec.ts';
import { partitionOf } from './partition.ts';
import { PendingAsks } from './asks.ts';
import { routerCounts } from './counts.ts';
import { ClusterControl, type ControlHost } from './control.ts';
import { HandOffs, type HandOffHost } from './handoff.ts';
import { ParkingLot } from './parking.ts';
import { TellLedger } from './tells.ts';
import { checkEntry, errorShape } from './wire.ts';
import {
  EntryKind,
  type ClusterConnection,
  type Entry,
  type MessageEntry,
  type PartitionTable,
  type SiloInfo,
} from './types.ts';
import { MalformedEntryError, NoSiloError, SiloEvictedError } from './errors.ts';

export type { FencedWrites } from './handoff.ts';

/** What the router needs of the system (system.ts builds it). `R` is the system's Route. */
export interface RouterHost<R> extends HandOffHost, ControlHost {
  readonly logger: Logger;
  readonly askTimeoutMs: number;
  /** The route (and method) of a class this silo hosts (undefined: not hosted here). */
  hostedRoute(grain: string, method: string): { readonly route: R; readonly method: MethodDef } | undefined;
  /**
   * The single-process send path (no cluster routing) of a payload as its request schema's bytes: copied
   * into the slot, not decoded and encoded again (the kernel decodes and checks it as any payload).
   */
  sendEncoded(route: R, key: number | string, bytes: Uint8Array, ask: boolean): Promise<unknown> | undefined;
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

const MAX_HOPS = 4;
const LEFT_GRACE_MS = 10_000;
const SWEEP_MS = 100;

/**
 * Routes a clustered system's sends: a key whose partition this silo owns takes the local path; any
 * other goes to its owner as an entry (asks wait here by correlation id: asks.ts); a key with no live
 * owner (a move or a death under way) parks, in order, until a table names one (parking.ts). Entries that
 * arrive are run locally, forwarded to the owner the local table names (a move the sender had not seen
 * yet), held while their partition moves here (handoff.ts), or parked. Tells are acknowledged per hop
 * (tells.ts), so a silo that dies leaves an exact count of the tells it had not confirmed: counted as
 * lost, and an event.
 */
export class ClusterRouter<R> extends EventEmitter<ClusterEvents> {
  private readonly counts = routerCounts();
  private readonly asks = new PendingAsks(this.counts);
  private readonly tells = new TellLedger();
  private readonly parking = new ParkingLot();
  private readonly handoffs: HandOffs;
  private readonly control: ClusterControl;
  private readonly liveIds = new Set<string>();
  private readonly sweeper: ReturnType<typeof setInterval>;
  private evicted: Error | undefined;
  private closed = false;
  private readonly routes = new Map<
    string,
    Map<string, { readonly route: R; readonly method: MethodDef } | undefined>
  >();
  /** How long a message waits for a partition owner before it fails (asks: NoSiloError; tells: lost). */
  readonly parkMs: number;

  constructor(
    private readonly host: RouterHost<R>,
    readonly conn: ClusterConnection,
    opts: { parkMs?: number } = {},
  ) {
    super();
    this.parkMs = opts.parkMs ?? Math.min(host.askTimeoutMs, 10_000);
    const router = this;
    this.handoffs = new HandOffs(host, conn, this.counts, {
      route: (e) => this.route(e, undefined),
      unpark: () => this.unpark(),
      claimed: (e) => this.emit('claimed', e),
      get closed() {
        return router.closed;
      },
    });
    this.control = new ClusterControl(host, conn, this.asks, this.counts, {
      reply: (to, corr, ok, v) => this.reply(to, corr, ok, v),
      waiting: () => this.parking.size + this.handoffs.heldCount,
    });
    for (const s of conn.live()) this.liveIds.add(s.id);
    conn.on('join', (s) => {
      this.liveIds.add(s.id);
      this.emit('join', s);
      this.unpark();
    });
    conn.on('leave', (s, reason) => this.onLeave(s, reason));
    conn.on('table', (t) => {
      this.handoffs.onTable(t);
      this.handoffs.publishOwnership(t.grain);
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
      this.asks.failAll(this.evicted);
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
   * Promise, or undefined for a tell. `encoded`: the payload is already its schema bytes (a kernel's K2K
   * send, encoded and checked there).
   */
  intercept(
    def: GrainDef,
    m: MethodDef,
    key: number | string,
    payload: unknown,
    ask: boolean,
    into?: Readonly<Record<string, unknown>>,
    encoded = false,
  ): typeof LOCAL | Promise<unknown> | undefined {
    if (this.evicted) throw this.evicted;
    const grain = def.name;
    const method = m.name;
    const owner = this.parking.has(grain) ? undefined : this.ownerOf(grain, key);
    if (owner === this.self && this.hosted(grain, method) !== undefined && !this.handoffs.awaited(grain, key))
      return LOCAL;
    // Encoded here: a bad payload fails at the call (SchemaValidationError), nothing sent, as locally.
    const bytes = encoded ? (payload as Uint8Array) : encodeRequest(m, payload, grain);
    const corr = ask ? this.asks.next() : 0;
    const entry: MessageEntry = [EntryKind.Message, grain, method, key, bytes, corr, this.self, 0];
    let p: Promise<unknown> | undefined;
    if (ask) {
      this.counts.asksOut++;
      p = new Promise((resolve, reject) => {
        this.asks.add(corr, {
          resolve,
          reject,
          silo: owner ?? '',
          grain,
          method,
          deadline: performance.now() + this.host.askTimeoutMs,
          into,
          reply: m.reply,
        });
      });
    } else this.counts.tellsOut++;
    this.route(entry, undefined, owner);
    return p;
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
    const owner = known ?? (this.parking.has(grain) ? undefined : this.ownerOf(grain, entry[3]));
    if (owner === this.self) {
      if (this.handoffs.awaited(grain, entry[3])) this.handoffs.hold(entry);
      else this.runHere(entry);
      return;
    }
    if (owner === undefined || owner === '' || !this.liveIds.has(owner)) {
      this.parking.park(entry, performance.now());
      this.counts.parked++;
      return;
    }
    if (from !== undefined) {
      if (entry[7] >= MAX_HOPS) {
        this.failEntry(
          entry,
          new RinggrainError(
            'CLUSTER_ROUTING',
            `${grain}.${entry[2]}: forwarded ${MAX_HOPS} times without reaching the owner`,
            { hint: 'placement tables were changing; retry' },
          ),
        );
        return;
      }
      entry[7]++;
      this.counts.forwarded++;
    }
    if (entry[5] === 0) this.tells.sentTo(owner);
    else if (entry[6] === this.self) this.asks.sentTo(entry[5], owner);
    this.counts.messagesOut++;
    this.conn.send(owner, entry);
  }

  private runHere(entry: MessageEntry): void {
    const [, grain, method, key, bytes, corr, origin] = entry;
    const hosted = this.hosted(grain, method);
    if (hosted === undefined) {
      this.failEntry(
        entry,
        new RinggrainError(
          'UNKNOWN_GRAIN',
          `grain "${grain}" method "${method}" is not hosted by silo ${this.self}, which owns its partition`,
          { hint: 'every silo that hosts a class must register the same class (same methods)' },
        ),
      );
      return;
    }
    let r: Promise<unknown> | undefined;
    try {
      if (!(bytes instanceof Uint8Array)) throw new DecodeError(`${grain}.${method}: the value is not bytes`);
      r = this.host.sendEncoded(hosted.route, key, bytes, corr !== 0);
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
      this.host.logger.warn(
        { err: error, grain: entry[1], method: entry[2] },
        'cluster: a tell from another silo was refused here',
      );
    }
  }

  private reply(to: string, corr: number, ok: 0 | 1, v: unknown): void {
    if (to === this.self) {
      // Our own ask (parked too long, or hosted here after a move): the error object itself, typed.
      this.asks.settle(to, corr, ok, v);
      return;
    }
    this.conn.send(to, [EntryKind.Reply, corr, ok, ok ? v : errorShape(v)]);
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
          this.asks.settle(from, entry[1], entry[2], entry[3]);
          break;
        case EntryKind.Ack:
          this.counts.tellsConfirmed += this.tells.confirm(from, entry[1]);
          break;
        case EntryKind.HandOff:
          this.handoffs.onHandOff(from, entry[1], entry[2]);
          break;
        case EntryKind.Control:
          this.control.serve(from, entry[1], entry[2], entry[3]);
          break;
      }
    }
    if (tells > 0) this.conn.send(from, [EntryKind.Ack, this.tells.received(from, tells)]);
  }

  private onLeave(s: SiloInfo, reason: 'left' | 'dead'): void {
    this.liveIds.delete(s.id);
    if (reason === 'dead') {
      this.asks.siloDied(s.id);
      const lost = this.tells.died(s.id);
      if (lost > 0) {
        this.counts.lostTells += lost;
        this.host.logger.warn(
          { silo: s.id, lost },
          `cluster: ${lost} tells sent to silo ${s.id} were not confirmed before it died (lost)`,
        );
        this.emit('tellsLost', { silo: s.id, count: lost, reason: 'silo died' });
      }
      // A dead silo sends nothing more: partitions waiting for its handoff are claimed and run from the newest
      // flushed state. One that left still drains: it hands its partitions off as the new table reaches it.
      this.handoffs.died(s.id);
    } else this.tells.left(s.id, performance.now());
    this.emit('leave', s, reason);
  }

  /**
   * The epoch this silo claimed `key`'s partition under (0: not claimed here; undefined: the class is not fenced here).
   */
  claimedEpoch(grain: string, key: number | string): number | undefined {
    return this.handoffs.claimedEpoch(grain, key);
  }

  /** Parked entries retried in order; one that still has no owner keeps its place (and those behind it). */
  private unpark(): void {
    this.parking.unpark(
      (e) => {
        const owner = this.ownerOf(e[1], e[3]);
        return !(owner === undefined || owner === '' || (owner !== this.self && !this.liveIds.has(owner)));
      },
      (e) => this.route(e, undefined),
    );
  }

  private sweep(): void {
    const now = performance.now();
    this.expireParked(now);
    this.handoffs.sweep(now);
    // A silo that left drains before it closes; tells to it still unconfirmed LEFT_GRACE_MS after its leave
    // were sent as it closed: counted as lost, never silent.
    if (this.tells.leaving) {
      for (const { silo, lost } of this.tells.settleLeft(now, LEFT_GRACE_MS)) {
        if (lost <= 0) continue;
        this.counts.lostTells += lost;
        this.emit('tellsLost', { silo, count: lost, reason: 'silo left before it confirmed them' });
      }
    }
    this.asks.expire(now, this.host.askTimeoutMs);
  }

  /** Parked entries older than parkMs fail: asks with NoSiloError, tells counted as lost (an event). */
  private expireParked(now: number): void {
    let lost = 0;
    for (const { entry, waited } of this.parking.expire(now, this.parkMs)) {
      if (entry[5] !== 0) this.failEntry(entry, new NoSiloError(entry[1], Math.round(waited)));
      else lost++;
    }
    if (lost) {
      this.counts.lostTells += lost;
      this.emit('tellsLost', {
        silo: '',
        count: lost,
        reason: `no live silo owned their partition within ${this.parkMs} ms`,
      });
    }
  }

  /** Every silo's `system.metrics()`, by silo id (a client reads the cluster's counters so). */
  siloMetrics(timeoutMs?: number): Promise<Record<string, Record<string, ClassMetrics>>> {
    return this.control.siloMetrics(timeoutMs);
  }

  /** The classes' figures summed over the silos (as `system.metrics()` of one process holding them all). */
  classMetrics(timeoutMs?: number): Promise<Record<string, ClassMetrics>> {
    return this.control.classMetrics(timeoutMs);
  }

  /**
   * Every silo's `advanceTimers()`, each by its own clock (a client's `system.advanceTimers()`): the reminders fired.
   */
  advanceTimers(opts: { timeoutMs?: number } = {}): Promise<number> {
    return this.control.advanceTimers(opts);
  }

  /** Resolves when everything sent into the cluster was processed (control.ts says how); a client's system.idle(). */
  idle(opts: { timeoutMs?: number } = {}): Promise<void> {
    return this.control.idle(opts);
  }

  /** Router and engine figures. */
  metrics(): Record<string, number | string> {
    return {
      silo: this.self,
      members: this.liveIds.size,
      pendingAsks: this.asks.size,
      parkedNow: this.parking.size,
      unconfirmedTells: this.tells.unconfirmed(),
      ...this.counts,
      ...this.conn.metrics(),
    };
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
        reject(
          new RinggrainError('CLUSTER_WAIT', `cluster: condition not reached within ${timeoutMs} ms`, {
            hint: 'are the other silos running and connected to the same cluster?',
          }),
        );
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
    this.asks.failAll(
      new RinggrainError('CLUSTER_CLOSED', 'the system left the cluster before the reply came', {
        hint: 'await asks before system.shutdown()',
      }),
    );
  }
}
