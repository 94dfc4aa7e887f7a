import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrainSystem, type StorageErrorEvent } from '@ringgrain/core';
import { ReminderNotOwnedError } from '@ringgrain/core/errors';
import { StateFencedError, stateTableSpec, type StateTable } from '@ringgrain/core/store';
import type { GrainDef } from '@ringgrain/core/types';
import { InlineBackend } from '@ringgrain/inline-backend';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { natsCluster, type NatsServerHandle } from '@ringgrain/cluster-nats';
import { partitionOf } from '@ringgrain/core/cluster';
import { Reminded } from '../fixtures/timers.ts';
import { clusterOpts, natsSkip, startServer } from './nats.ts';

/**
 * Reminders in a cluster: a reminder is kept and fired by the silo that serves its actor's partition
 * (as Orleans), so it fires once per due time over the cluster; a partition's reminders move with it
 * (the new owner reads them from the store once its claim committed); and a reminder write carries the
 * writer's fence, so a stale owner's is refused. Silos in this process (inline backend) share one LMDB
 * store and the test's injected clock; the client's advanceTimers() runs every silo's due reminders.
 */
describe.skipIf(natsSkip !== undefined)(`cluster reminders${natsSkip ? ` (skipped: ${natsSkip})` : ''}`, () => {
  let server: NatsServerHandle;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rg-cluster-reminders-'));
  const store = new LmdbStore({ dataDir: dir });
  const clock = { now: 1_000_000 };
  const PERIOD = 1000;
  const N = 48;
  const keys = Array.from({ length: N }, (_, k) => k);
  const silos: GrainSystem[] = [];
  /** Storage errors on the silos; the reminder writes' must stay empty until the stale owner's case. */
  const errors: StorageErrorEvent[] = [];
  let client: GrainSystem;
  /** When the reminders fire next (they all share one grid: set together, first at +500). */
  let due = 0;

  const silo = () => {
    const s = new GrainSystem({
      backends: { inline: new InlineBackend() },
      handleSignals: false,
      logLevel: 'silent',
      clock: () => clock.now,
      cluster: natsCluster(clusterOpts(server, 'reminders')),
    });
    s.register(Reminded, { placement: 'inline', storage: store, flushIntervalMs: 60_000 });
    s.on('storageError', (e) => errors.push(e));
    return s;
  };
  /** Polls a condition (bounded): placement and claims settle on their own schedule. */
  async function until(what: string, pred: () => boolean, timeoutMs = 30_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!pred()) {
      if (Date.now() > end) throw new Error(`not reached within ${timeoutMs} ms: ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  /** Every key's reminder is armed on exactly one silo: the one that owns its partition (by that silo's table). */
  const placed = () => {
    const on = new Map<number, string[]>();
    for (const s of silos)
      for (const r of s.reminders(Reminded).list())
        on.set(r.key as number, [...(on.get(r.key as number) ?? []), s.cluster!.self]);
    return keys.every((k) => {
      const ids = on.get(k);
      return ids?.length === 1 && silos.every((s) => s.cluster!.ownerOf('Reminded', k) === ids[0]);
    });
  };
  const nudges = async () =>
    Array.from((await client.askMany(Reminded, 'get', { key: Int32Array.from(keys) })).nudges as ArrayLike<number>);
  /** Reminders fired so far over the silos now in the cluster. */
  const fired = () => silos.reduce((a, s) => a + s.metrics()['Reminded']!.reminders!.fired, 0);
  /**
   * The clock reaches `at` and every silo runs its due reminders; resolves to the fires over the cluster.
   * Counted from the silos' metrics, not advanceTimers()'s answer: a silo's sweep reads the same clock and
   * may fire a due reminder before the client's advanceTimers reaches it (once either way).
   */
  async function advance(at: number): Promise<number> {
    const before = fired();
    clock.now = at;
    await client.advanceTimers();
    // A fire is a tell on the silo that keeps the reminder (it owns the actor): each silo's own idle() covers it.
    // (Not the client's idle(), the cluster's: it sums counts over live members, and a silo that left took its own.)
    await Promise.all(silos.map((s) => s.idle()));
    return fired() - before;
  }
  /** One period: the clock reaches the next due time, every reminder fires once over the cluster. */
  async function period(): Promise<void> {
    const before = await nudges();
    expect(await advance(due)).toBe(N);
    due += PERIOD;
    expect(await nudges()).toEqual(before.map((n) => n + 1));
    // The fires' nextDue rows are committed before anything moves (a move reads them from the store).
    await Promise.all(silos.map((s) => s.flush()));
  }

  beforeAll(async () => {
    server = await startServer();
    silos.push(silo(), silo(), silo());
    await Promise.all(silos.map((s) => s.start()));
    client = new GrainSystem({
      backends: {},
      handleSignals: false,
      logLevel: 'silent',
      clock: () => clock.now,
      askTimeoutMs: 30_000,
      cluster: natsCluster(clusterOpts(server, 'reminders')),
    });
    await client.start();
    await client.cluster!.waitFor(() => client.cluster!.settled(3), 20_000);
    // Each actor sets its reminder in a handler: on its owner, written under the owner's fence.
    await Promise.all(keys.map((k) => client.grain(Reminded, k).remind({ periodMs: PERIOD, dueMs: 500 })));
    due = clock.now + 500;
    await Promise.all(silos.map((s) => s.flush()));
    await until('every reminder armed on its owner', placed);
  }, 60_000);
  afterAll(async () => {
    await client?.shutdown();
    await Promise.all(silos.map((s) => s.shutdown()));
    await server?.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('each reminder fires exactly once per period over three silos, on the silo that owns its actor', async () => {
    expect(silos.filter((s) => s.reminders(Reminded).list().length > 0).length).toBeGreaterThanOrEqual(2);
    // Just before the due time nothing fires anywhere.
    const start = await nudges();
    expect(await advance(due - 1)).toBe(0);
    expect(await nudges()).toEqual(start);
    for (let i = 0; i < 4; i++) await period();
    // The system API sets a reminder only where the key's partition is served.
    const k = keys[0]!;
    const other = silos.find((s) => s.cluster!.ownerOf('Reminded', k) !== s.cluster!.self)!;
    await expect(other.reminders(Reminded).set(k, 'nudge', { periodMs: PERIOD })).rejects.toBeInstanceOf(
      ReminderNotOwnedError,
    );
    expect(errors.filter((e) => e.op === 'reminder')).toEqual([]);
  }, 120_000);

  const MOVE =
    "a joining silo takes its partitions' reminders from the store, a leaving one hands them back; " +
    'each still fires once per period';
  it(MOVE, async () => {
    await period();
    const fourth = silo();
    await fourth.start();
    silos.push(fourth);
    await client.cluster!.waitFor(() => client.cluster!.settled(4), 20_000);
    await until('reminders placed over four silos', () => silos.every((s) => s.cluster!.settled(4)) && placed());
    expect(fourth.reminders(Reminded).list().length).toBeGreaterThan(0);
    for (let i = 0; i < 2; i++) await period();
    expect(fourth.metrics()['Reminded']!.reminders!.fired).toBeGreaterThan(0);

    // The fourth leaves: its partitions (and their reminders) go back to the three.
    await fourth.shutdown();
    silos.pop();
    await client.cluster!.waitFor(() => client.cluster!.settled(3), 20_000);
    await until('reminders placed over three silos', () => silos.every((s) => s.cluster!.settled(3)) && placed());
    for (let i = 0; i < 2; i++) await period();
    expect(errors.filter((e) => e.op === 'reminder')).toEqual([]);
  }, 120_000);

  const STALE =
    "a stale owner's reminder writes are refused (StateFencedError, typed and counted) " +
    'and it stops firing that partition';
  it(STALE, async () => {
    const count = client.cluster!.conn.table('Reminded')!.owners.length;
    const ownerOf = (key: number) => silos.find((s) => s.cluster!.ownerOf('Reminded', key) === s.cluster!.self)!;
    const reminderRows = async () =>
      (await store.reminders!(stateTableSpec(Reminded.grain as GrainDef, 'layout'))).list();
    const fencedOn = (s: GrainSystem) => s.metrics()['Reminded']!.reminders!.fenced;
    const k = keys[1]!;
    const p = partitionOf(k, count);
    // A second partition, of another key: its owner learns it is stale only when a fire's nextDue write is refused.
    const k2 = keys.find((x) => partitionOf(x, count) !== p)!;
    const p2 = partitionOf(k2, count);
    const stale = keys.filter((x) => partitionOf(x, count) === p);
    const stale2 = keys.filter((x) => partitionOf(x, count) === p2);
    const owner = ownerOf(k);
    const owner2 = ownerOf(k2);
    // Another owner claims both partitions in the store (as a silo that took them over would): these silos are stale
    // there now.
    const table = (await store.table(stateTableSpec(Reminded.grain as GrainDef, 'layout'))) as StateTable<number>;
    const epochs = [owner.cluster!.claimedEpoch('Reminded', k)!, owner2.cluster!.claimedEpoch('Reminded', k2)!];
    expect(Math.min(...epochs)).toBeGreaterThan(0);
    await table.claim!([p, p2], [Math.max(...epochs) + 10, Math.max(...epochs) + 10]);
    const fenced0 = fencedOn(owner);

    // The system API's set on the stale owner: refused, typed; nothing of it stored.
    const refused = await owner
      .reminders(Reminded)
      .set(k, 'nudge', { periodMs: 7 })
      .then(
        () => undefined,
        (e: unknown) => e as Error,
      );
    expect(refused).toBeInstanceOf(StateFencedError);
    expect((refused as StateFencedError).code).toBe('STATE_FENCED');
    expect((refused as StateFencedError).partition).toBe(p);
    expect(fencedOn(owner)).toBe(fenced0 + 1);
    expect((await reminderRows()).find((r) => r.key === k)?.periodMs).toBe(PERIOD);
    expect(errors.some((e) => e.op === 'reminder' && e.error instanceof StateFencedError && e.keys.includes(k))).toBe(
      true,
    );
    // The stale owner fires none of that partition's reminders any more.
    expect(
      owner
        .reminders(Reminded)
        .list()
        .filter((r) => stale.includes(r.key as number)),
    ).toEqual([]);
    // A handler's setReminder there (the turn still runs on the stale silo): refused too, a storageError event.
    const handlerErrors = errors.length;
    await client.grain(Reminded, k).remind({ periodMs: 7, dueMs: 0 });
    await until("the handler's refused write reported", () =>
      errors.slice(handlerErrors).some((e) => e.op === 'reminder' && e.error instanceof StateFencedError),
    );
    expect((await reminderRows()).find((r) => r.key === k)?.periodMs).toBe(PERIOD);
    expect(
      owner
        .reminders(Reminded)
        .list()
        .filter((r) => stale.includes(r.key as number)),
    ).toEqual([]);

    // The next period: p2's owner still fires p2's reminders (it does not know yet), its nextDue write is
    // refused for p2 only (counted per row), the rest of the batch is written, and p2 stops firing there.
    const fenced2 = fencedOn(owner2);
    let before = await nudges();
    expect(await advance(due)).toBe(N - stale.length);
    await Promise.all(silos.map((s) => s.flush()));
    expect(fencedOn(owner2)).toBe(fenced2 + stale2.length);
    expect(
      owner2
        .reminders(Reminded)
        .list()
        .filter((r) => stale2.includes(r.key as number)),
    ).toEqual([]);
    const rows = await reminderRows();
    const kept = keys.filter((x) => !stale.includes(x) && !stale2.includes(x));
    for (const x of kept) expect(rows.find((r) => r.key === x)?.nextDue, `key ${x}`).toBe(due + PERIOD);
    for (const x of [...stale, ...stale2])
      expect(rows.find((r) => r.key === x)?.nextDue, `key ${x}`).toBeLessThanOrEqual(due);
    expect(await nudges()).toEqual(before.map((n, i) => (stale.includes(keys[i]!) ? n : n + 1)));
    due += PERIOD;
    // And after: every reminder but the two stale partitions' fires once.
    before = await nudges();
    expect(await advance(due)).toBe(N - stale.length - stale2.length);
    due += PERIOD;
    expect(await nudges()).toEqual(
      before.map((n, i) => (stale.includes(keys[i]!) || stale2.includes(keys[i]!) ? n : n + 1)),
    );
  }, 60_000);
});
