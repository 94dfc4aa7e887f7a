/**
 * The conformance cases (test/conformance/cases.ts) in a `cluster` lane: three silo processes (CPU backend,
 * one pool thread each) host the fixtures' classes, and the test's system is a client of the cluster, so
 * every ask and tell crosses processes through NATS. A case that cannot hold here is skipped with its
 * reason (CLUSTER_SKIPS); every other case must pass.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { GrainSystem } from '@ringgrain/core';
import { natsCluster, type NatsServerHandle } from '@ringgrain/cluster-nats';
import { cases } from '../conformance/cases.ts';
import { natsSkip, startServer } from './nats.ts';
import { spawnSilo, type SiloProcess } from './procs.ts';

const CLIENT = 'the test is a client of the cluster: it hosts no kernel, so';
const K2K = 'K2K sends (ctx.send/forward) stay inside the sending silo (docs/cluster.md, limits): across silos they would activate the target key a second time';
const ISOLATED = 'needs a system of its own (kernel options, lifecycle or exact counters on its kernels); the lane runs the shared cases against silo processes started once';
export const CLUSTER_SKIPS: Readonly<Record<string, string>> = {
  'ctx.now() is the injected clock': `${CLIENT} the injected clock is this process's; handlers run on the silos' own clocks`,
  'FIFO per sender→actor under concurrent K2K and host senders, one turn at a time per actor': K2K,
  'system.idle() resolves once host messages and the K2K chains they caused are all processed': `${K2K}; and ${CLIENT} system.idle() balances only this process's kernels`,
  'K2K chain A→B→C with ctx.forward: the reply to the asker comes from C': K2K,
  'fan-out / fan-in across grain classes': K2K,
  'small integer kinds: stored by a host tell and by a K2K send, read back; forwarded to the actor that replies': K2K,
  'small integer kinds out of range: requests fail with SchemaValidationError naming the field (nothing sent); replies out of range fail the ask': `${CLIENT} system.kernel(Small) (its counters) is in the silo processes`,
  'small integer kinds: tellMany and askMany columns (typed arrays of any kind that fits skip the row check; a value out of range names column and row)': `${CLIENT} system.kernel(Small) (its counters) is in the silo processes`,
  "ask with `into`: the reply's numeric arrays are the caller's own (or views of their first n elements); a wrong kind throws ReplyTargetError at the call, one too short rejects the ask with it": `${CLIENT} it reads system.metrics() of the class's kernel, which runs in the silo processes`,
  '10,000+ distinct actors in one kernel': `${CLIENT} it reads the kernel's activation count in system.metrics(), which lives in the silo processes`,
  'handler errors reject the ask with the handler message; the actor keeps its state and runs': `${CLIENT} it reads the kernel's handlerErrors in system.metrics(), which lives in the silo processes`,
  'schema violations fail with SchemaValidationError naming the zod path; nothing is sent': `${CLIENT} it reads system.kernel(Numbers) counters to show nothing was sent (the sender-side SchemaValidationError itself is tested in test/cluster/messaging.test.ts)`,
  'unknown grain (UnknownGrainError) and unknown method (UnknownMethodError, and refused by the kernel)': 'in a cluster a class not registered here is reached through the cluster (client mode): an unknown class fails with NoSiloError once no silo hosts it within parkMs, not UnknownGrainError at the call; it also injects a raw slot into a local kernel',
};

describe.skipIf(natsSkip !== undefined)(`conformance: cluster lane${natsSkip ? ` (skipped: ${natsSkip})` : ''}`, () => {
  let server: NatsServerHandle;
  let silos: SiloProcess[] = [];
  let client: GrainSystem;
  const clock = { now: 1_000_000 };

  beforeAll(async () => {
    server = await startServer();
    silos = await Promise.all([0, 1, 2].map(() => spawnSilo(server, 'conf', {}, 'fixtures')));
    client = new GrainSystem({ backends: {}, handleSignals: false, logLevel: 'silent', askTimeoutMs: 10_000, clock: () => clock.now, cluster: natsCluster({ servers: server.url, name: 'conf', ...server.auth }) });
    await client.start();
    await client.cluster!.waitFor(() => client.cluster!.settled(3), 20_000);
  }, 90_000);
  afterAll(async () => {
    await client?.shutdown();
    await Promise.all(silos.map((s) => s.kill('SIGKILL')));
    await server?.stop();
  });

  for (const c of cases) {
    const reason = c.isolated ? (CLUSTER_SKIPS[c.name] ?? ISOLATED) : CLUSTER_SKIPS[c.name];
    it.skipIf(reason !== undefined)(reason ? `${c.name} (skipped: ${reason})` : c.name, async () => {
      await c.run({ system: client, backend: 'cpu', clock });
    });
  }
});
