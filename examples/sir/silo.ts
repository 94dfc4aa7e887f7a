/**
 * One silo of the clustered SIR run (examples/sir/cluster.ts starts --silos of them): Person and Ward on
 * the CPU backend, joined to the cluster named by the environment. Prints `READY <silo id>`, then answers
 * the parent over IPC:
 *   - `{ op: 'quiet', id }`: waits until this silo's kernels are idle, then replies its counters (the
 *     parent's cluster-wide barrier compares them over consecutive rounds);
 *   - `{ op: 'stop' }`: shuts down (leaves the cluster) and exits.
 */
import { GrainSystem } from '@ringgrain/core';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { natsCluster } from '@ringgrain/cluster-nats';
import { Person, WARD_SIZE, Ward } from './grains.ts';
import { siloCounts } from './drive.ts';
import { quietLogger } from '../shared/backend.ts';

const env = (k: string): string => {
  const v = process.env[k];
  if (v === undefined) throw new Error(`examples/sir/silo.ts: ${k} is not set (examples/sir/cluster.ts starts this)`);
  return v;
};
const N = Number(env('RG_SIR_PEOPLE'));
const auth = JSON.parse(env('RG_NATS_AUTH')) as Record<string, string>;
const system = new GrainSystem({
  backends: { cpu: new CpuBackend({ threads: Number(env('RG_SIR_THREADS')), maxSpinMs: 0.05 }) },
  logger: quietLogger(),
  handleSignals: false,
  cluster: natsCluster({
    servers: env('RG_NATS_URL'),
    name: env('RG_CLUSTER'),
    ...auth,
    ...(JSON.parse(process.env['RG_SIR_CLUSTER_OPTS'] ?? '{}') as Record<string, number>),
  }),
});
const ringCapacity = 1 << Number(env('RG_SIR_RING_LOG2'));
system.register(Person, { placement: 'cpu', maxActors: Math.max(N, 1024), ringCapacity });
system.register(Ward, { placement: 'cpu', maxActors: Math.max(Math.ceil(N / WARD_SIZE), 1024), ringCapacity: 1 << 14 });
let tellErrors = 0;
system.on('tellError', (e) => {
  if (tellErrors++ < 5)
    console.error(`silo ${system.cluster?.self}: tell failed: ${e.grain}.${e.method}: ${e.error.message}`);
});
await system.start();

type Msg = { op: 'quiet'; id: number } | { op: 'stop' };
process.on('message', (m: Msg) => {
  if (m.op === 'stop') {
    void system.shutdown().then(() => process.exit(0));
    return;
  }
  void siloCounts(system, tellErrors).then(
    (c) => process.send!({ id: m.id, ...c }),
    (e: Error) => process.send!({ id: m.id, silo: system.cluster!.self, error: e.message }),
  );
});
process.stdout.write(`READY ${system.cluster!.self}\n`);
