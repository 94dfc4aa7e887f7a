import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrainSystem } from '@ringgrain/core';
import { SiloUnavailableError } from '@ringgrain/core/errors';
import type { GrainDef } from '@ringgrain/core/types';
import { stateTableSpec, type StateTable } from '@ringgrain/core/store';
import { partitionOf } from '@ringgrain/core/cluster';
import { PostgresStore } from '@ringgrain/postgres-store';
import { natsCluster, type NatsServerHandle } from '@ringgrain/cluster-nats';
import { startPostgres, type PgServer } from '../../packages/postgres-store/test/server.ts';
import { Counter } from './grains.ts';
import { clusterOpts, natsSkip, startServer } from './nats.ts';
import { spawnSilo, type SiloProcess } from './procs.ts';

/**
 * Three silo processes on one PostgreSQL store (flushing every 200 ms), the test a client streaming tells.
 * Failover: one of the three is killed with SIGKILL under load; every key answers within 5 s, every state
 * is at least its last flushed value, every tell the client sent is confirmed or counted lost, and every
 * stored row was last written under the epoch its partition is claimed at now (its current activation; an
 * older owner's write is refused by the store: test/cluster/fencing.test.ts). Join: a fourth silo process
 * joins the two survivors under load; partitions move with their states and every tell lands (counted end
 * to end). The cases run in this order, on one cluster (four silo processes in all: the file stays short).
 */
describe.skipIf(natsSkip !== undefined)(
  `cluster under load with a PostgreSQL store${natsSkip ? ` (skipped: ${natsSkip})` : ''}`,
  () => {
    let server: NatsServerHandle;
    let pgServer: PgServer;
    const silos: SiloProcess[] = [];
    const clients: GrainSystem[] = [];
    const stores: PostgresStore[] = [];
    const KEYS = 200;
    const PARTITIONS = 256;
    const spec = () => stateTableSpec(Counter.grain as GrainDef, 'layout');

    beforeAll(async () => {
      [server, pgServer] = await Promise.all([startServer(), startPostgres()]);
    }, 60_000);
    afterAll(async () => {
      for (const c of clients) await c.shutdown();
      await Promise.all(silos.map((s) => s.kill('SIGKILL')));
      for (const s of stores) await s.close();
      await server?.stop();
      await pgServer?.stop();
    });

    let shared: Awaited<ReturnType<typeof start>> | undefined;
    const start = async (name: string, n: number) => {
      const env = { RG_PG_URL: pgServer.url, RG_PG_SCHEMA: name, RG_FLUSH_MS: '200' };
      // deadMs 2.5 s: a killed silo is found within the 5 s target, and a survivor whose loop a loaded 2-core
      // machine holds for a second or two is not declared dead with it.
      const spawn = () => spawnSilo(server, name, { heartbeatMs: 250, deadMs: 2500 }, 'counter', env);
      const started = await Promise.all(Array.from({ length: n }, spawn));
      silos.push(...started);
      const client = new GrainSystem({
        backends: {},
        handleSignals: false,
        logLevel: 'silent',
        cluster: natsCluster(clusterOpts(server, name)),
      });
      clients.push(client);
      await client.start();
      await client.cluster!.waitFor(() => client.cluster!.settled(n), 20_000);
      const reader = new PostgresStore({ connection: pgServer.url, schema: name });
      stores.push(reader);
      await reader.open();
      const table = (await reader.table(spec())) as StateTable<number>;
      return { client, table, spawn, started };
    };

    /** Every key's stored count and epoch. Counter's state: total f64 at 0, count u32 at 8. */
    const stored = async (table: StateTable<number>) => {
      const rows = new Map<number, { count: number; epoch: number }>();
      for (let k = 0; k < KEYS; k++) {
        const r = await table.get(k);
        if (r)
          rows.set(k, {
            count: new DataView(r.state.buffer, r.state.byteOffset).getUint32(8, true),
            epoch: r.epoch ?? 0,
          });
      }
      return rows;
    };
    /** Waits (bounded) until the store holds `want(k)` for every key: the silos' 200 ms flushes have run. */
    const flushed = async (table: StateTable<number>, want: (k: number) => number, ms = 30_000) => {
      const until = performance.now() + ms;
      for (;;) {
        const rows = await stored(table);
        const behind = Array.from({ length: KEYS }, (_, k) => k).filter((k) => (rows.get(k)?.count ?? 0) !== want(k));
        if (behind.length === 0) return rows;
        if (performance.now() > until)
          throw new Error(
            `store behind for ${behind.length} keys after ${ms} ms ` +
              `(key ${behind[0]}: ${rows.get(behind[0]!)?.count} of ${want(behind[0]!)})`,
          );
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const counts = async (client: GrainSystem) =>
      (await client.askMany(Counter, 'get', { key: Int32Array.from({ length: KEYS }, (_, k) => k) }))
        .count as ArrayLike<number>;

    /**
     * Streams rounds of tells (one per key, every 25 ms: ~8,000 tells/s) until `stop()`; the silos keep up on 2 cores.
     */
    const stream = (client: GrainSystem, sent: number[]) => {
      let on = true;
      const done = (async () => {
        while (on) {
          for (let k = 0; k < KEYS; k++) {
            client.grain(Counter, k).tell.add({ n: 1 });
            sent[k]!++;
          }
          await new Promise((r) => setTimeout(r, 25));
        }
      })();
      return async () => {
        on = false;
        await done;
      };
    };

    it('failover under load: kill -9 one of three; every key answers again (the time printed), states ≥ last ' +
      'flushed, every tell confirmed or counted lost, rows written under their current claims', async () => {
      const { client, table, started } = (shared = await start('pg', 3));
      const c = client.cluster!;
      const sent = new Array<number>(KEYS).fill(0);
      for (let k = 0; k < KEYS; k++) for (let i = 0; i < 5; i++) client.grain(Counter, k).tell.add({ n: 1 });
      sent.fill(5);
      expect(Array.from(await counts(client)).every((n) => n === 5)).toBe(true);
      const before = await flushed(table, () => 5);
      const victim = started[0]!;
      const victimKeys = new Set(
        Array.from({ length: KEYS }, (_, k) => k).filter((k) => c.ownerOf('Counter', k) === victim.id),
      );
      const lost: number[] = [];
      c.on('tellsLost', (e) => lost.push(e.count));

      const stop = stream(client, sent);
      await new Promise((r) => setTimeout(r, 300)); // load before the kill (not for correctness)
      const killedAt = performance.now();
      await victim.kill('SIGKILL');
      // Every key answers again; asks that reached the dead silo fail typed meanwhile.
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
      await stop();
      expect(answered.size).toBe(KEYS);
      expect(recoveredMs).toBeLessThan(30_000);
      await c.waitFor(() => c.settled(2), 20_000);

      const got = await counts(client);
      for (let k = 0; k < KEYS; k++) {
        // At least the last flushed value (the dead silo's unwritten turns are gone: at most once), at most what was
        // sent.
        expect(got[k]!, `key ${k}`).toBeGreaterThanOrEqual(before.get(k)!.count);
        expect(got[k]!, `key ${k}`).toBeLessThanOrEqual(sent[k]!);
        // The survivors' keys lost nothing.
        if (!victimKeys.has(k)) expect(got[k]!, `key ${k}`).toBe(sent[k]);
      }
      const m = c.metrics();
      // Every tell the client sent was confirmed by the silo it went to or counted lost (once, also as events).
      expect(m['unconfirmedTells']).toBe(0);
      expect(m['parkedNow']).toBe(0);
      expect(Number(m['tellsConfirmed']) + Number(m['lostTells'])).toBe(m['tellsOut']);
      expect(lost.reduce((a, b) => a + b, 0)).toBe(m['lostTells']);
      // Single activation: each key's row was last written under the claim its partition holds now; the dead
      // silo's keys under a newer claim than before the kill.
      const rows = await flushed(table, (k) => got[k]!);
      const claims = await table.claimed!(Array.from({ length: PARTITIONS }, (_, p) => p));
      for (let k = 0; k < KEYS; k++) {
        const { epoch } = rows.get(k)!;
        expect(epoch, `key ${k}`).toBe(claims[partitionOf(k, PARTITIONS)]);
        if (victimKeys.has(k)) expect(epoch, `key ${k}`).toBeGreaterThan(before.get(k)!.epoch);
        else expect(epoch, `key ${k}`).toBe(before.get(k)!.epoch);
      }
      const victimSent = [...victimKeys].reduce((a, k) => a + sent[k]!, 0);
      console.log(
        `failover (PostgreSQL): every key answered ${recoveredMs.toFixed(0)} ms after kill ` +
          `-9; ${m['lostTells']} tells counted lost of ${victimSent} sent to the dead silo's ` +
          `keys; ${victimKeys.size} keys moved`,
      );
    }, 180_000);
    it('join under load: a fourth silo process joins the two survivors while tells stream in; partitions move ' +
      'with their states, zero tells lost', async () => {
      // The two survivors of the failover above (its test ran first: their states are on the store).
      const { client, table, spawn } = shared!;
      const c = client.cluster!;
      await c.waitFor(() => c.settled(2), 10_000);
      const t1 = performance.now();
      const sent = Array.from(await counts(client));
      const lostBefore = c.metrics()['lostTells'];
      const stop = stream(client, sent);
      await new Promise((r) => setTimeout(r, 300)); // load before the join (not for correctness)
      const fourth = await spawn();
      silos.push(fourth);
      await c.waitFor(() => c.settled(3), 40_000);
      const t2 = performance.now();
      await new Promise((r) => setTimeout(r, 300)); // load after the move (not for correctness)
      await stop();
      const got = await counts(client);
      const wrong = sent.map((n, k) => [k, n, got[k]!]).filter(([, n, g]) => n !== g);
      expect(wrong.slice(0, 5), `${wrong.length} keys differ [key, sent, counted]`).toEqual([]);
      const moved = Array.from({ length: KEYS }, (_, k) => c.ownerOf('Counter', k)).filter(
        (o) => o === fourth.id,
      ).length;
      expect(moved).toBeGreaterThan(KEYS / 8);
      const m = c.metrics();
      expect(m['lostTells']).toBe(lostBefore);
      expect(m['unconfirmedTells']).toBe(0);
      expect(Number(m['tellsConfirmed']) + Number(m['lostTells'])).toBe(m['tellsOut']);
      // What each key counted is what the store ends with, written under its partition's current claim.
      const rows = await flushed(table, (k) => got[k]!);
      const claims = await table.claimed!(Array.from({ length: PARTITIONS }, (_, p) => p));
      for (let k = 0; k < KEYS; k++) expect(rows.get(k)!.epoch, `key ${k}`).toBe(claims[partitionOf(k, PARTITIONS)]);
      console.log(
        `join under load: ${sent.reduce((a, b) => a + b, 0)} tells, ${moved} of ${KEYS} keys moved to the ` +
          `joining silo, none lost (it joined in ${(t2 - t1).toFixed(0)} ms, ` +
          `checks ${(performance.now() - t2).toFixed(0)} ms)`,
      );
    }, 180_000);
  },
);
