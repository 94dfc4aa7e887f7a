/**
 * Cycles with a TTL: balls bounce between two classes' actors (across threads, through a small ring and
 * a default one) until their ttl runs out; idle() then returns with exact totals per actor.
 */
import type { GrainSystem } from '@ringgrain/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BALL_ACTORS, Ping, Pong, nextHop } from './grains.ts';
import { CONFIGS, guard, rng, settle, startSystem } from './helpers.ts';

describe.each(CONFIGS)('$name', (cfg) => {
  let system: GrainSystem;
  beforeAll(async () => {
    system = await startSystem(cfg.backend, [[Ping, { ringCapacity: 8 }], Pong], { threads: cfg.threads });
  });
  afterAll(() => system?.shutdown());

  const model = {
    ping: Array.from({ length: BALL_ACTORS }, () => ({ count: 0, sum: 0 })),
    pong: Array.from({ length: BALL_ACTORS }, () => ({ count: 0, sum: 0 })),
  };
  let hops = 0;

  /** The model of one ball: the same hops the handlers make. */
  function play(cls: 'ping' | 'pong', key: number, ball: number, ttl: number): void {
    for (;;) {
      const a = model[cls][key]!;
      a.count += 1;
      a.sum += ball * 1000 + ttl;
      hops++;
      if (ttl <= 0) return;
      const next = nextHop(ball, ttl, key);
      cls = ttl % 2 === 0 ? 'ping' : 'pong';
      key = next;
      ttl -= 1;
    }
  }

  it.each([1, 2])(
    'round %i: 80 balls with ttl up to 600 from host tells and asks; idle() returns once every hop ran, totals exact',
    async (round) => {
      const r = rng(round * 31 + cfg.threads);
      const asks: Promise<unknown>[] = [];
      for (let b = 0; b < 80; b++) {
        const ball = round * 100 + b;
        const ttl = r.int(600);
        const key = r.int(BALL_ACTORS);
        const cls = r.next() < 0.5 ? 'ping' : 'pong';
        play(cls, key, ball, ttl);
        // An ask of a tell-only method resolves once its own turn ran (not the chain it started).
        if (b % 4 === 0)
          asks.push(
            cls === 'ping'
              ? system.grain(Ping, key).bounce({ ball, ttl })
              : system.grain(Pong, key).bounce({ ball, ttl }),
          );
        else if (cls === 'ping') system.grain(Ping, key).tell.bounce({ ball, ttl });
        else system.grain(Pong, key).tell.bounce({ ball, ttl });
      }
      expect(await guard(Promise.all(asks), 'asks')).toEqual(asks.map(() => undefined));
      expect(await settle(system, `round ${round}`)).toEqual([]);
      const m = system.metrics();
      expect(m['Ping']!.processed + m['Pong']!.processed).toBe(hops + readsSoFar);
      const pings = await Promise.all(Array.from({ length: BALL_ACTORS }, (_, k) => system.grain(Ping, k).read({})));
      const pongs = await Promise.all(Array.from({ length: BALL_ACTORS }, (_, k) => system.grain(Pong, k).read({})));
      readsSoFar += 2 * BALL_ACTORS;
      expect(pings).toEqual(model.ping);
      expect(pongs).toEqual(model.pong);
      expect(hops).toBeGreaterThan(round * 10_000);
    },
  );
  let readsSoFar = 0;
});
