import type { Cluster, ClusterConnection, JoinRequest } from '@ringgrain/core/cluster';
import { NatsConnection_ } from './connection.ts';
import { resolveOptions, type NatsClusterOptions } from './options.ts';

export type { NatsClusterOptions } from './options.ts';
export { MalformedFrameError, NatsConnectError, NatsServerMissingError } from './errors.ts';
export { encodeFrame, decodeFrame, FRAME_VERSION } from './frame.ts';
export { findNatsServer, startNatsServer, type NatsServerHandle, type NatsServerOptions } from './server.ts';

/**
 * A cluster on NATS: `new GrainSystem({ backends, cluster: natsCluster({ servers, name, user, pass }) })`.
 * Membership and placement live in JetStream key-value buckets; messages travel as msgpack frames on
 * per-member subjects. Options are checked here (a bad one throws ClusterConfigError).
 */
export function natsCluster(opts: NatsClusterOptions): Cluster {
  const o = resolveOptions(opts);
  let used = false;
  return {
    engine: 'nats',
    join(req: JoinRequest): Promise<ClusterConnection> {
      // One member per cluster object: a second system would share its id.
      if (used) return NatsConnection_.open({ ...o, id: `${o.id}-${Math.random().toString(36).slice(2, 6)}` }, req);
      used = true;
      return NatsConnection_.open(o, req);
    },
  };
}
