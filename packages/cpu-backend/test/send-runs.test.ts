/**
 * When the host hands sends to a kernel (core system.ts tryWrite, ring.ts claimHeld): the first send of
 * a synchronous burst at once, the rest in runs of 32 a lane and at the burst's end. Observed through
 * the lane's own counters while the sending code has not yielded (a spin on the published counters).
 */
import { GrainSystem } from '@ringgrain/core';
import { afterEach, describe, expect, it } from 'vitest';
import { CpuBackend } from '../src/index.ts';
import { Seq } from '../../../test/fixtures/grains.ts';

let system: GrainSystem | undefined;
afterEach(async () => {
  await system?.shutdown({ mode: 'reject', timeoutMs: 1000 });
  system = undefined;
});

/** Spins without yielding until `done()` or `ms` pass; returns whether done() became true. */
function spinUntil(done: () => boolean, ms: number): boolean {
  const end = performance.now() + ms;
  while (performance.now() < end) if (done()) return true;
  return done();
}

describe('sends are handed to the kernel in runs', () => {
  it(
    'the first send of a burst leaves at once; the next 31 wait for the burst to end or for the 32nd; ' +
      'nothing is lost or reordered',
    async () => {
      system = new GrainSystem({
        backends: { cpu: new CpuBackend({ threads: 1 }) },
        logLevel: 'silent',
        handleSignals: false,
      });
      system.register(Seq, { placement: 'cpu', maxActors: 16 });
      await system.start();
      const s = system;
      const ref = s.grain(Seq, 1);
      expect((await ref.stats({})).count).toBe(0);
      await s.idle();
      const base = s.counters(Seq).processed;
      const processed = () => s.counters(Seq).processed - base;
      let seq = 0;
      ref.tell.push({ sender: 0, seq: ++seq });
      // Without yielding: the first tell is processed (the lane publishes its counters between batches).
      expect(spinUntil(() => processed() === 1, 5000)).toBe(true);
      for (let i = 0; i < 10; i++) ref.tell.push({ sender: 0, seq: ++seq });
      // Held until the burst ends: none of these 10 can be taken while this code runs.
      expect(spinUntil(() => processed() > 1, 50)).toBe(false);
      // The 32nd held send publishes the run (10 + 22 = 32): all of them run, still without yielding.
      for (let i = 0; i < 22; i++) ref.tell.push({ sender: 0, seq: ++seq });
      expect(spinUntil(() => processed() === 33, 5000)).toBe(true);
      // A last partial run leaves when the code yields.
      for (let i = 0; i < 5; i++) ref.tell.push({ sender: 0, seq: ++seq });
      expect(spinUntil(() => processed() > 33, 50)).toBe(false);
      await s.idle();
      expect(processed()).toBe(38);
      const st = await ref.stats({});
      expect({ count: st.count, violations: st.violations, last: st.last[0] }).toEqual({
        count: seq,
        violations: 0,
        last: seq,
      });
    },
  );
});
