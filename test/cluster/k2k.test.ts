import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrainSystem } from '@ringgrain/core';
import { InlineBackend } from '@ringgrain/inline-backend';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { natsCluster, type NatsServerHandle } from '@ringgrain/cluster-nats';
import { Counter } from './grains.ts';
import { Relay, Tag } from './k2k-grains.ts';
import { clusterOpts, natsSkip, startServer } from './nats.ts';

/**
 * K2K from a handler to a key another silo owns leaves through the host to the owner: a tell (ctx.send)
 * runs there exactly once, FIFO per sender → actor; a forward (ctx.forward) carries the ask, answered by
 * the owner. The key is never activated on the sending silo. A K2K send to a key the sending silo owns runs there as
 * before. Two silos in this process, on the
 * inline backend (K2K on the host thread) and on the cpu backend (K2K between worker threads).
 */
const backends = { inline: () => new InlineBackend(), cpu: () => new CpuBackend({ threads: 1 }) };
describe.skipIf(natsSkip !== undefined).each(['inline', 'cpu'] as const)(
  `cluster K2K across silos, %s backend${natsSkip ? ` (skipped: ${natsSkip})` : ''}`,
  (backend) => {
    let server: NatsServerHandle;
    let a: GrainSystem;
    let b: GrainSystem;
    const silo = () =>
      new GrainSystem({
        backends: { [backend]: backends[backend]() },
        handleSignals: false,
        logLevel: 'silent',
        cluster: natsCluster(clusterOpts(server, `k2k-${backend}`)),
      })
        .register(Counter, { placement: backend })
        .register(Tag, { placement: backend })
        .register(Relay, { placement: backend });
    /** The first key from `from` whose partition of `grain` silo `sys` owns. */
    const ownedBy = (sys: GrainSystem, grain: string, from: number) => {
      for (let k = from; ; k++) if (a.cluster!.ownerOf(grain, k) === sys.cluster!.self) return k;
    };

    beforeAll(async () => {
      server = await startServer();
      a = silo();
      b = silo();
      await Promise.all([a.start(), b.start()]);
      await Promise.all([a, b].map((s) => s.cluster!.waitFor(() => s.cluster!.settled(2), 10_000)));
    });
    afterAll(async () => {
      await Promise.all([a, b].map((s) => s?.shutdown()));
      await server?.stop();
    });

    it(
      'a K2K tell to a key the other silo owns runs there exactly once, in order per sender; never on the ' + 'sender',
      async () => {
        const relay = ownedBy(a, 'Relay', 0);
        const remote = ownedBy(b, 'Counter', 100);
        await Promise.all([a.idle(), b.idle()]);
        const aBefore = a.metrics()['Counter']!.processed;
        const bBefore = b.metrics()['Counter']!.processed;
        const errors: Error[] = [];
        a.on('tellError', (e) => errors.push(e.error));
        // Sent on a, Relay's owner: its handler sends K2K to b's key (one add, then 2 × 50 numbered seqs).
        a.grain(Relay, relay).tell.tell({ key: remote, n: 1.5 });
        a.grain(Relay, relay).tell.burst({ key: remote, s: 7, from: 1, count: 50 });
        a.grain(Relay, relay).tell.burst({ key: remote, s: 7, from: 51, count: 50 });
        await a.idle();
        // b runs them (from a's host, through the cluster): ask its state until all 101 arrived (bounded).
        let asks = 1;
        let r = await b.grain(Counter, remote).get({});
        for (const until = Date.now() + 10_000; r.count < 101 && Date.now() < until; asks++)
          r = await b.grain(Counter, remote).get({});
        await Promise.all([a.idle(), b.idle()]);
        expect(r.total).toBe(1.5);
        expect(r.count).toBe(101);
        expect(r.bad).toBe(0);
        expect(r.last[7]).toBe(100);
        // 101 tells and the asks that read it, nothing else.
        expect(b.metrics()['Counter']!.processed).toBe(bBefore + 101 + asks);
        // Nothing of it ran on a, and nothing failed.
        expect(a.metrics()['Counter']!.processed).toBe(aBefore);
        expect(errors).toEqual([]);
        a.removeAllListeners('tellError');
        expect((await b.grain(Relay, relay).get({})).sent).toBe(101);
      },
    );

    it('a K2K tell to a string key the other silo owns runs there, every one, never on the sender', async () => {
      const relay = ownedBy(a, 'Relay', 5000);
      let k = 0;
      while (a.cluster!.ownerOf('Tag', `tag-${k}`) !== b.cluster!.self) k++;
      await Promise.all([a.idle(), b.idle()]);
      const aBefore = a.metrics()['Tag']?.processed ?? 0;
      a.grain(Relay, relay).tell.tag({ key: k, count: 30 });
      await a.idle();
      let r = await b.grain(Tag, `tag-${k}`).get({});
      for (const until = Date.now() + 10_000; r.count < 30 && Date.now() < until; )
        r = await b.grain(Tag, `tag-${k}`).get({});
      expect(r).toEqual({ total: (30 * 31) / 2, count: 30 });
      await Promise.all([a.idle(), b.idle()]);
      expect(a.metrics()['Tag']?.processed ?? 0).toBe(aBefore);
    });

    it(
      'a forwarded ask to a key the other silo owns is answered there (never on the sender); to a key this ' +
        'silo owns, here',
      async () => {
        const relay = ownedBy(a, 'Relay', 1000);
        const remote = ownedBy(b, 'Counter', 2000);
        const local = ownedBy(a, 'Counter', 3000);
        // Counters are read after idle(): a worker publishes them after its turns, not before their replies.
        await Promise.all([a.idle(), b.idle()]);
        const aBefore = a.metrics()['Counter']!.processed;
        const bBefore = b.metrics()['Counter']!.processed;
        // Asked from b: routed to a (Relay's owner), forwarded by its handler back to b (the key's owner).
        expect((await b.grain(Relay, relay).fwd({ key: remote, n: 2 })).total).toBe(2);
        // Asked on a itself: the forward leaves a's kernel through a's host.
        expect((await a.grain(Relay, relay).fwd({ key: remote, n: 3 })).total).toBe(5);
        await Promise.all([a.idle(), b.idle()]);
        expect(a.metrics()['Counter']!.processed).toBe(aBefore);
        expect(b.metrics()['Counter']!.processed).toBe(bBefore + 2);
        // A forward to a key this silo owns runs here, as before.
        expect((await b.grain(Relay, relay).fwd({ key: local, n: 2.5 })).total).toBe(2.5);
        await Promise.all([a.idle(), b.idle()]);
        expect(a.metrics()['Counter']!.processed).toBe(aBefore + 1);
        expect(b.metrics()['Counter']!.processed).toBe(bBefore + 2);
      },
    );
  },
);
