/**
 * Terminating a kernel while K2K messages wait for it (in its K2K rings, and in other kernels' overflow
 * queues because its rings are full), or while it holds K2K messages for a full target: nothing accepted
 * is dropped silently, the counters balance (sent + k2kReceived = processed + rejected + hostRejected per
 * kernel, K2K sent = received in total), system.idle() returns, and a relaunched kernel serves again.
 */
import type { GrainSystem } from '@ringgrain/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gate, SINKS, SRC0, SRCS, Src } from './grains.ts';
import { CONFIGS, guard, settle, startSystem, tick } from './helpers.ts';

describe.each(CONFIGS)('$name', (cfg) => {
  let system: GrainSystem;
  beforeAll(async () => {
    system = await startSystem(
      cfg.backend,
      [
        [Gate, { ringCapacity: 16, slotSize: 512 }],
        [Src, { ringCapacity: 16, slotSize: 512 }],
      ],
      { threads: cfg.threads },
    );
  });
  afterAll(() => system?.shutdown());

  const gateTotal = () => {
    const m = system.metrics()['Gate']!;
    return m;
  };

  it(
    "the target is terminated while deactivated with K2K waiting in its rings and in senders' overflow: " +
      'counted received and rejected, idle() returns; relaunched, it serves K2K again in order',
    async () => {
      const gate = system.kernel(Gate);
      await guard(gate.deactivate(), 'deactivate');
      const to = Int32Array.of(0, 1, 2, 3, 4, 5);
      for (let k = 0; k < SRCS; k++) system.grain(Src, k).tell.fanGate({ to, rounds: 20 });
      // Every Src turn ran (its replies come after its earlier tells): 960 K2K sent, most held in overflow.
      for (let k = 0; k < SRCS; k++) await guard(system.grain(Src, k).next({}), 'Src ask');
      for (let i = 0; i < 10; i++) await tick();
      expect(system.metrics()['Src']!.k2kSent).toBe(SRCS * 6 * 20);
      await guard(gate.terminate(), 'terminate');
      expect(await settle(system, 'after terminate')).toEqual([]);
      const m = gateTotal();
      const src = system.metrics()['Src']!;
      // Each of the 960 is counted once: left in Gate's rings (Gate received + rejected) or held by a sender
      // (the sender counts it received back and rejected).
      expect(m.rejected + src.rejected).toBe(SRCS * 6 * 20);
      expect(m.k2kReceived + src.k2kReceived).toBe(SRCS * 6 * 20);
      expect(m.processed).toBe(0);

      await guard(system.launch(Gate), 'relaunch');
      const before = (await Promise.all(Array.from({ length: SRCS }, (_, k) => system.grain(Src, k).next({})))).length;
      expect(before).toBe(SRCS);
      // Src numbers per Gate target carry on from where they were (its state kept them): a fresh Gate
      // actor sees each sender's numbers start past 0 but then in order, one by one.
      for (let k = 0; k < SRCS; k++) system.grain(Src, k).tell.fanGate({ to, rounds: 5 });
      expect(await settle(system, 'after relaunch')).toEqual([]);
      const reads = await Promise.all(Array.from({ length: SINKS }, (_, t) => system.grain(Gate, t).read({})));
      for (let t = 0; t < 6; t++) {
        // The first message of each sender is a jump from 0 (1 violation per sender), the rest in order.
        expect(reads[t]!.count).toBe(SRCS * 5);
        expect(reads[t]!.bad).toBe(SRCS);
        for (let k = 0; k < SRCS; k++) expect(reads[t]!.last[SRC0 + k]).toBe(25);
      }
    },
  );

  it(
    'a sender kernel is terminated while it holds K2K for a full, deactivated target: the held messages are ' +
      'counted, idle() returns after the target is activated',
    async () => {
      const gate = system.kernel(Gate);
      const src = system.kernel(Src);
      await guard(gate.deactivate(), 'deactivate');
      const to = Int32Array.of(7, 8, 9);
      for (let k = 0; k < SRCS; k++) system.grain(Src, k).tell.fanGate({ to, rounds: 30 });
      for (let k = 0; k < SRCS; k++) await guard(system.grain(Src, k).next({}), 'Src ask');
      const sent = system.metrics()['Src']!.k2kSent;
      await guard(src.terminate(), 'terminate Src');
      await guard(gate.activate(), 'activate');
      expect(await settle(system, 'after sender terminate')).toEqual([]);
      const m = system.metrics();
      // What Gate did not take came back to Src's counters as rejected; every one once.
      expect(m['Gate']!.k2kReceived + m['Src']!.k2kReceived).toBe(sent);
      await guard(system.launch(Src), 'relaunch Src');
      expect(await settle(system, 'after sender relaunch')).toEqual([]);
    },
  );
});
