import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrainSystem, HandlerError, SchemaValidationError } from '@ringgrain/core';
import { InlineBackend } from '@ringgrain/inline-backend';
import { natsCluster, type NatsServerHandle } from '@ringgrain/cluster-nats';
import { Counter } from './grains.ts';
import { clusterOpts, natsSkip, startServer } from './nats.ts';

/** Three silos (inline backend, this process) and a client on one NATS server. */
describe.skipIf(natsSkip !== undefined)(`cluster messaging${natsSkip ? ` (skipped: ${natsSkip})` : ''}`, () => {
  let server: NatsServerHandle;
  const silos: GrainSystem[] = [];
  let client: GrainSystem;
  const silo = (name = 'msg') =>
    new GrainSystem({
      backends: { inline: new InlineBackend() },
      handleSignals: false,
      logLevel: 'silent',
      cluster: natsCluster(clusterOpts(server, name)),
    }).register(Counter, { placement: 'inline' });

  beforeAll(async () => {
    server = await startServer();
    for (let i = 0; i < 3; i++) silos.push(silo());
    await Promise.all(silos.map((s) => s.start()));
    client = new GrainSystem({
      backends: {},
      handleSignals: false,
      logLevel: 'silent',
      cluster: natsCluster(clusterOpts(server, 'msg')),
    });
    await client.start();
    await client.cluster!.waitFor(() => client.cluster!.settled(3), 10_000);
  });
  afterAll(async () => {
    await client?.shutdown();
    await Promise.all(silos.map((s) => s.shutdown()));
    await server?.stop();
  });

  it('spreads keys over the three silos; a client asks and gets every reply', async () => {
    const owners = new Map<string, number>();
    const replies = await Promise.all(
      Array.from({ length: 300 }, (_, k) => client.grain(Counter, k).add({ n: k + 0.5 })),
    );
    for (let k = 0; k < 300; k++) {
      expect(replies[k]!.total).toBe(k + 0.5);
      const o = client.cluster!.ownerOf('Counter', k)!;
      owners.set(o, (owners.get(o) ?? 0) + 1);
    }
    expect([...owners.keys()].sort()).toEqual(silos.map((s) => s.cluster!.self).sort());
    for (const n of owners.values()) expect(n).toBeGreaterThan(50);
    // Each silo ran exactly the asks of the keys it owns.
    for (const s of silos) expect(s.metrics()['Counter']!.processed).toBe(owners.get(s.cluster!.self));
  });

  it('keeps FIFO per sender → actor across silos, for tells from a client and from a silo', async () => {
    const keys = 60;
    const per = 200;
    const senders = [client, silos[0]!];
    for (let n = 1; n <= per; n++)
      for (let k = 1000; k < 1000 + keys; k++)
        for (const [s, sys] of senders.entries()) sys.grain(Counter, k).tell.seq({ s, n });
    for (let k = 1000; k < 1000 + keys; k++) {
      // FIFO is per sender: once each sender's ask behind its tells came back, every tell has run.
      await Promise.all(senders.map((sys) => sys.grain(Counter, k).get({})));
      const r = await client.grain(Counter, k).get({});
      expect(r.bad).toBe(0);
      expect(r.count).toBe(per * senders.length);
      expect(Array.from(r.last).slice(0, 2)).toEqual([per, per]);
    }
  });

  it('tellMany and askMany from a client reach every owner', async () => {
    const n = 3000;
    const key = Int32Array.from({ length: n }, (_, i) => 5000 + (i % 500));
    client.tellMany(Counter, 'add', { key, n: new Float64Array(n).fill(1) });
    const r = await client.askMany(Counter, 'add', {
      key: Int32Array.from({ length: 500 }, (_, i) => 5000 + i),
      n: new Float64Array(500).fill(0),
    });
    expect(Array.from(r.total)).toEqual(new Array(500).fill(6));
  });

  it(
    "a handler's failure on another silo rejects the ask with HandlerError; a bad payload fails at the call; " +
      'typed arrays come back whole',
    async () => {
      const e = await client
        .grain(Counter, 7)
        .fail({ code: 17 })
        .catch((x: unknown) => x);
      expect(e).toBeInstanceOf(HandlerError);
      expect((e as HandlerError).code).toBe('HANDLER');
      expect((e as Error).message).toContain('no such account 17');
      // Built from the reply's fields (wire.ts errorShape: grain, method, detail), not by cutting the message.
      expect((e as HandlerError).detail).toBe('no such account 17');
      expect((e as HandlerError).message).toBe(new HandlerError('Counter', 'fail', 'no such account 17').message);
      const g = await client.grain(Counter, 7).get({});
      expect(g.last).toBeInstanceOf(Int32Array);
      const before = client.cluster!.metrics()['asksOut'];
      await expect(client.grain(Counter, 7).add({ n: 'x' as unknown as number })).rejects.toBeInstanceOf(
        SchemaValidationError,
      );
      expect(() => client.grain(Counter, 7).tell.seq({ s: 0, n: 2 ** 40 })).toThrow(SchemaValidationError);
      expect(client.cluster!.metrics()['asksOut']).toBe(before);
    },
  );

  it(
    'a silo that cannot run a class (its placement backend is missing there) does not host it, and reaches ' +
      'it on the silos that do',
    async () => {
      const noGpu = new GrainSystem({
        backends: { inline: new InlineBackend() },
        handleSignals: false,
        logLevel: 'silent',
        cluster: natsCluster(clusterOpts(server, 'msg')),
      }).register(Counter, { placement: 'cuda' });
      await noGpu.start();
      try {
        expect(noGpu.metrics()['Counter']).toBeUndefined();
        expect(noGpu.cluster!.live().find((s) => s.id === noGpu.cluster!.self)?.grains).toEqual({});
        expect(client.cluster!.settled(3)).toBe(true);
        const hosts = new Set(silos.map((s) => s.cluster!.self));
        for (let k = 0; k < 50; k++) expect(hosts.has(noGpu.cluster!.ownerOf('Counter', k)!)).toBe(true);
        expect((await noGpu.grain(Counter, 9001).add({ n: 4 })).total).toBe(4);
      } finally {
        await noGpu.shutdown();
      }
    },
  );

  it('cluster metrics count frames (many messages per frame) and no refused entries', () => {
    const m = client.cluster!.metrics();
    expect(m['framesOut']).toBeGreaterThan(0);
    expect(Number(m['asksOut']) + Number(m['tellsOut'])).toBeGreaterThan(Number(m['framesOut']) * 5);
    expect(m['malformed']).toBe(0);
    expect(m['lostTells']).toBe(0);
  });
});
