/**
 * The cluster tests' NATS server: each test file starts its own nats-server (127.0.0.1, a free port,
 * credentials, a temp JetStream store) and stops it. Without nats-server the tests skip with the reason
 * and the install command; under CI (CI=true or 1) that skip fails the run instead.
 */
import {
  findNatsServer,
  startNatsServer,
  type NatsServerHandle,
  type NatsServerOptions,
} from '@ringgrain/cluster-nats';

const found = findNatsServer();
const ci = process.env['CI'] === 'true' || process.env['CI'] === '1';

/** Why the cluster tests skip here (undefined: they run). Throws under CI: a skip there is a failure. */
export const natsSkip: string | undefined = (() => {
  if (!('missing' in found)) return undefined;
  const why = `nats-server is not installed (${found.missing}); install it: apt-get install -y nats-server`;
  if (ci) throw new Error(`cluster tests cannot be skipped under CI: ${why}`);
  return why;
})();

export function startServer(opts?: NatsServerOptions): Promise<NatsServerHandle> {
  return startNatsServer(opts);
}

/**
 * Cluster options for a server the tests started. deadMs is generous: a loaded 2-core machine can hold a
 * member's event loop for seconds, and a member declared dead then fails a test that is not about deaths.
 * The tests of failure detection pass their own deadMs.
 */
export function clusterOpts(server: NatsServerHandle, name: string, extra: Record<string, unknown> = {}) {
  return { servers: server.url, name, ...server.auth, heartbeatMs: 200, deadMs: 10_000, drainMs: 1500, ...extra };
}
