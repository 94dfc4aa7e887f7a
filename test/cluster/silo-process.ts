/**
 * One silo as its own process (the cluster tests spawn it with tsx): a CPU backend with one pool thread
 * hosting Counter (or, with RG_GRAINS=fixtures, the conformance fixtures' classes; with RG_PG_URL, Counter
 * with a PostgreSQL store), joined to the cluster named by the environment. Prints `READY <silo id>` once it
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
  // RG_FIXTURE_OPTS: kernel options per class name (the lane's cases that need them: a slot size, a ring).
  const kernelOpts = JSON.parse(process.env['RG_FIXTURE_OPTS'] ?? '{}') as Record<string, Record<string, number>>;
  for (const cls of [f.Numbers, f.Seq, f.Sender, f.Hop1, f.Hop2, f.Hop3, f.Coordinator, f.Leaf, f.Named, f.Small])
    system.register(cls, { placement: 'cpu', ...kernelOpts[cls.grain.name] });
} else if (process.env['RG_PG_URL']) {
  // A shared PostgreSQL store (the fencing and failover tests); RG_PG_SCHEMA: its schema; RG_FLUSH_MS: the flush timer.
  const { PostgresStore } = await import('@ringgrain/postgres-store');
  const storage = new PostgresStore({
    connection: process.env['RG_PG_URL'],
    ...(process.env['RG_PG_SCHEMA'] ? { schema: process.env['RG_PG_SCHEMA'] } : {}),
  });
  system.register(Counter, {
    placement: 'cpu',
    storage,
    flushIntervalMs: Number(process.env['RG_FLUSH_MS'] ?? 60_000),
  });
} else system.register(Counter, { placement: 'cpu' });
const storageErrors: Record<string, number> = {};
system.on('storageError', (e) => {
  const code = (e.error as { code?: string }).code ?? 'ERROR';
  storageErrors[code] = (storageErrors[code] ?? 0) + 1;
});
await system.start();
// Declared dead by the others (its heartbeats stopped): it must not serve on; exit so a supervisor restarts it.
// A silo with storage tries to write what it holds first: a fenced store refuses it (another silo claimed its
// partitions), and the line reports what happened: EVICTED {"storage": …, "storageErrors": …}.
system.cluster!.on('evicted', () => {
  void (async () => {
    if (process.env['RG_PG_URL']) await system.flush().catch(() => undefined);
    const storage = (system.metrics() as Record<string, { storage?: unknown }>)['Counter']?.storage;
    process.stdout.write(`EVICTED ${JSON.stringify({ storage, storageErrors })}\n`);
    process.exit(3);
  })();
});
process.stdout.write(`READY ${system.cluster!.self}\n`);
