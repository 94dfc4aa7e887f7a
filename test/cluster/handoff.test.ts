import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrainSystem } from '@ringgrain/core';
import { InlineBackend } from '@ringgrain/inline-backend';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { natsCluster, type NatsServerHandle } from '@ringgrain/cluster-nats';
import { Counter } from './grains.ts';
import { clusterOpts, natsSkip, startServer } from './nats.ts';

/**
 * Handoff through the state store: silos share one store (LMDB here, in this process); nothing is flushed
 * by the timer (flushIntervalMs 60 s), so every state that reaches a new owner was written by the handoff:
 * the old owner deactivates its actors and writes them, then tells the new owner, which holds the moved
 * partitions' messages until then.
 */
describe.skipIf(natsSkip !== undefined)(
  `cluster handoff with a state store${natsSkip ? ` (skipped: ${natsSkip})` : ''}`,
  () => {
    let server: NatsServerHandle;
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rg-cluster-handoff-'));
    const store = new LmdbStore({ dataDir: dir });
    const silos: GrainSystem[] = [];
    let client: GrainSystem;
    const silo = () =>
      new GrainSystem({
        backends: { inline: new InlineBackend() },
        handleSignals: false,
        logLevel: 'silent',
        cluster: natsCluster(clusterOpts(server, 'handoff')),
      }).register(Counter, { placement: 'inline', storage: store, flushIntervalMs: 60_000 });
    const KEYS = 600;

    beforeAll(async () => {
      server = await startServer();
      silos.push(silo(), silo());
      await Promise.all(silos.map((s) => s.start()));
      client = new GrainSystem({
        backends: {},
        handleSignals: false,
        logLevel: 'silent',
        cluster: natsCluster(clusterOpts(server, 'handoff')),
      });
      await client.start();
      await client.cluster!.waitFor(() => client.cluster!.settled(2), 10_000);
    });
    afterAll(async () => {
      await client?.shutdown();
      await Promise.all(silos.map((s) => s.shutdown()));
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it(
      'a join moves partitions with their state; a leave moves them back with theirs; sends meanwhile ' + 'all land',
      async () => {
        const adds = new Array<number>(KEYS).fill(0);
        const round = () => {
          for (let k = 0; k < KEYS; k++) {
            client.grain(Counter, k).tell.add({ n: 1 });
            adds[k]!++;
          }
        };
        const check = async (what: string) => {
          const r = await client.askMany(Counter, 'get', { key: Int32Array.from({ length: KEYS }, (_, k) => k) });
          const wrong = adds.map((n, k) => [k, n, r.count[k]!]).filter(([, n, c]) => n !== c);
          expect(wrong.slice(0, 5), `${what}: ${wrong.length} keys differ [key, sent, counted]`).toEqual([]);
        };
        for (let i = 0; i < 3; i++) round();
        await check('before the join');
        const third = silo();
        const joining = third.start();
        round();
        await joining;
        silos.push(third);
        await client.cluster!.waitFor(() => client.cluster!.settled(3), 10_000);
        round();
        await check('after the join');
        const moved = Array.from({ length: KEYS }, (_, k) => client.cluster!.ownerOf('Counter', k)).filter(
          (o) => o === third.cluster!.self,
        ).length;
        expect(moved).toBeGreaterThan(KEYS / 6);
        const sent = silos.slice(0, 2).reduce((a, s) => a + Number(s.cluster!.metrics()['handOffsSent']), 0);
        expect(sent).toBeGreaterThanOrEqual(1);
        expect(third.cluster!.metrics()['handOffsTimedOut']).toBe(0);
        // The third silo leaves: its partitions go back to the first two, which reload them from the store.
        const leaving = third.shutdown();
        round();
        await leaving;
        silos.pop();
        await client.cluster!.waitFor(() => client.cluster!.settled(2), 10_000);
        round();
        await check('after the leave');
        expect(client.cluster!.metrics()['lostTells']).toBe(0);
      },
    );
  },
);
