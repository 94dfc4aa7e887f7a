import type { Logger } from 'pino';
import type { GrainDef } from '../grain.ts';
import { ClusterRouter, type RouterHost } from './router.ts';
import type { Cluster } from './types.ts';

/** A class this process does not host but sends to through the cluster (client mode): no kernel, no storage. */
const remote = new WeakMap<GrainDef, { readonly def: GrainDef; readonly storage: { readonly storage?: undefined } }>();
export function remoteRegistration(def: GrainDef): {
  readonly def: GrainDef;
  readonly storage: { readonly storage?: undefined };
} {
  let r = remote.get(def);
  if (!r) remote.set(def, (r = { def, storage: {} }));
  return r;
}

/**
 * Joins the cluster after the kernels are up: announces the hosted classes (name → backend), then waits
 * (bounded) until a placement table exists for each, so the first sends route without parking.
 */
export async function joinCluster<R>(
  cluster: Cluster,
  host: RouterHost<R>,
  grains: Record<string, string>,
  logger: Logger,
): Promise<ClusterRouter<R>> {
  const client = Object.keys(grains).length === 0;
  const conn = await cluster.join({ grains, client, logger });
  const router = new ClusterRouter(host, conn);
  await conn.start();
  const names = Object.keys(grains);
  try {
    await router.waitFor(() => names.every((g) => conn.table(g)?.owners.includes(conn.self)), 10_000);
  } catch {
    logger.warn(
      { grains: names },
      'cluster: no placement table names this silo yet (10 s); messages park until one does',
    );
  }
  logger.info(
    { silo: conn.self, engine: cluster.engine, grains, client },
    `cluster: joined as ${client ? 'client' : 'silo'} ${conn.self}`,
  );
  return router;
}
