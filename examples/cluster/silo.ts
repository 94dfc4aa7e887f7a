/**
 * One silo of the cluster example (examples/cluster/main.ts starts three): the bank's Account class on
 * the CPU backend, joined to the cluster named by the environment. Prints READY, then on SIGTERM its
 * figures (turns run, messages from other members) as one FIGURES line, leaves the cluster and exits.
 */
import { GrainSystem } from '@ringgrain/core';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { natsCluster } from '@ringgrain/cluster-nats';
import { Account } from '../bank/grains.ts';
import { quietLogger } from '../shared/backend.ts';

const auth = JSON.parse(process.env['RG_NATS_AUTH'] ?? '{}') as Record<string, string>;
const system = new GrainSystem({
  backends: { cpu: new CpuBackend({ threads: 1 }) },
  logger: quietLogger(),
  handleSignals: false,
  cluster: natsCluster({ servers: process.env['RG_NATS_URL']!, name: process.env['RG_CLUSTER']!, ...auth }),
});
system.register(Account, { placement: 'cpu' });
await system.start();
process.stdout.write(`READY ${system.cluster!.self}\n`);
process.once('SIGTERM', () => {
  const c = system.cluster!.metrics();
  const k = system.metrics()['Account']!;
  process.stdout.write(
    'FIGURES ' +
      JSON.stringify({
        silo: c['silo'],
        turns: k.processed,
        fromOthers: c['messagesIn'],
        framesIn: c['framesIn'],
        framesOut: c['framesOut'],
        forwarded: c['forwarded'],
      }) +
      '\n',
  );
  void system.shutdown().then(() => process.exit(0));
});
