import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrainSystem } from '@ringgrain/core';
import { waitUntil } from '@ringgrain/core/internal';
import { InlineBackend } from '@ringgrain/inline-backend';
import { natsCluster, type NatsServerHandle } from '@ringgrain/cluster-nats';
import { Counter } from './grains.ts';
import { clusterOpts, natsSkip, startServer } from './nats.ts';

/**
 * Join under load: a client streams tells to two silos; a third joins mid-stream and takes its share of
 * partitions. Every tell is counted end to end: the turns the three silos ran equal the tells sent, none
 * lost or counted lost (tells for moved partitions are forwarded by the old owner or wait for an owner).
 */
describe.skipIf(natsSkip !== undefined)(`cluster join under load${natsSkip ? ` (skipped: ${natsSkip})` : ''}`, () => {
  let server: NatsServerHandle;
  const silos: GrainSystem[] = [];
  let client: GrainSystem;
  const silo = () =>
    new GrainSystem({
      backends: { inline: new InlineBackend() },
      handleSignals: false,
      logLevel: 'silent',
      cluster: natsCluster(clusterOpts(server, 'join')),
    }).register(Counter, { placement: 'inline' });

  beforeAll(async () => {
    server = await startServer();
    silos.push(silo(), silo());
    await Promise.all(silos.map((s) => s.start()));
    client = new GrainSystem({
      backends: {},
      handleSignals: false,
      logLevel: 'silent',
      cluster: natsCluster(clusterOpts(server, 'join')),
    });
    await client.start();
    await client.cluster!.waitFor(() => client.cluster!.settled(2), 10_000);
  });
  afterAll(async () => {
    await client?.shutdown();
    await Promise.all(silos.map((s) => s.shutdown()));
    await server?.stop();
  });

  it('a third silo joins while tells stream in: partitions move, zero tells lost', async () => {
    const KEYS = 2000;
    let sent = 0;
    let joined = false;
    const third = silo();
    const joining = third.start().then(() => {
      silos.push(third);
      joined = true;
    });
    // Stream in rounds (one tell per key per round) until the join settled, then 5 rounds more.
    let after = 0;
    for (let round = 0; after < 5 && round < 2000; round++) {
      for (let k = 0; k < KEYS; k++) client.grain(Counter, k).tell.add({ n: 1 });
      sent += KEYS;
      await new Promise((r) => setImmediate(r));
      if (joined && client.cluster!.settled(3)) after++;
    }
    await joining;
    expect(client.cluster!.settled(3)).toBe(true);
    const processed = () => silos.reduce((a, s) => a + s.metrics()['Counter']!.processed, 0);
    await waitUntil(() => processed() === sent, 10_000);
    expect(processed()).toBe(sent);
    const m = client.cluster!.metrics();
    expect(m['lostTells']).toBe(0);
    expect(m['tellsOut']).toBe(sent);
    const third3 = third.cluster!.self;
    const owned = Array.from({ length: KEYS }, (_, k) => client.cluster!.ownerOf('Counter', k)).filter(
      (o) => o === third3,
    ).length;
    expect(owned).toBeGreaterThan(KEYS / 6);
    expect(third.metrics()['Counter']!.processed).toBeGreaterThan(0);
    console.log(
      `join under load: ${sent} tells, all processed ` +
        `(${silos.map((s) => s.metrics()['Counter']!.processed).join(' + ')}); forwarded by old ` +
        `owners: ${silos.map((s) => s.cluster!.metrics()['forwarded']).join(', ')}`,
    );
  });

  it(
    'a silo leaves while tells stream in: the others see ' + '"left", its partitions move, every tell processed',
    async () => {
      const KEYS = 2000;
      const processed = () => silos.reduce((a, s) => a + s.metrics()['Counter']!.processed, 0);
      const before = processed();
      const leaves: Array<[string, string]> = [];
      client.cluster!.on('leave', (s, reason) => leaves.push([s.id, reason]));
      const leaving = silos[0]!;
      const id = leaving.cluster!.self;
      let sent = 0;
      let gone = false;
      let after = 0;
      for (let round = 0; after < 5 && round < 2000; round++) {
        for (let k = 0; k < KEYS; k++) client.grain(Counter, k).tell.add({ n: 1 });
        sent += KEYS;
        await new Promise((r) => setImmediate(r));
        if (round === 1) void leaving.shutdown().then(() => (gone = true));
        if (gone && client.cluster!.settled(2)) after++;
      }
      expect(leaves).toEqual([[id, 'left']]);
      expect(Array.from({ length: KEYS }, (_, k) => client.cluster!.ownerOf('Counter', k)).includes(id)).toBe(false);
      await waitUntil(() => processed() - before === sent, 10_000);
      expect(processed() - before).toBe(sent);
      await waitUntil(() => client.cluster!.metrics()['unconfirmedTells'] === 0, 5_000);
      expect(client.cluster!.metrics()['unconfirmedTells']).toBe(0);
      expect(client.cluster!.metrics()['lostTells']).toBe(0);
      console.log(
        `leave under load: ${sent} tells, all processed; forwarded by the remaining silos: ${silos
          .slice(1)
          .map((s) => s.cluster!.metrics()['forwarded'])
          .join(', ')}`,
      );
    },
  );
});
