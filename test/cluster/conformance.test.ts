/**
 * The conformance cases (test/conformance/cases.ts) in a `cluster` lane: three silo processes (CPU backend,
 * one pool thread each) host the fixtures' classes, and the test's system is a client of the cluster, so
 * every ask and tell crosses processes through NATS (and K2K sends cross silos through their hosts). A case
 * that cannot hold here is skipped with its reason (CLUSTER_SKIPS); every other case must pass, including
 * the cases marked isolated that need only kernel options the silos are started with (LANE_OPTIONS) and
 * keys of their own (RUN_ISOLATED), and those that need fresh kernels, run last on silos of their own
 * (RUN_FRESH). The kernels' counters are read from the silos (system.cluster.classMetrics()), and every
 * case ends with the client's idle() (the cluster's) and the counters balanced over the silos. The [store]
 * cases need a system factory on one store: their systems are silos in this process (inline backend) that join
 * the lane's cluster (their class claimed in the store partition by partition, every write fenced).
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GrainSystem } from '@ringgrain/core';
import type { StateStore } from '@ringgrain/core/types';
import { InlineBackend } from '@ringgrain/inline-backend';
import { LmdbStore } from '@ringgrain/lmdb-store';
import type { StoreFixture } from '../conformance/persistence.ts';
import { natsCluster, type NatsServerHandle } from '@ringgrain/cluster-nats';
import { cases, expectBalanced } from '../conformance/cases.ts';
import { natsSkip, startServer } from './nats.ts';
import { spawnSilo, type SiloProcess } from './procs.ts';

const CLIENT = 'the test is a client of the cluster: it hosts no kernel, so';
/** Each silo runs its own kernel of a class; a client has none to drive (system.kernel(...) is a local kernel). */
const KERNEL = (what: string) =>
  `${CLIENT} ${what}: in a cluster each silo process runs its own kernel of the class (a key's partition ` +
  `picks the silo), and its lifecycle is that silo's (system.kernel(...).deactivate/activate/terminate ` +
  'there); no remote kernel control exists';
const FULL_QUEUE = (what: string) =>
  KERNEL(`it fills a ringCapacity-4 Seq ring by deactivating system.kernel(Seq)${what}`);
const CLOCK_TELL_ERROR =
  "it counts tellError events of failing ticks on the test's system: a tick runs on the silo that hosts " +
  'the actor and its failure is a tellError there (a tick has no sender to report to); its timer API, bad ' +
  'arguments and counts are covered by the other timer cases, which run here';
const LIFECYCLE: Readonly<Record<string, string>> = {
  'lifecycle: every valid transition on a live kernel, each emitting an event': KERNEL(
    'it steps system.kernel(Numbers) through its transitions and counts their events',
  ),
  'lifecycle: every invalid transition is rejected with InvalidTransitionError and changes nothing': KERNEL(
    'it calls invalid transitions on system.kernel(Numbers)',
  ),
  'messages sent while deactivated are processed after activate, in order': KERNEL(
    'it deactivates and activates system.kernel(Seq) around its sends',
  ),
  'terminate with pending asks rejects them with KernelTerminatedError': KERNEL(
    'it terminates system.kernel(Numbers) under pending asks',
  ),
  'ask or tell to a terminated kernel fails with KernelTerminatedError': KERNEL(
    'it terminates system.kernel(Numbers) and sends to it',
  ),
  'relaunch after terminate works and state starts fresh': KERNEL(
    'it terminates and relaunches system.kernel(Numbers) and the Hop kernels',
  ),
  'full queue: senders wait (backlog) and complete after activate, in order, nothing dropped':
    FULL_QUEUE(' and activating it again'),
  'full queue: QueueFullError after queueFullTimeoutMs; what was queued is processed, nothing silently dropped':
    FULL_QUEUE(
      ', and its queueFullTimeoutMs (60) is a system option of the process whose ring is full: the owning ' +
        'silo, not the client',
    ),
  ['full queue: a send that waits is still checked at the call (a bad payload throws, nothing queued is lost); ' +
    'tells cancelled by QueueFullError are tellError events and counted']:
    FULL_QUEUE(
      ', and its queueFullTimeoutMs (60) and the tellError events of cancelled tells belong to the owning ' +
        'silo, not the client',
    ),
};
/** Kernel options the silo processes register the fixtures with, for the isolated cases the lane runs. */
const LANE_OPTIONS: Readonly<Record<string, Record<string, number>>> = {
  Small: { slotSize: 512 },
  Numbers: { ringCapacity: 64 },
};
/** Isolated cases that hold on the shared silos: their keys are their own and their options are in LANE_OPTIONS. */
const RUN_ISOLATED = new Set([
  'byte arrays (t.vec(t.u8, 400)) travel as msgpack bin of their bytes: 0, 255, 256 and 400 bytes, as ' +
    'Uint8Array or number[]',
  'many actors interleaved: per-actor FIFO and one turn at a time hold for tells and asks in bursts',
  'askMany: N asks from columns, replies as columns in row order; a failed row rejects with AskManyError naming it',
  'askMany of many times the ring: the rows that find it full wait in order and every row is answered',
  // The client's system.idle() waits for the cluster (core cluster/control.ts); its Leaf keys 0..399 are the
  // shared fan-out case's, which runs before it.
  'system.idle() resolves once host messages and the K2K chains they caused are all processed',
]);
export const CLUSTER_SKIPS: Readonly<Record<string, string>> = {
  'handler errors reject the ask with the handler message; the actor keeps its state and runs':
    `a failing tell's tellError event is emitted by the silo whose kernel ran the turn: the turn's failure ` +
    `reply carries no origin silo (a host tell's slot names the host, not which member sent it), so the ` +
    'client never sees it; the ask half (HandlerError across silos) is test/cluster/messaging.test.ts',
  'unknown grain (UnknownGrainError) and unknown method (UnknownMethodError, and refused by the kernel)':
    'in a cluster a class not registered here is reached through the cluster (client mode): an unknown ' +
    'class fails with NoSiloError once no silo hosts it within parkMs, not UnknownGrainError at the call; ' +
    'it also injects a raw slot into a local kernel',
  'a K2K burst larger than every queue of the target kernel arrives whole and in order':
    'its counts need both classes on one silo: Sender 1 and Seq 3 hash to partitions placed over the silos ' +
    'by their ids, and a send to a key another silo owns leaves through the host and arrives there as a host ' +
    'tell (sent, not k2kReceived), so k2kSent = k2kReceived = n holds only when they share a silo; it also ' +
    'needs Seq with ringCapacity 64 (cross-silo bursts: test/cluster/k2k.test.ts)',
  'K2K chain A→B→C with ctx.forward: the reply to the asker comes from C':
    `it counts Hop2's k2kReceived (201): a forward to a key another silo owns leaves through the host and ` +
    'arrives as a host ask (sent, not k2kReceived), and Hop1 10 and Hop2 11 are placed by silo ids; the ' +
    `chain's replies hold here (test/cluster/k2k.test.ts checks cross-silo forwards)`,
};

/**
 * Isolated cases that need kernels of their own, run last on a cluster of their own: three fresh silo
 * processes with these kernel options (the first set is stopped first), in this order (oversize reads
 * Numbers' sent count as 0, so it goes before tellMany, whose keys 100..109 a shared case also uses).
 */
const FRESH_OPTIONS: Readonly<Record<string, Record<string, number>>> = { Numbers: { slotSize: 256 } };
const RUN_FRESH = [
  'oversize payloads fail with PayloadTooLargeError, never truncated',
  'tellMany: N tells from columns, in order, counted; a bad column fails with the column and row and sends nothing',
];

/**
 * Cases that step the injected clock: run on three silos in this process (inline backend) that share the
 * test's clock, with a client of their own; the client's advanceTimers() advances every silo's timers
 * (core cluster/control.ts). Silo processes keep their own clocks.
 */
const RUN_CLOCK = [
  'timers: a declared timer ticks every period by the injected clock; a late tick fires once and keeps the ' +
    'phase; ctx.now() is the clock; ticks are not messages',
  'timers: string keys; a first delay of 0 ticks at once; a tick sends K2K to its own actor and stops its ' +
    'own timer; fractional periods',
  // Last: it sets the clock back to 42, and the timer cases step it forward from where it is.
  'ctx.now() is the injected clock',
];

/** Why an isolated case is not run here (undefined: it runs). */
function isolatedReason(name: string): string | undefined {
  // [store] cases run on silos in this process that join the lane's cluster (below).
  if (RUN_ISOLATED.has(name) || RUN_FRESH.includes(name) || RUN_CLOCK.includes(name) || name.endsWith('[store]'))
    return undefined;
  if (CLUSTER_SKIPS[name]) return CLUSTER_SKIPS[name];
  if (name.startsWith('timers:') && !RUN_CLOCK.includes(name)) return CLOCK_TELL_ERROR;
  if (LIFECYCLE[name]) return LIFECYCLE[name];
  // A new isolated case must be placed here (run, run fresh, or skipped with its reason): never skipped unnamed.
  throw new Error(
    `cluster lane: isolated case "${name}" is neither run nor given a reason (RUN_ISOLATED, RUN_FRESH, ` +
      'CLUSTER_SKIPS, LIFECYCLE)',
  );
}

describe.skipIf(natsSkip !== undefined)(`conformance: cluster lane${natsSkip ? ` (skipped: ${natsSkip})` : ''}`, () => {
  let server: NatsServerHandle;
  let silos: SiloProcess[] = [];
  let client: GrainSystem | undefined;
  let fresh: Promise<void> | undefined;
  const clock = { now: 1_000_000 };

  /** Three silo processes with `opts` and this test as their client, in a cluster named `name`. */
  async function startCluster(name: string, opts: Readonly<Record<string, Record<string, number>>>): Promise<void> {
    // deadMs 10 s: no case here is about deaths, and a loaded 2-core machine can hold a silo's loop for seconds.
    const live = { heartbeatMs: 500, deadMs: 10_000 };
    silos = await Promise.all(
      [0, 1, 2].map(() => spawnSilo(server, name, live, 'fixtures', { RG_FIXTURE_OPTS: JSON.stringify(opts) })),
    );
    client = new GrainSystem({
      backends: {},
      handleSignals: false,
      logLevel: 'silent',
      askTimeoutMs: 10_000,
      clock: () => clock.now,
      cluster: natsCluster({ servers: server.url, name, ...server.auth, ...live }),
    });
    await client.start();
    await client.cluster!.waitFor(() => client!.cluster!.settled(3), 20_000);
  }
  async function stopCluster(): Promise<void> {
    await client?.shutdown();
    client = undefined;
    await Promise.all(silos.map((s) => s.kill('SIGKILL')));
    silos = [];
  }

  /** LMDB in a temp directory per store (removed after the file), as the one-process runner's. */
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'rg-cluster-conformance-'));
  let dirs = 0;
  const lmdb: StoreFixture = {
    name: 'lmdb',
    make: async () => new LmdbStore({ dataDir: path.join(tmp, String(dirs++)) }),
    reopen: async (store: StateStore) => new LmdbStore({ dataDir: store.location }),
  };

  beforeAll(async () => {
    server = await startServer();
    await startCluster('conf', LANE_OPTIONS);
  }, 90_000);
  afterAll(async () => {
    await stopCluster();
    await server?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  // Shared cases first, then the isolated ones the lane runs on the same silos, as the one-process runner
  // orders them (test/conformance/conformance.test.ts): an isolated case may reach keys the shared cases
  // count on. Then the cases that need fresh kernels, on silos of their own.
  const isolated = cases.filter((x) => x.isolated);
  const ordered = [
    ...cases.filter((x) => !x.isolated && !RUN_CLOCK.includes(x.name)),
    ...isolated.filter((x) => !RUN_FRESH.includes(x.name) && !RUN_CLOCK.includes(x.name)),
    ...RUN_CLOCK.map((n) => cases.find((x) => x.name === n)!),
    ...RUN_FRESH.map((n) => isolated.find((x) => x.name === n)!),
  ];
  /** The clock group: three silos in this process on the lane's clock, and their client. */
  let clockGroup: Promise<{ silos: GrainSystem[]; client: GrainSystem }> | undefined;
  const clockCluster = () =>
    natsCluster({ servers: server.url, name: 'conf-clock', ...server.auth, heartbeatMs: 500, deadMs: 10_000 });
  async function startClockGroup(): Promise<{ silos: GrainSystem[]; client: GrainSystem }> {
    const classes = new Map(
      RUN_CLOCK.flatMap((n) => cases.find((x) => x.name === n)!.grains.map(([cls]) => [cls.grain.name, cls] as const)),
    );
    const silos = [0, 1, 2].map(() => {
      const sys = new GrainSystem({
        backends: { inline: new InlineBackend() },
        logLevel: 'silent',
        clock: () => clock.now,
        handleSignals: false,
        cluster: clockCluster(),
      });
      for (const cls of classes.values()) sys.register(cls, { placement: 'inline' });
      return sys;
    });
    await Promise.all(silos.map((x) => x.start()));
    const c = new GrainSystem({
      backends: {},
      handleSignals: false,
      logLevel: 'silent',
      askTimeoutMs: 10_000,
      clock: () => clock.now,
      cluster: clockCluster(),
    });
    await c.start();
    await c.cluster!.waitFor(() => c.cluster!.settled(3), 20_000);
    return { silos, client: c };
  }
  afterAll(async () => {
    if (!clockGroup) return;
    const g = await clockGroup;
    await g.client.shutdown();
    await Promise.all(g.silos.map((x) => x.shutdown()));
  });
  for (const c of ordered) {
    const reason = c.isolated ? isolatedReason(c.name) : CLUSTER_SKIPS[c.name];
    const onFresh = RUN_FRESH.includes(c.name);
    it.skipIf(reason !== undefined)(
      reason ? `${c.name} (skipped: ${reason})` : c.name,
      { timeout: onFresh || RUN_CLOCK.includes(c.name) ? 120_000 : 60_000 },
      async () => {
        if (onFresh) await (fresh ??= stopCluster().then(() => startCluster('conf-fresh', FRESH_OPTIONS)));
        if (c.persistence) {
          // A case's systems are silos in this process that join the lane's cluster beside the three silo
          // processes (which do not host its class): the class's partitions are claimed in the store before
          // they are served and every write is fenced; a shutdown leaves the cluster first.
          const pclock = { now: 1_000_000 };
          // deadMs 10 s as the lane's silos: a loaded machine can hold this process's loop for seconds.
          const cluster = () =>
            natsCluster({ servers: server.url, name: 'conf', ...server.auth, heartbeatMs: 500, deadMs: 10_000 });
          // The inline backend (turns on this thread): a case starts two or three systems, and a CPU pool
          // thread's start per system is most of such a case's time on a loaded 2-core machine.
          const silo = () =>
            new GrainSystem({
              backends: { inline: new InlineBackend() },
              logLevel: 'silent',
              clock: () => pclock.now,
              handleSignals: false,
              cluster: cluster(),
            });
          await c.persistence.run({ fresh: silo, placement: 'inline', clock: pclock }, lmdb);
          return;
        }
        const system = RUN_CLOCK.includes(c.name) ? (await (clockGroup ??= startClockGroup())).client : client!;
        // The kernels' figures are the silos', summed (system.cluster.classMetrics()); every case ends balanced there.
        const metrics = () => system.cluster!.classMetrics();
        await c.run({ system, backend: 'cpu', clock, metrics });
        await system.idle();
        await expectBalanced(metrics);
      },
    );
  }
});
