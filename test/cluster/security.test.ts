import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { Packr } from 'msgpackr';
import { GrainSystem } from '@ringgrain/core';
import { NoSiloError } from '@ringgrain/core/errors';
import { InlineBackend } from '@ringgrain/inline-backend';
import { encodeFrame, natsCluster, type NatsServerHandle } from '@ringgrain/cluster-nats';
import { Counter } from './grains.ts';
import { clusterOpts, natsSkip, startServer } from './nats.ts';

/**
 * The server the tests start requires credentials; subjects and buckets are per cluster name; frames
 * that do not decode (or carry malformed entries) from an authenticated connection are refused, typed
 * and counted, and the silo keeps serving.
 */
describe.skipIf(natsSkip !== undefined)(`cluster security${natsSkip ? ` (skipped: ${natsSkip})` : ''}`, () => {
  let server: NatsServerHandle;
  let silo: GrainSystem;

  beforeAll(async () => {
    server = await startServer();
    silo = new GrainSystem({
      backends: { inline: new InlineBackend() },
      handleSignals: false,
      logLevel: 'silent',
      cluster: natsCluster(clusterOpts(server, 'sec')),
    }).register(Counter, { placement: 'inline' });
    await silo.start();
  });
  afterAll(async () => {
    await silo?.shutdown();
    await server?.stop();
  });

  it(
    'a connection without credentials (or with a wrong password) is refused, so it cannot publish into the ' +
      'cluster',
    async () => {
      await expect(connect({ servers: server.url, reconnect: false })).rejects.toThrow(
        /Authorization|authorization|auth/i,
      );
      await expect(connect({ servers: server.url, reconnect: false, user: 'rg', pass: 'wrong' })).rejects.toThrow(
        /Authorization|authorization|auth/i,
      );
      await expect(
        new GrainSystem({
          backends: {},
          handleSignals: false,
          logLevel: 'silent',
          cluster: natsCluster({ servers: server.url, name: 'sec' }),
        }).start(),
      ).rejects.toMatchObject({ code: 'NATS_CONNECT' });
    },
  );

  it(
    'malformed frames and entries from an authenticated connection are refused and counted; the silo keeps ' +
      'serving',
    async () => {
      const nc = await connect({ servers: server.url, ...server.auth });
      const subject = `rg.sec.m.${silo.cluster!.self}`;
      const malformed: string[] = [];
      const all = new Promise<void>((resolve) =>
        silo.cluster!.on('malformed', (e) => {
          malformed.push((e.error as unknown as { code: string }).code);
          if (malformed.length === 7) resolve();
        }),
      );
      const raw = new Packr({ useRecords: false });
      nc.publish(subject, new Uint8Array([0xc1, 0xff, 0x00])); // not msgpack (0xc1 is never used)
      nc.publish(subject, raw.pack({ hello: 'world' })); // msgpack, not a frame
      nc.publish(subject, raw.pack([99, 'x', []])); // another frame version
      nc.publish(
        subject,
        encodeFrame('intruder', [[0, 'Counter', 'add', 1.5, {}, 0, 'intruder', 0], [7], 'x', [1, 'a', 1, null]]),
      );
      await nc.flush();
      await all;
      expect(malformed).toEqual([
        'MALFORMED_FRAME',
        'MALFORMED_FRAME',
        'MALFORMED_FRAME',
        'MALFORMED_ENTRY',
        'MALFORMED_ENTRY',
        'MALFORMED_ENTRY',
        'MALFORMED_ENTRY',
      ]);
      const m = silo.cluster!.metrics();
      expect(m['malformedFrames']).toBe(3);
      expect(m['malformed']).toBe(7);
      // Still serving: a client's asks are answered.
      const client = new GrainSystem({
        backends: {},
        handleSignals: false,
        logLevel: 'silent',
        cluster: natsCluster(clusterOpts(server, 'sec')),
      });
      await client.start();
      expect((await client.grain(Counter, 3).add({ n: 2 })).total).toBe(2);
      await client.shutdown();
      await nc.close();
    },
  );

  it('clusters on one server are apart: another cluster name sees none of these silos', async () => {
    const other = new GrainSystem({
      backends: {},
      handleSignals: false,
      logLevel: 'silent',
      askTimeoutMs: 400,
      cluster: natsCluster(clusterOpts(server, 'sec-other')),
    });
    await other.start();
    expect(other.cluster!.live().filter((s) => !s.client)).toEqual([]);
    await expect(other.grain(Counter, 1).add({ n: 1 })).rejects.toBeInstanceOf(NoSiloError);
    await other.shutdown();
  });
});
