import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Grain, GrainSystem, PayloadTooLargeError, t, type TypesOf } from '@ringgrain/core';
import { InlineBackend } from '@ringgrain/inline-backend';
import { natsCluster, type NatsServerHandle } from '@ringgrain/cluster-nats';
import { Counter } from './grains.ts';
import { Relay } from './k2k-grains.ts';
import { clusterOpts, natsSkip, startServer } from './nats.ts';

/** Payloads of up to 64 f64 values, for a slot that holds fewer (inline backend: runs on the host thread). */
class Bulk extends Grain({
  name: 'Bulk',
  module: import.meta.url,
  state: t.struct({ n: t.u32 }),
  methods: { put: { request: t.struct({ xs: t.vec(t.f64, 64) }), reply: t.struct({ n: t.u32 }) } },
}) {
  put(s: B['state'], m: B['req']['put']): B['reply']['put'] {
    s.n += m.xs.length;
    return { n: s.n };
  }
}
type B = TypesOf<typeof Bulk>;

/**
 * A client reads the cluster (core cluster/control.ts): idle() waits until what it sent and the cross-silo
 * K2K chains it caused were processed on every silo, classMetrics() sums the silos' figures, and an error
 * of one of core's classes raised on the owning silo comes back as that class. Three silos in this process
 * (inline backend) and a client.
 */
describe.skipIf(natsSkip !== undefined)(`cluster control${natsSkip ? ` (skipped: ${natsSkip})` : ''}`, () => {
  let server: NatsServerHandle;
  const silos: GrainSystem[] = [];
  let client: GrainSystem;
  const silo = () =>
    new GrainSystem({
      backends: { inline: new InlineBackend() },
      handleSignals: false,
      logLevel: 'silent',
      cluster: natsCluster(clusterOpts(server, 'ctl')),
    })
      .register(Counter, { placement: 'inline' })
      .register(Relay, { placement: 'inline' })
      .register(Bulk, { placement: 'inline', slotSize: 256 });

  beforeAll(async () => {
    server = await startServer();
    for (let i = 0; i < 3; i++) silos.push(silo());
    await Promise.all(silos.map((s) => s.start()));
    client = new GrainSystem({
      backends: {},
      handleSignals: false,
      logLevel: 'silent',
      cluster: natsCluster(clusterOpts(server, 'ctl')),
    });
    await client.start();
    await client.cluster!.waitFor(() => client.cluster!.settled(3), 20_000);
  }, 60_000);
  afterAll(async () => {
    await client?.shutdown();
    await Promise.all(silos.map((s) => s.shutdown()));
    await server?.stop();
  });

  it(
    "a client's idle() returns once its tells and the cross-silo K2K sends they caused ran on every " + 'silo',
    async () => {
      const before = await client.cluster!.classMetrics();
      // Relay r sends Counter.add to key 1000 + r: tells from the client, each a K2K tell from its Relay's
      // silo to the Counter key's silo (another silo for most keys).
      const relays = 30;
      const rounds = 20;
      for (let i = 0; i < rounds; i++)
        for (let r = 0; r < relays; r++) client.grain(Relay, r).tell.tell({ key: 1000 + r, n: 1 });
      await client.idle({ timeoutMs: 30_000 });
      // No polling after idle(): every effect is there.
      const m = await client.cluster!.classMetrics();
      expect(m['Relay']!.processed - (before['Relay']?.processed ?? 0)).toBe(relays * rounds);
      expect(m['Counter']!.processed - (before['Counter']?.processed ?? 0)).toBe(relays * rounds);
      // The sum is over the silos: each silo's own figure is part of it.
      const per = await client.cluster!.siloMetrics();
      expect(Object.keys(per).sort()).toEqual(silos.map((s) => s.cluster!.self).sort());
      expect(Object.values(per).reduce((n, c) => n + (c['Counter']?.processed ?? 0), 0)).toBe(m['Counter']!.processed);
      for (let r = 0; r < relays; r++) expect((await client.grain(Counter, 1000 + r).get({})).total).toBe(rounds);
    },
  );

  it(
    'an error of a core class raised on the owning silo comes back as that class, with its fields and the silo',
    async () => {
      // Bulk's slot holds 208 payload bytes on the silos; the client has no slot and sends the bytes on.
      const xs = Array.from({ length: 64 }, (_, i) => i + 0.5);
      const e = (await client
        .grain(Bulk, 7)
        .put({ xs })
        .then(
          () => undefined,
          (x: unknown) => x,
        )) as PayloadTooLargeError & { silo?: string };
      expect(e).toBeInstanceOf(PayloadTooLargeError);
      expect(e.code).toBe('PAYLOAD_TOO_LARGE');
      expect(e.message).toMatch(/needs \d+ bytes but a slot holds 208/);
      expect(e.silo).toBe(client.cluster!.ownerOf('Bulk', 7));
      // What fits goes through whole.
      expect(await client.grain(Bulk, 7).put({ xs: xs.slice(0, 20) })).toEqual({ n: 20 });
    },
  );
});
