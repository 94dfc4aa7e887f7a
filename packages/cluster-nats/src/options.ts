import { ClusterConfigError } from '@ringgrain/core/cluster';
import type { NodeConnectionOptions } from '@nats-io/transport-node';

export interface NatsClusterOptions {
  /** NATS server URL(s), e.g. 'nats://127.0.0.1:4222'. */
  servers: string | readonly string[];
  /** The cluster's name: its subjects are `rg.<name>.…` and its KV buckets `rg_<name>_…` (letters, digits, _ and -). */
  name: string;
  user?: string;
  pass?: string;
  token?: string;
  /** Any other NATS connection option (tls, authenticator for nkeys/JWT, ...), passed to connect(). */
  connect?: Partial<NodeConnectionOptions>;
  /** This silo's id (letters, digits, _ and -); default: time-ordered and random. */
  id?: string;
  /** How often a member writes its heartbeat (default 500 ms). */
  heartbeatMs?: number;
  /** A member whose heartbeat was not seen for this long is declared dead by the survivors (default 3000 ms). */
  deadMs?: number;
  /** Virtual partitions per class (default 256): the unit placement moves. */
  partitions?: number;
  /** Entries per frame at most (default 1024); a frame also stays under the server's max_payload. */
  frameEntries?: number;
  /** On leave, how long to wait for the tables to stop naming this silo, serving meanwhile (default 3000 ms). */
  drainMs?: number;
}

export interface ResolvedOptions {
  servers: string[];
  name: string;
  id: string;
  heartbeatMs: number;
  deadMs: number;
  partitions: number;
  frameEntries: number;
  drainMs: number;
  connect: Partial<NodeConnectionOptions>;
}

const NAME = /^[A-Za-z0-9_-]{1,48}$/;

function positive(name: string, v: number | undefined, dflt: number, min = 1): number {
  if (v === undefined) return dflt;
  if (!Number.isFinite(v) || v < min)
    throw new ClusterConfigError(`natsCluster: ${name} must be a number ≥ ${min}, got ${v}`, {
      hint: `leave it out for ${dflt}`,
    });
  return v;
}

export function resolveOptions(o: NatsClusterOptions): ResolvedOptions {
  if (!o || (typeof o.servers !== 'string' && !Array.isArray(o.servers)))
    throw new ClusterConfigError('natsCluster: servers is required (a URL or a list of URLs)', {
      hint: "e.g. natsCluster({ servers: 'nats://127.0.0.1:4222', name: 'bank' })",
    });
  if (typeof o.name !== 'string' || !NAME.test(o.name))
    throw new ClusterConfigError(`natsCluster: name ${JSON.stringify(o.name)} must be 1-48 letters, digits, _ or -`, {
      hint: 'it names the subjects and buckets of the cluster',
    });
  const id = o.id ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
  if (!NAME.test(id))
    throw new ClusterConfigError(`natsCluster: id ${JSON.stringify(id)} must be 1-48 letters, digits, _ or -`);
  const heartbeatMs = positive('heartbeatMs', o.heartbeatMs, 500, 10);
  const deadMs = positive('deadMs', o.deadMs, 3000, 50);
  if (deadMs < 2 * heartbeatMs)
    throw new ClusterConfigError(
      `natsCluster: deadMs (${deadMs}) must be at least twice heartbeatMs (${heartbeatMs})`,
      { hint: 'a member would be declared dead between two heartbeats' },
    );
  const partitions = positive('partitions', o.partitions, 256);
  if (!Number.isInteger(partitions) || partitions > 65_536)
    throw new ClusterConfigError(`natsCluster: partitions must be an integer 1..65536, got ${partitions}`);
  const connect: Partial<NodeConnectionOptions> = { ...o.connect };
  if (o.user !== undefined) connect.user = o.user;
  if (o.pass !== undefined) connect.pass = o.pass;
  if (o.token !== undefined) connect.token = o.token;
  return {
    servers: typeof o.servers === 'string' ? [o.servers] : [...o.servers],
    name: o.name,
    id,
    heartbeatMs,
    deadMs,
    partitions,
    frameEntries: positive('frameEntries', o.frameEntries, 1024),
    drainMs: positive('drainMs', o.drainMs, 3000, 0),
    connect,
  };
}
