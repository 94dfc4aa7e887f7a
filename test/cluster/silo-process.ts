/**
 * One silo as its own process (the cluster tests spawn it with tsx): a CPU backend with one pool thread
 * hosting Counter (or, with RG_GRAINS=fixtures, the conformance fixtures' classes), joined to the cluster named by the environment. Prints `READY <silo id>` once it
 * serves; SIGTERM leaves the cluster and exits (SIGKILL is the failover tests' death).
 */
import { GrainSystem } from '@ringgrain/core';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { natsCluster } from '@ringgrain/cluster-nats';
import { Counter } from './grains.ts';

const env = (k: string) => {
  const v = process.env[k];
  if (v === undefined) throw new Error(`silo-process: ${k} is not set`);
  return v;
};
const auth = JSON.parse(env('RG_NATS_AUTH')) as Record<string, string>;
const extra = JSON.parse(process.env['RG_CLUSTER_OPTS'] ?? '{}') as Record<string, number>;
const system = new GrainSystem({
  backends: { cpu: new CpuBackend({ threads: 1, maxSpinMs: 0.05 }) },
  logLevel: 'warn',
  cluster: natsCluster({ servers: env('RG_NATS_URL'), name: env('RG_CLUSTER'), ...auth, ...extra }),
});
if (process.env['RG_GRAINS'] === 'fixtures') {
  // The conformance fixtures' shared classes (test/cluster/conformance.test.ts).
  const f = await import('../fixtures/grains.ts');
  for (const cls of [f.Numbers, f.Seq, f.Sender, f.Hop1, f.Hop2, f.Hop3, f.Coordinator, f.Leaf, f.Named, f.Small]) system.register(cls, { placement: 'cpu' });
} else system.register(Counter, { placement: 'cpu' });
await system.start();
// Declared dead by the others (its heartbeats stopped): it must not serve on; exit so a supervisor restarts it.
system.cluster!.on('evicted', () => {
  process.stdout.write('EVICTED\n');
  process.exit(3);
});
process.stdout.write(`READY ${system.cluster!.self}\n`);
