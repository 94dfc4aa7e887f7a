/**
 * The dispatcher's batch take (every published slot of a drain decoded, the tail published once, then
 * the turns in ring order): per-sender FIFO and one turn at a time hold through small rings that wrap
 * and fill (tellMany rows, single tells and asks interleaved), and a message refused at decode in the
 * middle of a batch is rejected in its place while the rest of the batch runs.
 */
import { GrainSystem, SLOT_HEADER_SIZE } from '@ringgrain/core';
import { DecodeError } from '@ringgrain/core/errors';
import { HOST_SENDER, SLOT } from '@ringgrain/core/backend';
import { afterEach, describe, expect, it } from 'vitest';
import { CpuBackend } from '../src/index.ts';
import { Seq } from '../../../test/fixtures/grains.ts';

let system: GrainSystem | undefined;
afterEach(async () => {
  await system?.shutdown({ mode: 'reject', timeoutMs: 1000 });
  system = undefined;
});

function make(ringCapacity: number): GrainSystem {
  system = new GrainSystem({
    backends: { cpu: new CpuBackend({ threads: 1 }) },
    logLevel: 'silent',
    handleSignals: false,
  });
  system.register(Seq, { placement: 'cpu', ringCapacity, maxActors: 256 });
  return system;
}

describe('CPU dispatcher batch take', () => {
  it(
    'keeps per-sender FIFO through a small ring that wraps and fills: tellMany rows, single tells and asks ' +
      'interleaved',
    async () => {
      const s = make(16);
      await s.start();
      const actors = 11;
      const next = [new Uint32Array(actors), new Uint32Array(actors), new Uint32Array(actors)];
      const asks: Array<Promise<{ count: number }>> = [];
      for (let round = 0; round < 20; round++) {
        // Sender 0: a tellMany of 300 rows in runs of one actor; sender 1: single tells; sender 2: asks.
        const n = 300;
        const key = new Int32Array(n);
        const sender = new Uint32Array(n);
        const seq = new Uint32Array(n);
        for (let i = 0; i < n; i++) {
          const a = Math.floor(i / 4) % actors;
          key[i] = 700 + a;
          seq[i] = ++next[0]![a]!;
        }
        expect(s.tellMany(Seq, 'push', { key, sender, seq })).toBe(n);
        for (let a = 0; a < actors; a++) {
          void s.grain(Seq, 700 + a).tell.push({ sender: 1, seq: ++next[1]![a]! });
          asks.push(s.grain(Seq, 700 + a).pushAsk({ sender: 2, seq: ++next[2]![a]! }));
        }
      }
      for (const r of await Promise.all(asks)) expect(r.count).toBeGreaterThan(0);
      await s.idle();
      for (let a = 0; a < actors; a++) {
        const st = await s.grain(Seq, 700 + a).stats({});
        expect({ a, violations: st.violations, overlaps: st.overlaps, count: st.count }).toEqual({
          a,
          violations: 0,
          overlaps: 0,
          count: next[0]![a]! + next[1]![a]! + next[2]![a]!,
        });
        expect([st.last[0], st.last[1], st.last[2]]).toEqual([next[0]![a], next[1]![a], next[2]![a]]);
      }
      await s.idle(); // the stats asks: counted once the lane publishes after them
      const c = s.counters(Seq);
      expect(c.processed).toBe(c.sent);
      expect(c.rejected).toBe(0);
    },
  );

  it(
    'a message refused at decode in the middle of a batch is rejected (a tellError), the turns before and ' +
      'after it run, in order',
    async () => {
      const s = make(64);
      const errors: Error[] = [];
      s.on('tellError', (e) => errors.push(e.error));
      await s.start();
      const k = s.kernel(Seq);
      await k.deactivate(); // the lane takes nothing until activate: everything below lands in one batch
      const send = (seq: number) => s.grain(Seq, 9).tell.push({ sender: 3, seq });
      for (let i = 1; i <= 10; i++) send(i);
      // A slot naming a method the grain does not have, published as the host would (counted as sent).
      const p = k.lanes[0]!.producer;
      const slot = p.claim();
      const ring = p.ring;
      ring.u8.fill(0, slot, slot + SLOT_HEADER_SIZE + 1);
      ring.dv.setUint32(slot + SLOT.length, 1, true);
      ring.dv.setUint32(slot + SLOT.method, 999, true);
      ring.dv.setUint32(slot + SLOT.keyLo, 9, true);
      ring.dv.setUint32(slot + SLOT.sender, HOST_SENDER, true);
      ring.dv.setUint32(slot + SLOT.grain, k.grainId, true);
      ring.u8[slot + SLOT_HEADER_SIZE] = 0x80;
      p.publish(slot);
      k.sent++;
      for (let i = 11; i <= 20; i++) send(i);
      expect(k.inboundDepth()).toBe(21);
      await k.activate();
      await s.idle();
      const st = await s.grain(Seq, 9).stats({});
      expect({ count: st.count, violations: st.violations, last: st.last[3] }).toEqual({
        count: 20,
        violations: 0,
        last: 20,
      });
      // The stats turn's count is published between batches, possibly after its reply: exact after idle().
      await s.idle();
      const c = s.counters(Seq);
      expect(c.rejected).toBe(1);
      expect(c.processed).toBe(21); // the 20 pushes and the stats ask
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(DecodeError);
      expect(errors[0]!.message).toMatch(/unknown method id 999/);
    },
  );
});
