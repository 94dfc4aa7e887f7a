/** Turns and order: FIFO per sender → actor for host and K2K senders across threads; forward chains; payload edges. */
import { PayloadTooLargeError, type GrainSystem } from '@ringgrain/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, imbalance, startSystem } from './backends.ts';
import { Chain, Named, Probe } from './grains.ts';

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  let system: GrainSystem;
  beforeAll(async () => {
    // Three pool threads: actors spread over lanes, so K2K crosses threads.
    system = await startSystem(backend, [[Probe, { ringCapacity: 256 }], Chain, [Named, { slotSize: 256 }]], {
      threads: 3,
    });
  });
  afterAll(() => system.shutdown());

  it('K2K relays from one actor keep FIFO at each target, with host sends to other actors interleaved', async () => {
    const targets = Array.from({ length: 12 }, (_, i) => 100 + i);
    const perTarget = 300;
    for (let n = 1; n <= perTarget; n++) {
      for (const to of targets) system.grain(Probe, 7).tell.relay({ to, n });
      system.grain(Probe, 200 + (n % 5)).tell.bump({ by: 1 });
    }
    await system.idle();
    const r = await system.askMany(Probe, 'read', { key: targets });
    expect(Array.from(r.last)).toEqual(targets.map(() => perTarget));
    expect(Array.from(r.bad)).toEqual(targets.map(() => 0));
    expect(Array.from(r.count)).toEqual(targets.map(() => perTarget));
    const m = system.metrics()['Probe']!;
    expect(m.k2kSent).toBe(m.k2kReceived);
    expect(await imbalance(system)).toEqual([]);
  });

  it('a forward chain of 200 hops answers the asker from the last actor', async () => {
    const r = await system.grain(Chain, 1000).walk({ hops: 200, acc: 0 });
    expect(r.at).toBe(1200);
    let sum = 0;
    for (let k = 1000; k <= 1200; k++) sum += k;
    expect(r.acc).toBe(sum);
    const many = await Promise.all(
      Array.from({ length: 50 }, (_, i) => system.grain(Chain, 5000 + i * 100).walk({ hops: 10, acc: 0.5 })),
    );
    for (let i = 0; i < 50; i++) expect(many[i]!.at).toBe(5000 + i * 100 + 10);
    await system.idle();
    expect(await imbalance(system)).toEqual([]);
  });

  it(
    'payloads: a vec at its bound fits or is PayloadTooLargeError naming the size; a long string key is ' +
      'refused, never truncated',
    async () => {
      const p = system.grain(Probe, 9);
      const e = await p.blob({ bytes: new Uint8Array(1000) }).then(
        () => undefined,
        (x: unknown) => x,
      );
      // The default slot (256 bytes) cannot hold 1000 bytes: the error says how many are needed.
      expect(e).toBeInstanceOf(PayloadTooLargeError);
      expect((e as Error).message).toMatch(/\d+ bytes/);
      expect((await p.blob({ bytes: new Uint8Array(100).fill(255) })).n).toBe(100);
      const longKey = 'k'.repeat(1000);
      let err: unknown;
      try {
        await system.grain(Named, longKey).hit({ by: 1 });
      } catch (x) {
        err = x;
      }
      if (err === undefined) {
        // Accepted: then it must be its own actor, distinct from every prefix of it.
        expect((await system.grain(Named, longKey).hit({ by: 0 })).hits).toBe(1);
        expect((await system.grain(Named, longKey.slice(0, 200)).hit({ by: 0 })).hits).toBe(0);
      } else {
        expect(err).toBeInstanceOf(PayloadTooLargeError);
      }
      await system.idle();
      expect(await imbalance(system)).toEqual([]);
    },
  );
});
