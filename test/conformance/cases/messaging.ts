/**
 * Delivery: FIFO per sender → actor and one turn at a time, idle(), tellMany and askMany, K2K bursts,
 * chains and fan-out, many actors, string and integer keys.
 */
import { InvalidKeyError, SchemaValidationError, AskManyError } from '@ringgrain/core';
import { expect } from 'vitest';
import { Coordinator, Hop1, Hop2, Hop3, Leaf, Named, Numbers, Sender, Seq } from '../../fixtures/grains.ts';
import { rejection, expectBalanced, until, type ConformanceCase } from './helpers.ts';

export const messagingCases: ConformanceCase[] = [
  {
    name: 'FIFO per sender→actor under concurrent K2K and host senders, one turn at a time per actor',
    grains: [[Seq], [Sender]],
    async run({ system }) {
      const target = 7;
      const senders = 4;
      const perSender = 300;
      const chunk = 25;
      const hostCount = 600;
      const work: Array<Promise<unknown> | undefined> = [];
      let hostSeq = 0;
      for (let round = 0; round < perSender / chunk; round++) {
        // Interleave: a chunk of K2K sends from every Sender actor, then some host sends, then an ask.
        for (let s = 1; s <= senders; s++) {
          work.push(system.grain(Sender, s).emit({ target, from: s, first: round * chunk + 1, count: chunk }));
        }
        for (let i = 0; i < hostCount / (perSender / chunk); i++)
          work.push(system.grain(Seq, target).tell.push({ sender: 0, seq: ++hostSeq }));
      }
      for (let i = 1; i <= 50; i++) work.push(system.grain(Seq, target).pushAsk({ sender: 5, seq: i }));
      await Promise.all(work);
      const total = senders * perSender + hostCount + 50;
      await until('all pushes processed', async () => (await system.grain(Seq, target).stats({})).count === total);
      const st = await system.grain(Seq, target).stats({});
      expect(st.violations).toBe(0);
      expect(st.overlaps).toBe(0);
      expect([...st.last.slice(0, 6)]).toEqual([hostCount, perSender, perSender, perSender, perSender, 50]);
    },
  },
  {
    // On the GPU a worker runs up to 32 queued turns at once, one per distinct actor, in waves: this is
    // the mix it must keep in order (many actors interleaved, repeats of one actor inside a batch).
    name: 'many actors interleaved: per-actor FIFO and one turn at a time hold for tells and asks in bursts',
    grains: [[Seq]],
    isolated: true,
    async run({ system }) {
      const actors = 37;
      const perActor = 400;
      const n = actors * perActor;
      const key = new Int32Array(n);
      const sender = new Uint32Array(n);
      const seq = new Uint32Array(n);
      for (let i = 0; i < n; i++) {
        // Runs of 1..3 messages to one actor, then the next actor: repeats inside a batch, and interleaving.
        const a = Math.floor(i / 3) % actors;
        key[i] = 5000 + a;
        sender[i] = 1;
      }
      const next = new Uint32Array(actors);
      for (let i = 0; i < n; i++) seq[i] = ++next[key[i]! - 5000]!;
      expect(system.tellMany(Seq, 'push', { key, sender, seq })).toBe(n);
      // Asks in flight to every actor at once, several per actor.
      const asks: Array<Promise<{ count: number }>> = [];
      for (let r = 1; r <= 20; r++)
        for (let a = 0; a < actors; a++) asks.push(system.grain(Seq, 5000 + a).pushAsk({ sender: 2, seq: r }));
      const answers = await Promise.all(asks);
      for (const x of answers) expect(x.count).toBeGreaterThan(0);
      await system.idle();
      for (let a = 0; a < actors; a++) {
        const st = await system.grain(Seq, 5000 + a).stats({});
        expect({ actor: a, violations: st.violations, overlaps: st.overlaps, count: st.count }).toEqual({
          actor: a,
          violations: 0,
          overlaps: 0,
          count: next[a]! + 20,
        });
        expect([st.last[1], st.last[2]]).toEqual([next[a], 20]);
      }
    },
  },
  {
    name: 'system.idle() resolves once host messages and the K2K chains they caused are all processed',
    grains: [[Coordinator], [Leaf], [Numbers]],
    // Its own system: the fan-out reaches Leaf keys 0..399, which the shared cases count on.
    isolated: true,
    async run({ system }) {
      // Tells and a K2K fan-out/fan-in, then no polling: after idle() every effect is there.
      for (let i = 0; i < 300; i++) system.grain(Numbers, 9000 + (i % 7)).tell.add({ by: 1 });
      expect(await system.grain(Coordinator, 901).scatter({ n: 400, value: 1 })).toEqual({ expected: 400 });
      await system.idle();
      const r = await system.grain(Coordinator, 901).result({});
      expect(r.count).toBe(400);
      let total = 0;
      for (let k = 0; k < 7; k++) total += (await system.grain(Numbers, 9000 + k).add({ by: 0 })).total;
      expect(total).toBe(300);
    },
  },
  {
    name:
      'tellMany: N tells from columns, in order, counted; a bad column fails with the column and row and ' +
      'sends nothing',
    grains: [[Numbers]],
    isolated: true,
    async run({ system, metrics = async () => system.metrics() }) {
      const n = 5000;
      const key = new Int32Array(n);
      const by = new Int32Array(n);
      for (let i = 0; i < n; i++) {
        key[i] = 100 + (i % 10);
        by[i] = i;
      }
      const sent0 = (await metrics())['Numbers']!.sent;
      expect(system.tellMany(Numbers, 'add', { key, by })).toBe(n);
      await system.idle();
      for (let k = 0; k < 10; k++) {
        let want = 0;
        for (let i = k; i < n; i += 10) want += i;
        expect(await system.grain(Numbers, 100 + k).add({ by: 0 })).toEqual({ count: n / 10 + 1, total: want });
      }
      const sent1 = (await metrics())['Numbers']!.sent;
      expect(sent1 - sent0).toBe(n + 10);
      const bad = new Float64Array(3).fill(1);
      bad[2] = 1.5;
      const e = (() => {
        try {
          system.tellMany(Numbers, 'add', { key: [1, 2, 3], by: bad });
        } catch (err) {
          return err as SchemaValidationError;
        }
        throw new Error('expected a SchemaValidationError');
      })();
      expect(e).toBeInstanceOf(SchemaValidationError);
      expect(e.path).toEqual(['by', 2]);
      expect(() => system.tellMany(Numbers, 'add', { key: [1, 2], by: [1] })).toThrow(
        /column "by" has 1 rows, the key column 2/,
      );
      expect((await metrics())['Numbers']!.sent).toBe(sent1);
    },
  },
  {
    name:
      'askMany: N asks from columns, replies as columns in row order; a failed row rejects with AskManyError ' +
      'naming it',
    grains: [[Numbers]],
    isolated: true,
    async run({ system }) {
      const n = 3000;
      const key = new Int32Array(n);
      const by = new Int32Array(n);
      for (let i = 0; i < n; i++) {
        key[i] = 300 + (i % 7);
        by[i] = i;
      }
      const r = await system.askMany(Numbers, 'add', { key, by });
      expect(r.count).toBeInstanceOf(Float64Array);
      expect(r.count.length).toBe(n);
      // Row i is the (floor(i / 7) + 1)-th add to its actor, whose total is the sum of the rows before it.
      const totals = new Map<number, number>();
      for (let i = 0; i < n; i++) {
        const k = 300 + (i % 7);
        const t = (totals.get(k) ?? 0) + i;
        totals.set(k, t);
        expect(r.count[i], `row ${i}`).toBe(Math.floor(i / 7) + 1);
        expect(r.total[i], `row ${i}`).toBe(t);
      }
      expect((await system.askMany(Numbers, 'add', { key: [], by: [] })).count.length).toBe(0);
      expect(() => system.tellMany(Numbers, 'add', { key: [1], by: [1.5] })).toThrow(SchemaValidationError);
      await expect(system.askMany(Numbers, 'add', { key: [1], by: [1.5] })).rejects.toBeInstanceOf(
        SchemaValidationError,
      );
      // A handler that throws on one row: the call rejects naming that row; the other rows were answered.
      const ok = await system.askMany(Numbers, 'fail', { key: [1, 2], code: [0, 0] });
      expect(ok.ok).toEqual([true, true]);
      const e = await system.askMany(Numbers, 'fail', { key: [1, 2, 3], code: [0, 7, 0] }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(e).toBeInstanceOf(AskManyError);
      expect((e as AskManyError).row).toBe(1);
      expect((e as AskManyError).failedRows).toBe(1);
    },
  },
  {
    name: 'askMany of many times the ring: the rows that find it full wait in order and every row is answered',
    grains: [[Numbers, { ringCapacity: 64 }]],
    isolated: true,
    async run({ system }) {
      const n = 20_000;
      const key = new Int32Array(n).map((_, i) => 400 + (i % 13));
      const by = new Int32Array(n).map((_, i) => i % 5);
      const [r, single] = await Promise.all([
        system.askMany(Numbers, 'add', { key, by }),
        system.grain(Numbers, 400).add({ by: 0 }),
      ]);
      const count = new Map<number, number>();
      for (let i = 0; i < n; i++) {
        const c = (count.get(key[i]!) ?? 0) + 1;
        count.set(key[i]!, c);
        expect(r.count[i], `row ${i}`).toBe(c);
      }
      // The ask sent after the batch waited behind all of its rows (FIFO per sender → actor).
      expect(single.count).toBe(count.get(400)! + 1);
    },
  },
  {
    name: 'a K2K burst larger than every queue of the target kernel arrives whole and in order',
    // A small target ring (the K2K ring on CPU; the host ring on CUDA, whose device queues are 32 × 256).
    grains: [[Seq, { ringCapacity: 64 }], [Sender]],
    isolated: true,
    async run({ system }) {
      // One turn sends 12,000 messages to one actor: more than the target kernel's queues hold together
      // (CUDA: 32 partitions × 256 slots by default). Nothing may fail, drop or reorder.
      const n = 12_000;
      expect(await system.grain(Sender, 1).emit({ target: 3, from: 7, first: 1, count: n })).toEqual({ sent: n });
      await until('the burst processed', async () => (await system.grain(Seq, 3).stats({})).count === n, 60_000);
      const st = await system.grain(Seq, 3).stats({});
      expect(st.violations).toBe(0);
      expect(st.overlaps).toBe(0);
      expect(st.last[7]).toBe(n);
      // Kernel counters are published, not read at the call (CUDA: warp 0 sums the partitions' rows into
      // the control block between its other work): wait until they balance before reading them.
      await system.idle();
      const m = system.metrics();
      expect(m['Sender']!.k2kSent).toBe(n);
      expect(m['Seq']!.k2kReceived).toBe(n);
      expect(m['Sender']!.handlerErrors + m['Seq']!.handlerErrors).toBe(0);
      // Where the backend reports an overflow area, the burst went through it and left it empty.
      const ov = m['Seq']!.overflow;
      if (ov) {
        expect(ov.overflowed).toBeGreaterThan(0);
        expect(ov.inUse).toBe(0);
        expect(ov.exhausted).toBe(0);
      }
    },
  },
  {
    name: '10,000+ distinct actors in one kernel',
    grains: [[Numbers]],
    async run({ system, metrics = async () => system.metrics() }) {
      const n = 10_240;
      const base = 1_000_000;
      await system.idle(); // earlier cases' turns counted before the baseline is read
      const before = (await metrics())['Numbers']!.activations;
      const replies = await Promise.all(
        Array.from({ length: n }, (_, k) => system.grain(Numbers, base + k).add({ by: k })),
      );
      replies.forEach((r, k) => expect(r).toEqual({ count: 1, total: k }));
      // Second round: every actor kept its own slot.
      const again = await Promise.all(
        Array.from({ length: n }, (_, k) => system.grain(Numbers, base + k).add({ by: 1 })),
      );
      again.forEach((r, k) => expect(r).toEqual({ count: 2, total: k + 1 }));
      await expectBalanced(metrics);
      expect((await metrics())['Numbers']!.activations - before).toBe(n);
    },
  },
  {
    name: 'string and integer keys',
    grains: [[Named], [Numbers]],
    async run({ system }) {
      const keys = ['alice', 'bob', '', 'ключ-🔑', 'a'.repeat(100)];
      for (const [i, k] of keys.entries())
        expect(await system.grain(Named, k).inc({ by: i + 1 })).toEqual({ value: i + 1, calls: 1 });
      for (const [i, k] of keys.entries())
        expect(await system.grain(Named, k).inc({ by: 10 })).toEqual({ value: i + 11, calls: 2 });
      // A K2K forward addressed by string key.
      expect(await system.grain(Named, 'alice').viaSelf({ by: 5 })).toEqual({ value: 21, calls: 3 });
      const intKeys = [0, -1, -(2 ** 31), 2 ** 31, 2 ** 40 + 3, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER];
      for (const [i, k] of intKeys.entries())
        expect(await system.grain(Numbers, k).add({ by: i })).toEqual({ count: 1, total: i });
      for (const [i, k] of intKeys.entries())
        expect(await system.grain(Numbers, k).add({ by: 100 })).toEqual({ count: 2, total: i + 100 });
      expect(await rejection(system.grain(Numbers, 1.5).add({ by: 1 }))).toBeInstanceOf(InvalidKeyError);
      expect(await rejection(system.grain(Numbers, 2 ** 60).add({ by: 1 }))).toBeInstanceOf(InvalidKeyError);
      expect(await rejection(system.grain(Named, 5 as unknown as string).inc({ by: 1 }))).toBeInstanceOf(
        InvalidKeyError,
      );
    },
  },
  {
    name: 'K2K chain A→B→C with ctx.forward: the reply to the asker comes from C',
    grains: [[Hop1], [Hop2], [Hop3]],
    async run({ system }) {
      expect(await system.grain(Hop1, 10).go({ x: 5, trail: 0 })).toEqual({ x: 33, trail: 123, by: 3 });
      const many = await Promise.all(
        Array.from({ length: 200 }, (_, i) => system.grain(Hop1, 10).go({ x: i, trail: 9 })),
      );
      many.forEach((r, i) => expect(r).toEqual({ x: (i * 2 + 1) * 3, trail: 9123, by: 3 }));
      expect(await system.grain(Hop2, 11).seen({})).toEqual({ seen: 201 });
      await system.idle(); // counters are published between batches: exact once idle
      const m = system.metrics();
      expect(m['Hop1']!.replied).toBe(0);
      expect(m['Hop2']!.k2kReceived).toBe(201);
      expect(m['Hop3']!.replied).toBe(201);
    },
  },
  {
    name: 'fan-out / fan-in across grain classes',
    grains: [[Coordinator], [Leaf]],
    async run({ system, metrics = async () => system.metrics() }) {
      const n = 100;
      expect(await system.grain(Coordinator, 1).scatter({ n, value: 10 })).toEqual({ expected: n });
      await until('all gathers', async () => (await system.grain(Coordinator, 1).result({})).count === n);
      let sum = 0;
      for (let i = 0; i < n; i++) sum += 2 * (10 + i);
      expect(await system.grain(Coordinator, 1).result({})).toEqual({ expected: n, count: n, sum });
      expect(await system.grain(Leaf, 5).get({})).toEqual({ total: 15, hits: 1 });
      await system.idle(); // counters are published between batches: exact once idle
      expect((await metrics())['Leaf']!.activations).toBe(n);
    },
  },
];
