import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrainSystem } from '@ringgrain/core';
import { SiloUnavailableError } from '@ringgrain/core/errors';
import { natsCluster, type NatsServerHandle } from '@ringgrain/cluster-nats';
import { Counter } from './grains.ts';
import { natsSkip, startServer } from './nats.ts';
import { spawnSilo, type SiloProcess } from './procs.ts';

/**
 * Three silo processes (CPU backend); the test is a client. One silo is killed with SIGKILL while an ask
 * runs on it and tells to it are in flight: the ask fails typed, the unconfirmed tells are counted and
 * raised as an event, and every key answers again within 5 s (default heartbeat and dead timeout).
 */
describe.skipIf(natsSkip !== undefined)(`cluster failover${natsSkip ? ` (skipped: ${natsSkip})` : ''}`, () => {
  let server: NatsServerHandle;
  let silos: SiloProcess[] = [];
  let client: GrainSystem;
  const KEYS = 300;

  beforeAll(async () => {
    server = await startServer();
    silos = await Promise.all([0, 1, 2].map(() => spawnSilo(server, 'fo')));
    client = new GrainSystem({
      backends: {},
      handleSignals: false,
      logLevel: 'silent',
      cluster: natsCluster({ servers: server.url, name: 'fo', ...server.auth }),
    });
    await client.start();
    await client.cluster!.waitFor(() => client.cluster!.settled(3), 15_000);
  });
  afterAll(async () => {
    await client?.shutdown();
    await Promise.all(silos.map((s) => s.kill('SIGKILL')));
    await server?.stop();
  });

  it('kill -9 of one silo: its ask fails typed, lost tells are counted, every key answers again (the time ' +
    'printed)', async () => {
    const c = client.cluster!;
    for (let k = 0; k < KEYS; k++) await client.grain(Counter, k).add({ n: 1 });
    const victim = silos[0]!;
    const victimKey = Array.from({ length: KEYS }, (_, k) => k).find((k) => c.ownerOf('Counter', k) === victim.id)!;
    const lost: number[] = [];
    c.on('tellsLost', (e) => lost.push(e.count));
    // A slow turn runs on the victim while it dies.
    const slow = client.grain(Counter, victimKey).slow({ ms: 10_000 });
    let sentToVictim = 0;
    for (let i = 0; i < 2000; i++) {
      const k = i % KEYS;
      if (c.ownerOf('Counter', k) === victim.id) sentToVictim++;
      client.grain(Counter, k).tell.add({ n: 1 });
    }
    await new Promise((r) => setTimeout(r, 50)); // let the frames leave before the kill (not for correctness)
    const killedAt = performance.now();
    await victim.kill('SIGKILL');
    await expect(slow).rejects.toBeInstanceOf(SiloUnavailableError);
    // Every key answers again (asks that went to the dead silo meanwhile fail typed and are retried).
    const answered = new Set<number>();
    // The 5 s target is the figure printed below (and bench/cluster.ts's); the test checks that every key
    // comes back, within a bound a loaded 2-core machine meets.
    while (answered.size < KEYS && performance.now() - killedAt < 30_000) {
      const todo = Array.from({ length: KEYS }, (_, k) => k).filter((k) => !answered.has(k));
      const rs = await Promise.allSettled(todo.map((k) => client.grain(Counter, k).get({})));
      rs.forEach((r, i) => {
        if (r.status === 'fulfilled') answered.add(todo[i]!);
        else expect(r.reason).toBeInstanceOf(SiloUnavailableError);
      });
    }
    const recoveredMs = performance.now() - killedAt;
    expect(answered.size).toBe(KEYS);
    expect(recoveredMs).toBeLessThan(30_000);
    const m = c.metrics();
    // Unconfirmed tells of the dead silo: counted once, in the metrics and in the event.
    expect(lost.reduce((a, b) => a + b, 0)).toBe(m['lostTells']);
    expect(Number(m['lostTells'])).toBeLessThanOrEqual(sentToVictim);
    expect(Number(m['asksFailedDead'])).toBeGreaterThanOrEqual(1);
    expect(
      c
        .live()
        .filter((s) => !s.client)
        .map((s) => s.id)
        .sort(),
    ).toEqual([silos[1]!.id, silos[2]!.id].sort());
    // Keys of the survivors kept their state (every add counted); the victim's keys start afresh.
    for (let k = 0; k < KEYS; k++) {
      const r = await client.grain(Counter, k).get({});
      expect(r.count).toBeLessThanOrEqual(1 + Math.ceil(2000 / KEYS));
    }
    console.log(
      `failover: every key answered ${recoveredMs.toFixed(0)} ms after kill -9; ${m['lostTells']} ` +
        `of ${sentToVictim} tells to the dead silo unconfirmed (lost)`,
    );
  }, 120_000);
});
