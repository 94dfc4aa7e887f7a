import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrainSystem } from '@ringgrain/core';
import type { GrainDef } from '@ringgrain/core/types';
import { stateTableSpec, type StateTable } from '@ringgrain/core/store';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { PostgresStore } from '@ringgrain/postgres-store';
import { natsCluster, type NatsServerHandle } from '@ringgrain/cluster-nats';
import { startPostgres, type PgServer } from '../../packages/postgres-store/test/server.ts';
import { Counter } from './grains.ts';
import { clusterOpts, natsSkip, startServer } from './nats.ts';
import { spawnSilo, type SiloProcess } from './procs.ts';

/**
 * Single activation, fenced by the store: silo A (its own process, PostgreSQL store, no timer flush) holds
 * unwritten states when it is paused (SIGSTOP, as a long GC pause or a frozen VM). Silo B declares it dead,
 * takes its partitions, claims them in the store (a higher epoch) and serves the keys from the store. A is
 * resumed: it learns it was evicted and writes what it holds, under its old epochs: the store refuses every
 * row (StateFencedError, counted), and B's states, each stored with B's activation epoch, stay.
 */
describe.skipIf(natsSkip !== undefined)(
  `cluster fencing of a stale owner's writes${natsSkip ? ` (skipped: ${natsSkip})` : ''}`,
  () => {
    let server: NatsServerHandle;
    let pgServer: PgServer;
    let a: SiloProcess | undefined;
    let b: GrainSystem | undefined;
    let client: GrainSystem | undefined;
    const stores: PostgresStore[] = [];
    const KEYS = 40;
    const opts = (s: NatsServerHandle) => clusterOpts(s, 'fence', { heartbeatMs: 100, deadMs: 1000 });

    beforeAll(async () => {
      [server, pgServer] = await Promise.all([startServer(), startPostgres()]);
    }, 60_000);
    afterAll(async () => {
      await client?.shutdown();
      await b?.shutdown();
      a?.child.kill('SIGCONT');
      await a?.kill('SIGKILL');
      for (const s of stores) await s.close();
      await server?.stop();
      await pgServer?.stop();
    });

    it('a paused owner that wakes after its partitions moved: its writes are refused typed and counted; the ' +
      "new owner's states, with its epochs, stay", async () => {
      const { heartbeatMs, deadMs } = opts(server);
      a = await spawnSilo(server, 'fence', { heartbeatMs, deadMs }, 'counter', {
        RG_PG_URL: pgServer.url,
        RG_FLUSH_MS: '60000',
      });
      client = new GrainSystem({
        backends: {},
        handleSignals: false,
        logLevel: 'silent',
        cluster: natsCluster(opts(server)),
      });
      await client.start();
      const c = client.cluster!;
      await c.waitFor(() => c.settled(1), 10_000);
      // A serves every key: three adds each, held unwritten (its flush timer is a minute away).
      for (let k = 0; k < KEYS; k++) for (let i = 0; i < 3; i++) await client.grain(Counter, k).add({ n: 1 });

      a.child.kill('SIGSTOP');
      const bStore = new PostgresStore({ connection: pgServer.url });
      stores.push(bStore);
      b = new GrainSystem({
        backends: { cpu: new CpuBackend({ threads: 1, maxSpinMs: 0.05 }) },
        handleSignals: false,
        logLevel: 'silent',
        cluster: natsCluster(opts(server)),
      });
      b.register(Counter, { placement: 'cpu', storage: bStore, flushIntervalMs: 60_000 });
      await b.start();
      const bId = b.cluster!.self;
      await c.waitFor(() => c.settled(1) && c.ownerOf('Counter', 0) === bId, 15_000);
      await b.cluster!.waitFor(
        () => Array.from({ length: KEYS }, (_, k) => b!.cluster!.claimedEpoch('Counter', k)).every((e) => (e ?? 0) > 0),
        10_000,
      );
      // B serves the keys from the store (nothing of A's was written): one add each, then written.
      for (let k = 0; k < KEYS; k++) expect((await client.grain(Counter, k).add({ n: 1 })).total).toBe(1);
      await b.flush();

      // A wakes up: evicted, it writes what it holds under its old epochs, and the store refuses all of it.
      const evicted = new Promise<string>((resolve) => {
        const check = () => {
          const m = /EVICTED (\{.*\})\n/.exec(a!.output());
          if (m) resolve(m[1]!);
        };
        a!.child.stdout!.on('data', check);
        check();
      });
      a.child.kill('SIGCONT');
      const report = JSON.parse(await evicted) as {
        storage: { fenced: number; rowsWritten: number };
        storageErrors: Record<string, number>;
      };
      expect(report.storage.fenced).toBe(KEYS);
      expect(report.storage.rowsWritten).toBe(0);
      expect(report.storageErrors['STATE_FENCED']).toBeGreaterThanOrEqual(1);

      // Every stored state is B's (total 1), written under the epoch B claimed its partition with (its activation
      // epoch).
      const reader = new PostgresStore({ connection: pgServer.url });
      stores.push(reader);
      await reader.open();
      const table = (await reader.table(stateTableSpec(Counter.grain as GrainDef, 'layout'))) as StateTable<number>;
      for (let k = 0; k < KEYS; k++) {
        const row = await table.get(k);
        expect(row?.epoch, `key ${k}`).toBe(b.cluster!.claimedEpoch('Counter', k));
        expect(row!.epoch!).toBeGreaterThan(1);
        expect((await client.grain(Counter, k).get({})).total).toBe(1);
      }
    }, 60_000);
  },
);
