/**
 * Chains across pool threads (issue 37): a token passed around a ring of keys with ctx.send, so nearly
 * every hop goes to a lane another thread consumes, with the pool's adaptive idle spin (default) and with
 * it off (maxSpinMs 0.05: a thread parks soon and each such hop wakes it; there with the paced spin,
 * spinPause). Every hop arrives once, each
 * key sees its predecessor's messages in the order sent (FIFO per sender → actor) and runs one turn at a
 * time. Waits on system.idle(); no timing.
 */
import { GrainSystem } from '@ringgrain/core';
import { laneOfKey } from '@ringgrain/core/backend';
import { afterEach, describe, expect, it } from 'vitest';
import { CpuBackend, type CpuBackendOptions } from '../src/index.ts';
import { ChainLink } from './chain-grains.ts';

const THREADS = 3;
const N = 48;

let system: GrainSystem | undefined;
afterEach(async () => {
  await system?.shutdown({ mode: 'reject', timeoutMs: 1000 });
  system = undefined;
});

async function start(options: CpuBackendOptions): Promise<GrainSystem> {
  const backend = new CpuBackend({ threads: THREADS, ...options });
  system = new GrainSystem({ backends: { cpu: backend }, logLevel: 'silent', handleSignals: false });
  system.register(ChainLink, { placement: 'cpu', maxActors: N });
  await system.start();
  return system;
}

/** Tokens started at `starts`, each `hops` hops around the ring: every key's turns, in JS. */
function model(starts: number[], hops: number): number[] {
  const turns = new Array<number>(N).fill(0);
  for (const s of starts) for (let i = 0, k = s; i <= hops; i++, k = (k + 1) % N) turns[k]!++;
  return turns;
}

describe('chains across pool threads', () => {
  it('the ring crosses lanes: most consecutive keys live on different threads', () => {
    let crossing = 0;
    for (let k = 0; k < N; k++) if (laneOfKey(k, THREADS) !== laneOfKey((k + 1) % N, THREADS)) crossing++;
    expect(crossing).toBeGreaterThan(N / 2);
  });

  const variants: Array<[string, CpuBackendOptions]> = [
    ['adaptive spin', {}],
    ['maxSpinMs 0.05 (parks soon), spinPause 4 (paced spin)', { maxSpinMs: 0.05, spinPause: 4 }],
  ];
  for (const [how, options] of variants) {
    it(`${how}: one token, then 12 at once: every hop once, FIFO per sender, one turn at a time`, async () => {
      const s = await start(options);
      const ring = (key: number, left: number) => s.grain(ChainLink, key).tell.pass({ n: N, left, no: 0 });
      const before = s.counters(ChainLink);
      ring(0, 600);
      await s.idle();
      const starts = Array.from({ length: 12 }, (_, i) => 4 * i);
      for (const k of starts) ring(k, 100);
      await s.idle();
      const c = s.counters(ChainLink);
      expect(c.k2kReceived - before.k2kReceived).toBe(600 + 12 * 100);
      expect(c.handlerErrors).toBe(0);
      expect(c.rejected).toBe(0);
      const one = model([0], 600);
      const many = model(starts, 100);
      const got = await Promise.all(Array.from({ length: N }, (_, k) => s.grain(ChainLink, k).stats({})));
      expect(got.map((g) => g.turns)).toEqual(one.map((x, k) => x + many[k]!));
      expect(got.map((g) => g.violations + g.overlaps)).toEqual(new Array(N).fill(0));
    });
  }
});
