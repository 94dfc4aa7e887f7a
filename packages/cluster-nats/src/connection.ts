import { EventEmitter } from 'eventemitter3';
import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import type { Logger } from 'pino';
import type {
  ClusterConnection,
  ClusterConnectionEvents,
  Entry,
  JoinRequest,
  PartitionTable,
  SiloInfo,
} from '@ringgrain/core/cluster';
import { decodeFrame, encodeFrame } from './frame.ts';
import { MalformedFrameError, NatsConnectError } from './errors.ts';
import { Membership } from './membership.ts';
import { Placement } from './placement.ts';
import type { ResolvedOptions } from './options.ts';

/**
 * One member's connection: membership and placement in KV buckets, frames on per-member subjects
 * (`rg.<cluster>.m.<id>`). Entries for a destination queue in order and leave as one frame per
 * event-loop turn (setImmediate; or every frameEntries), so a loop of sends becomes a few publishes. Not per
 * microtask: a CPU worker posts each cross-silo K2K send as its own message, and each message callback ends
 * in a microtask checkpoint, so that made one frame and one socket write per send (SIR across three silos,
 * examples/sir/cluster.ts, ran 2-2.5x slower). NATS keeps one connection's publishes in order, so FIFO per
 * sender → destination holds end to end.
 */
export class NatsConnection_ extends EventEmitter<ClusterConnectionEvents> implements ClusterConnection {
  readonly self: string;
  private readonly queues = new Map<string, Entry[]>();
  private flushScheduled = false;
  private sub: Subscription | undefined;
  private readonly counts = { framesOut: 0, framesIn: 0, bytesOut: 0, bytesIn: 0, malformedFrames: 0 };
  private closed = false;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly o: ResolvedOptions,
    private readonly membership: Membership,
    private readonly placement: Placement,
    private readonly logger: Logger,
  ) {
    super();
    this.self = o.id;
  }

  static async open(o: ResolvedOptions, req: JoinRequest): Promise<NatsConnection_> {
    const logger = req.logger.child({ cluster: o.name, silo: o.id });
    let nc: NatsConnection;
    try {
      nc = await connect({
        servers: o.servers,
        name: `ringgrain-${o.name}-${o.id}`,
        maxReconnectAttempts: -1,
        ...o.connect,
      });
    } catch (e) {
      throw new NatsConnectError(o.servers.join(','), (e as Error).message, { cause: e });
    }
    try {
      const kvm = new Kvm(nc);
      const members = await kvm.create(`rg_${o.name}_members`, { history: 1 });
      const tables = await kvm.create(`rg_${o.name}_placement`, { history: 1 });
      const self: SiloInfo = { id: o.id, grains: req.grains, ...(req.client ? { client: true } : {}) };
      const membership = new Membership(members, self, o.heartbeatMs, o.deadMs, logger);
      const placement = new Placement(
        tables,
        o.id,
        o.partitions,
        () => membership.live(),
        logger,
        () => membership.current(),
      );
      const c = new NatsConnection_(nc, o, membership, placement, logger);
      c.sub = nc.subscribe(c.subject(o.id), {
        callback: (err, msg) => (err ? logger.warn({ err }, 'cluster: subscription error') : c.onFrame(msg.data)),
      });
      // Frames still queued (they leave once per event-loop turn) go out before the router hears of a
      // membership or table change: what it sent before the change leaves as it would have without the wait.
      membership.on('join', (s) => {
        c.flush();
        c.emit('join', s);
        placement.reconcile();
      });
      membership.on('leave', (s, reason) => {
        c.flush();
        c.queues.delete(s.id);
        c.emit('leave', s, reason);
        placement.reconcile();
      });
      membership.on('evicted', (reason) => {
        c.flush();
        c.emit('evicted', { reason });
      });
      membership.on('current', () => placement.reconcile());
      placement.on('table', (t) => {
        c.flush();
        c.emit('table', t);
      });
      return c;
    } catch (e) {
      await nc.close().catch(() => {});
      throw e instanceof NatsConnectError
        ? e
        : new NatsConnectError(o.servers.join(','), `JetStream key-value: ${(e as Error).message}`, { cause: e });
    }
  }

  async start(): Promise<void> {
    try {
      // Tables first: none can name this member before its record exists, so the watch sees every move to it.
      await this.placement.start();
      await this.membership.start();
      this.placement.reconcile();
    } catch (e) {
      await this.nc.close().catch(() => {});
      throw new NatsConnectError(this.o.servers.join(','), `JetStream key-value: ${(e as Error).message}`, {
        cause: e,
      });
    }
  }

  private subject(id: string): string {
    return `rg.${this.o.name}.m.${id}`;
  }

  live(): readonly SiloInfo[] {
    return this.membership.live();
  }

  table(grain: string): PartitionTable | undefined {
    return this.placement.table(grain);
  }

  send(to: string, entry: Entry): void {
    if (this.closed) return;
    let q = this.queues.get(to);
    if (!q) this.queues.set(to, (q = []));
    q.push(entry);
    if (q.length >= this.o.frameEntries) this.flushTo(to, q);
    else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    for (const [to, q] of this.queues) if (q.length) this.flushTo(to, q);
  };

  private flushTo(to: string, q: Entry[]): void {
    const entries = q.splice(0, q.length);
    this.publish(to, entries);
  }

  /** One frame, split in halves while it is over the server's max_payload. */
  private publish(to: string, entries: readonly Entry[]): void {
    const data = encodeFrame(this.self, entries);
    if (data.length > this.nc.info!.max_payload && entries.length > 1) {
      const mid = entries.length >> 1;
      this.publish(to, entries.slice(0, mid));
      this.publish(to, entries.slice(mid));
      return;
    }
    this.counts.framesOut++;
    this.counts.bytesOut += data.length;
    this.nc.publish(this.subject(to), data);
  }

  private onFrame(data: Uint8Array): void {
    this.counts.framesIn++;
    this.counts.bytesIn += data.length;
    let f: { from: string; entries: unknown[] };
    try {
      f = decodeFrame(data);
    } catch (e) {
      this.counts.malformedFrames++;
      const error = e instanceof MalformedFrameError ? e : new MalformedFrameError(String(e));
      this.logger.warn({ err: error }, 'cluster: a malformed frame was refused');
      this.emit('frameError', { from: undefined, error });
      return;
    }
    this.emit('entries', f.from, f.entries);
  }

  metrics(): Record<string, number> {
    return { ...this.counts };
  }

  async close(opts: { drainMs?: number } = {}): Promise<void> {
    if (this.closed) return;
    const drainMs = opts.drainMs ?? this.o.drainMs;
    await this.membership.leave();
    // Serve (and forward) until no table names this silo, or drainMs.
    const start = performance.now();
    while (this.placement.names(this.self) && performance.now() - start < drainMs)
      await new Promise((r) => setTimeout(r, 20));
    // Senders switch to the new owners as the same tables reach them: keep forwarding a little longer.
    await new Promise((r) => setTimeout(r, Math.min(250, drainMs)));
    this.flush();
    await this.nc.flush().catch(() => {});
    this.closed = true;
    await this.membership.stop();
    await this.placement.stop();
    this.sub?.unsubscribe();
    await this.nc.drain().catch(() => {});
  }
}
