/**
 * The conformance cases (test/conformance/cases.ts) in a `cluster` lane: three silo processes (CPU backend,
 * one pool thread each) host the fixtures' classes, and the test's system is a client of the cluster, so
 * every ask and tell crosses processes through NATS (and K2K sends cross silos through their hosts). A case
 * that cannot hold here is skipped with its reason (CLUSTER_SKIPS); every other case must pass, including
 * the cases marked isolated that need only kernel options the silos are started with (LANE_OPTIONS) and
 * keys of their own (RUN_ISOLATED).
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { GrainSystem } from '@ringgrain/core';
import { natsCluster, type NatsServerHandle } from '@ringgrain/cluster-nats';
import { cases } from '../conformance/cases.ts';
import { natsSkip, startServer } from './nats.ts';
import { spawnSilo, type SiloProcess } from './procs.ts';

const CLIENT = 'the test is a client of the cluster: it hosts no kernel, so';
const LIFECYCLE = `${CLIENT} it cannot drive a kernel's lifecycle (system.kernel(...).deactivate/activate/terminate) or read its counters: the kernels run in the silo processes`;
const CLOCK = `${CLIENT} the injected clock is this process's; handlers, timers and reminders run on the silos' own clocks`;
const STORE = 'runs on a store with a system factory per case (persistence.ts: restarts, conflicts made by a second writer); in a cluster, storage is tested by test/cluster/handoff, fencing and failover-pg';
/** Kernel options the silo processes register the fixtures with, for the isolated cases the lane runs. */
const LANE_OPTIONS: Readonly<Record<string, Record<string, number>>> = { Small: { slotSize: 512 }, Numbers: { ringCapacity: 64 } };
/** Isolated cases that hold on the shared silos: their keys are their own and their options are in LANE_OPTIONS. */
const RUN_ISOLATED = new Set([
  'byte arrays (t.vec(t.u8, 400)) travel as msgpack bin of their bytes: 0, 255, 256 and 400 bytes, as Uint8Array or number[]',
  'many actors interleaved: per-actor FIFO and one turn at a time hold for tells and asks in bursts',
  'askMany: N asks from columns, replies as columns in row order; a failed row rejects with AskManyError naming it',
  'askMany of many times the ring: the rows that find it full wait in order and every row is answered',
]);
export const CLUSTER_SKIPS: Readonly<Record<string, string>> = {
  'ctx.now() is the injected clock': CLOCK,
  'system.idle() resolves once host messages and the K2K chains they caused are all processed': `${CLIENT} system.idle() balances only this process's kernels (none), not the silos' K2K chains`,
  'small integer kinds out of range: requests fail with SchemaValidationError naming the field (nothing sent); replies out of range fail the ask': `${CLIENT} system.kernel(Small) (its counters) is in the silo processes`,
  'small integer kinds: tellMany and askMany columns (typed arrays of any kind that fits skip the row check; a value out of range names column and row)': `${CLIENT} system.kernel(Small) (its counters) is in the silo processes`,
  "ask with `into`: the reply's numeric arrays are the caller's own (or views of their first n elements); a wrong kind throws ReplyTargetError at the call, one too short rejects the ask with it": `${CLIENT} it reads system.metrics() of the class's kernel, which runs in the silo processes`,
  '10,000+ distinct actors in one kernel': `${CLIENT} it reads the kernel's activation count in system.metrics(), which lives in the silo processes`,
  'handler errors reject the ask with the handler message; the actor keeps its state and runs': `${CLIENT} it reads the kernel's handlerErrors in system.metrics(), which lives in the silo processes (handler errors across silos: test/cluster/messaging.test.ts)`,
  'schema violations fail with SchemaValidationError naming the zod path; nothing is sent': `${CLIENT} it reads system.kernel(Numbers) counters to show nothing was sent (the sender-side SchemaValidationError itself is tested in test/cluster/messaging.test.ts)`,
  'unknown grain (UnknownGrainError) and unknown method (UnknownMethodError, and refused by the kernel)': 'in a cluster a class not registered here is reached through the cluster (client mode): an unknown class fails with NoSiloError once no silo hosts it within parkMs, not UnknownGrainError at the call; it also injects a raw slot into a local kernel',
  'tellMany: N tells from columns, in order, counted; a bad column fails with the column and row and sends nothing': `${CLIENT} it reads system.metrics()['Numbers'].sent, which lives in the silo processes (tellMany across silos: test/cluster/messaging.test.ts and the cases run here)`,
  'a K2K burst larger than every queue of the target kernel arrives whole and in order': `${CLIENT} it reads k2kSent, k2kReceived and overflow in system.metrics(), which live in the silo processes`,
  'K2K chain A→B→C with ctx.forward: the reply to the asker comes from C': `${CLIENT} it ends by reading replied and k2kReceived in system.metrics(), which live in the silo processes (its chain runs here up to that point: the forwards cross silos; test/cluster/k2k.test.ts checks cross-silo forwards)`,
  'fan-out / fan-in across grain classes': `${CLIENT} it reads the activation count in system.metrics(), which lives in the silo processes (cross-silo K2K tells: test/cluster/k2k.test.ts)`,
  'oversize payloads fail with PayloadTooLargeError, never truncated': `${CLIENT} it has no slot to check a payload against: the owning silo refuses it (its error comes back as data), and the case reads system.kernel(Numbers) counters`,
};

/** Why an isolated case is not run here (undefined: it runs). */
function isolatedReason(name: string): string | undefined {
  if (RUN_ISOLATED.has(name)) return undefined;
  if (CLUSTER_SKIPS[name]) return CLUSTER_SKIPS[name];
  if (name.endsWith('[store]')) return STORE;
  if (name.startsWith('timers:')) return CLOCK;
  if (/lifecycle|terminate|deactivated|relaunch|full queue/.test(name)) return LIFECYCLE;
  return 'needs a system of its own (kernel options or exact counters on its kernels); the lane runs the shared cases against silo processes started once';
}

describe.skipIf(natsSkip !== undefined)(`conformance: cluster lane${natsSkip ? ` (skipped: ${natsSkip})` : ''}`, () => {
  let server: NatsServerHandle;
  let silos: SiloProcess[] = [];
  let client: GrainSystem;
  const clock = { now: 1_000_000 };

  beforeAll(async () => {
    server = await startServer();
    silos = await Promise.all([0, 1, 2].map(() => spawnSilo(server, 'conf', {}, 'fixtures', { RG_FIXTURE_OPTS: JSON.stringify(LANE_OPTIONS) })));
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
    const reason = c.isolated ? isolatedReason(c.name) : CLUSTER_SKIPS[c.name];
    it.skipIf(reason !== undefined)(reason ? `${c.name} (skipped: ${reason})` : c.name, async () => {
      await c.run({ system: client, backend: 'cpu', clock });
    });
  }
});
