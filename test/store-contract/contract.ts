/**
 * THE state store contract: one list of cases that every StateStore passes. A store package's test
 * calls `storeContract(fixture)` with a fixture that makes its stores (a fresh, empty location each
 * time) and can damage a row with the database's own client, never through the store.
 */
import { StateVersionConflictError } from '@ringgrain/core/errors';
import type { StateStore } from '@ringgrain/core/types';
import {
  StateBatchError,
  StateDecodeError,
  StateFencedError,
  StateScanError,
  StateStoreClosedError,
  StateStoreUnavailableError,
  scanPages,
  type StateKey,
  type StateTable,
} from '@ringgrain/core/store';
import { afterAll, describe, expect, it } from 'vitest';

export interface StoreFixture {
  readonly name: string;
  /** A store over a fresh, empty location (not yet opened). */
  make(): Promise<StateStore>;
  /** A second store over the same location as `store` (for reopen-after-close). */
  reopen(store: StateStore): StateStore;
  /** Writes a row for `key` that cannot decode (a bad version or value), with the database's own client. */
  corrupt(store: StateStore, table: string, key: StateKey): Promise<void>;
  /** A store whose location cannot be opened or reached. */
  unreachable(): StateStore;
}

const SIZE = 32;

/** Deterministic 32-byte state for (key, generation). */
function stateOf(key: number, gen: number): Uint8Array {
  const s = new Uint8Array(SIZE);
  for (let i = 0; i < SIZE; i++) s[i] = (key * 31 + gen * 7 + i) & 255;
  return s;
}

function fixedStates(keys: ArrayLike<number>, gen: number): { bytes: Uint8Array; stride: number } {
  const bytes = new Uint8Array(keys.length * SIZE);
  for (let i = 0; i < keys.length; i++) bytes.set(stateOf(keys[i]!, gen), i * SIZE);
  return { bytes, stride: SIZE };
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection');
}

export function storeContract(fx: StoreFixture): void {
  describe(`state store contract: ${fx.name}`, () => {
    const opened: StateStore[] = [];
    async function fresh(): Promise<StateStore> {
      const s = await fx.make();
      await s.open();
      opened.push(s);
      return s;
    }
    async function ints(store?: StateStore): Promise<StateTable<number>> {
      return (store ?? (await fresh())).table({ name: 'Account', keyKind: 'int', stateSize: SIZE });
    }
    afterAll(async () => {
      for (const s of opened) await s.close();
    });

    it('get, put and versions of one actor', async () => {
      const t = await ints();
      expect(await t.get(7)).toBeUndefined();
      expect(await t.put(7, stateOf(7, 1), 0)).toBe(1);
      expect(await t.get(7)).toEqual({ version: 1, state: stateOf(7, 1) });
      expect(await t.put(7, stateOf(7, 2), 1)).toBe(2);
      expect(await t.get(7)).toEqual({ version: 2, state: stateOf(7, 2) });
      expect(await t.count()).toBe(1);
    });

    it('a stale version is a typed conflict naming grain, key, expected and found; the state stays', async () => {
      const t = await ints();
      await t.put(5, stateOf(5, 1), 0);
      await t.put(5, stateOf(5, 2), 1);
      const e = await rejection(t.put(5, stateOf(5, 9), 1));
      expect(e).toBeInstanceOf(StateVersionConflictError);
      expect(e).toMatchObject({
        code: 'STATE_VERSION_CONFLICT',
        grain: 'Account',
        key: 5,
        row: 0,
        expected: 1,
        found: 2,
      });
      const again = await rejection(t.put(5, stateOf(5, 9), 0));
      expect(again).toMatchObject({ expected: 0, found: 2 });
      const absent = await rejection(t.put(6, stateOf(6, 1), 3));
      expect(absent).toMatchObject({ key: 6, expected: 3, found: 0 });
      expect(await t.get(5)).toEqual({ version: 2, state: stateOf(5, 2) });
      expect(await t.get(6)).toBeUndefined();
    });

    it('putMany and getMany: one buffer with a stride in, one packed buffer out, missing rows named', async () => {
      const t = await ints();
      const keys = Float64Array.from({ length: 1000 }, (_, i) => i * 3 - 600);
      const v = await t.putMany({ keys, expected: new Float64Array(1000), states: fixedStates(keys, 1) });
      expect([...v]).toEqual(new Array(1000).fill(1));
      const ask = [0, -600, 1, 3, 2397, 5000];
      const r = await t.getMany(ask);
      expect(r.count).toBe(6);
      expect(r.found).toBe(4);
      expect([...r.missing]).toEqual([2, 5]);
      expect([...r.versions]).toEqual([1, 1, 0, 1, 1, 0]);
      ask.forEach((k, i) => {
        const s = r.bytes.subarray(r.offsets[i], r.offsets[i + 1]);
        expect(s).toEqual(r.versions[i] ? stateOf(k, 1) : new Uint8Array(0));
      });
    });

    it('getMany answers each key as asked: ascending, repeated, descending and absent keys in one chunk', async () => {
      const t = await ints();
      const keys = Float64Array.from([1, 2, 5, 9, 10, 40, 63, 64, 70]);
      await t.putMany({ keys, expected: new Float64Array(keys.length), states: fixedStates(keys, 1) });
      const ask = [0, 1, 2, 2, 3, 9, 63, 64, 62, 40, 5, 1, 65, 70, 70, 10];
      const r = await t.getMany(ask);
      const stored = new Set(keys);
      expect([...r.versions]).toEqual(ask.map((k) => (stored.has(k) ? 1 : 0)));
      ask.forEach((k, i) => {
        const s = r.bytes.subarray(r.offsets[i], r.offsets[i + 1]);
        expect(s).toEqual(stored.has(k) ? stateOf(k, 1) : new Uint8Array(0));
      });
    });

    it(
      'putMany takes states as packed offsets or as an ' + 'array, of any size when the table has no stateSize',
      async () => {
        const t = await (await fresh()).table({ name: 'Loose', keyKind: 'int' });
        const sizes = [0, 1, 5, 300];
        const parts = sizes.map((n, i) => new Uint8Array(n).fill(i + 1));
        const offsets = new Uint32Array(sizes.length + 1);
        sizes.forEach((n, i) => (offsets[i + 1] = offsets[i]! + n));
        const bytes = new Uint8Array(offsets[sizes.length]!);
        parts.forEach((p, i) => bytes.set(p, offsets[i]));
        await t.putMany({ keys: [1, 2, 3, 4], expected: [0, 0, 0, 0], states: { bytes, offsets } });
        await t.putMany({ keys: [1, 2, 3, 4], expected: [1, 1, 1, 1], states: [...parts].reverse() });
        const r = await t.getMany([1, 2, 3, 4]);
        expect([...r.versions]).toEqual([2, 2, 2, 2]);
        [...parts].reverse().forEach((p, i) => expect(r.bytes.subarray(r.offsets[i], r.offsets[i + 1])).toEqual(p));
      },
    );

    it('a conflict in the middle of a batch writes nothing of it', async () => {
      const t = await ints();
      const keys = Array.from({ length: 500 }, (_, i) => i);
      await t.putMany({ keys, expected: new Array(500).fill(0), states: fixedStates(keys, 1) });
      await t.put(250, stateOf(250, 2), 1); // someone else wrote 250
      const expected = new Array(500).fill(1);
      const e = await rejection(
        t.putMany({ keys: [...keys, 900], expected: [...expected, 0], states: fixedStates([...keys, 900], 3) }),
      );
      expect(e).toBeInstanceOf(StateVersionConflictError);
      expect(e).toMatchObject({ key: 250, row: 250, expected: 1, found: 2 });
      const r = await t.getMany([...keys, 900]);
      expect(r.found).toBe(500);
      for (let i = 0; i < 500; i++) {
        expect(r.versions[i]).toBe(i === 250 ? 2 : 1);
        expect(r.bytes.subarray(r.offsets[i], r.offsets[i + 1])).toEqual(stateOf(i, i === 250 ? 2 : 1));
      }
    });

    it(
      'two writers race for the same actors: one batch wins whole, the other conflicts, no accepted write ' + 'is lost',
      async () => {
        const s = await fresh();
        const other = fx.reopen(s); // a second store object over the same location: a second writer
        await other.open();
        opened.push(other);
        const a = await ints(s);
        const b = await ints(other);
        for (const base of [0, 1000]) {
          // Round 1: both find no chunk and insert; round 2: both update what round 1 left.
          const keys = Array.from({ length: 200 }, (_, i) => base + i);
          const res = await Promise.allSettled([
            a.putMany({ keys, expected: keys.map(() => 0), states: fixedStates(keys, 1) }),
            b.putMany({
              keys: [...keys].reverse(),
              expected: keys.map(() => 0),
              states: fixedStates([...keys].reverse(), 2),
            }),
          ]);
          const won = res.findIndex((r) => r.status === 'fulfilled');
          expect(res.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
          const lost = res[1 - won] as PromiseRejectedResult;
          expect(lost.reason).toBeInstanceOf(StateVersionConflictError);
          expect(lost.reason).toMatchObject({ expected: 0, found: 1 });
          const r = await a.getMany(keys);
          expect(r.found).toBe(200);
          keys.forEach((k, i) => expect(r.bytes.subarray(r.offsets[i], r.offsets[i + 1])).toEqual(stateOf(k, won + 1)));
          const again = await Promise.allSettled([
            a.putMany({ keys, expected: keys.map(() => 1), states: fixedStates(keys, 3) }),
            b.putMany({ keys, expected: keys.map(() => 1), states: fixedStates(keys, 4) }),
          ]);
          const won2 = again.findIndex((x) => x.status === 'fulfilled');
          expect(again.filter((x) => x.status === 'fulfilled')).toHaveLength(1);
          expect((again[1 - won2] as PromiseRejectedResult).reason).toMatchObject({
            code: 'STATE_VERSION_CONFLICT',
            expected: 1,
            found: 2,
          });
          const r2 = await b.getMany(keys);
          expect([...r2.versions].every((v) => v === 2)).toBe(true);
          keys.forEach((k, i) =>
            expect(r2.bytes.subarray(r2.offsets[i], r2.offsets[i + 1])).toEqual(stateOf(k, won2 + 3)),
          );
        }
      },
    );

    it(
      'keys in any order are written; a repeated key or a malformed batch is a StateBatchError and writes ' + 'nothing',
      async () => {
        const t = await ints();
        const keys = [9, 3, 7, 1, 5];
        await t.putMany({ keys, expected: [0, 0, 0, 0, 0], states: fixedStates(keys, 1) });
        expect((await t.getMany([1, 3, 5, 7, 9])).found).toBe(5);
        const batches = [
          { keys: [11, 12, 11], expected: [0, 0, 0], states: fixedStates([11, 12, 11], 1) },
          { keys: [11, 12.5], expected: [0, 0], states: fixedStates([11, 12], 1) },
          { keys: [11, 12], expected: [0], states: fixedStates([11, 12], 1) },
          { keys: [11, 12], expected: [0, -1], states: fixedStates([11, 12], 1) },
          { keys: [11, 12], expected: [0, 0], states: { bytes: new Uint8Array(2 * 16), stride: 16 } },
          { keys: [11, 12], expected: [0, 0], states: [new Uint8Array(SIZE), new Uint8Array(SIZE + 1)] },
        ];
        for (const b of batches) {
          const e = await rejection(t.putMany(b));
          expect(e, JSON.stringify(b.keys)).toBeInstanceOf(StateBatchError);
          expect(e).toMatchObject({ code: 'STATE_BATCH', grain: 'Account' });
        }
        expect(await t.count()).toBe(5);
      },
    );

    it('scan pages through every row once, in key order, and says when it is done', async () => {
      const t = await ints();
      expect(await t.scan({ limit: 10 })).toMatchObject({ keys: [], next: undefined });
      const keys = Array.from({ length: 2500 }, (_, i) => ((i * 7919) % 2500) - 1250);
      await t.putMany({ keys, expected: new Array(2500).fill(0), states: fixedStates(keys, 1) });
      const seen: number[] = [];
      let pages = 0;
      for await (const page of scanPages(t, 1000)) {
        pages++;
        page.keys.forEach((k, i) => {
          expect(page.versions[i]).toBe(1);
          expect(page.bytes.subarray(page.offsets[i], page.offsets[i + 1])).toEqual(stateOf(k, 1));
        });
        seen.push(...page.keys);
      }
      expect(pages).toBe(3);
      expect(seen).toEqual([...keys].sort((a, b) => a - b));
      const tail = await t.scan({ after: 1247, limit: 5 });
      expect(tail).toMatchObject({ keys: [1248, 1249], next: undefined });
      const mid = await t.scan({ after: -1251, limit: 2 });
      expect(mid).toMatchObject({ keys: [-1250, -1249], next: -1249 });
      // A page size that is not an integer ≥ 1 is a typed error naming the table, at the call.
      for (const limit of [0, -1, 1.5, Number.NaN]) {
        const e = await t.scan({ limit }).catch((x: unknown) => x);
        expect(e, String(limit)).toBeInstanceOf(StateScanError);
        expect(e).toMatchObject({ code: 'STATE_SCAN', grain: t.spec.name });
      }
    });

    it('keys at the edges: ±(2^53 − 1), around 0 and 64, all found and scanned in numeric order', async () => {
      const t = await ints();
      const keys = [Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 63, 64, -1, -64, -65, 0, 127, 128];
      await t.putMany({ keys, expected: keys.map(() => 0), states: fixedStates(keys, 1) });
      const r = await t.getMany(keys);
      expect(r.found).toBe(keys.length);
      keys.forEach((k, i) => expect(r.bytes.subarray(r.offsets[i], r.offsets[i + 1])).toEqual(stateOf(k, 1)));
      const page = await t.scan({ limit: 100 });
      expect(page.keys).toEqual([...keys].sort((a, b) => a - b));
      expect((await t.scan({ after: 63, limit: 2 })).keys).toEqual([64, 127]);
      expect(await t.deleteMany({ keys: [64, -64, Number.MAX_SAFE_INTEGER], expected: [1, 1, 1] })).toBe(3);
      expect((await t.scan({ limit: 100 })).keys).toEqual([-Number.MAX_SAFE_INTEGER, -65, -1, 0, 63, 127, 128]);
    });

    it('deleteMany: unconditional, or at the expected versions (all or nothing)', async () => {
      const t = await ints();
      const keys = [1, 2, 3, 4, 5, 6];
      await t.putMany({ keys, expected: [0, 0, 0, 0, 0, 0], states: fixedStates(keys, 1) });
      await t.put(2, stateOf(2, 2), 1);
      expect(await t.deleteMany({ keys: [1, 99] })).toBe(1);
      const e = await rejection(t.deleteMany({ keys: [3, 2, 4], expected: [1, 1, 1] }));
      expect(e).toMatchObject({ code: 'STATE_VERSION_CONFLICT', key: 2, expected: 1, found: 2 });
      const stray = await rejection(t.deleteMany({ keys: [3, 5], expected: [1, 0] }));
      expect(stray).toMatchObject({ code: 'STATE_VERSION_CONFLICT', key: 5, expected: 0, found: 1 });
      expect(await t.count()).toBe(5);
      expect(await t.deleteMany({ keys: [3, 2, 4, 77], expected: [1, 2, 1, 0] })).toBe(3);
      expect(await rejection(t.delete(5, 2))).toBeInstanceOf(StateVersionConflictError);
      expect(await t.delete(5, 1)).toBe(true);
      expect(await t.delete(6)).toBe(true);
      expect(await t.delete(6)).toBe(false);
      expect(await t.count()).toBe(0);
      // A deleted actor starts again at version 1.
      expect(await t.put(6, stateOf(6, 1), 0)).toBe(1);
    });

    it('string keys: get, put, getMany and scan in byte order', async () => {
      const s = await fresh();
      const t = await s.table({ name: 'Named', keyKind: 'string' });
      const keys = ['bob', 'alice', 'Zed', 'émile', 'a'];
      await t.putMany({ keys, expected: [0, 0, 0, 0, 0], states: keys.map((k) => new TextEncoder().encode(k)) });
      expect(await t.get('émile')).toEqual({ version: 1, state: new TextEncoder().encode('émile') });
      const r = await t.getMany(['a', 'nobody', 'bob']);
      expect([...r.versions]).toEqual([1, 0, 1]);
      const page = await t.scan({ limit: 10 });
      expect(page.keys).toEqual(['Zed', 'a', 'alice', 'bob', 'émile']);
      expect((await t.scan({ after: 'alice', limit: 1 })).keys).toEqual(['bob']);
      const e = await rejection(
        t.putMany({ keys: ['ok', ''], expected: [0, 0], states: [new Uint8Array(1), new Uint8Array(1)] }),
      );
      expect(e).toMatchObject({ code: 'STATE_BATCH', row: 1 });
    });

    it('tables of one store are separate', async () => {
      const s = await fresh();
      const a = await s.table({ name: 'A1', keyKind: 'int', stateSize: SIZE });
      const b = await s.table({ name: 'B1', keyKind: 'int', stateSize: SIZE });
      await a.put(1, stateOf(1, 1), 0);
      expect(await b.get(1)).toBeUndefined();
      await b.put(1, stateOf(1, 5), 0);
      expect((await a.get(1))?.state).toEqual(stateOf(1, 1));
      expect(await s.table({ name: 'A1', keyKind: 'int', stateSize: SIZE })).toBe(a);
    });

    it('long names stay apart: two names that share 63 bytes, and a 63-byte name and its reminders', async () => {
      // PostgreSQL cuts identifiers at 63 bytes: both names became one table before the store mapped them.
      const s = await fresh();
      const head = 'G'.repeat(63);
      const east = await s.table({ name: `${head}East`, keyKind: 'int', stateSize: SIZE });
      const west = await s.table({ name: `${head}West`, keyKind: 'int', stateSize: SIZE });
      await east.put(1, stateOf(1, 1), 0);
      expect(await west.get(1)).toBeUndefined();
      await west.put(1, stateOf(1, 7), 0);
      expect((await east.get(1))?.state).toEqual(stateOf(1, 1));
      expect((await west.get(1))?.state).toEqual(stateOf(1, 7));
      // A 63-byte name: its reminders table (name + "__reminders") is not cut back onto its states.
      if (s.reminders) {
        const states = await s.table({ name: head, keyKind: 'int', stateSize: SIZE });
        const rem = await s.reminders({ name: head, keyKind: 'int', stateSize: SIZE });
        await states.put(3, stateOf(3, 1), 0);
        await rem.put([{ key: 3, name: 'tick', method: 'ping', periodMs: 1000, nextDue: 5 }]);
        expect(await rem.list()).toEqual([{ key: 3, name: 'tick', method: 'ping', periodMs: 1000, nextDue: 5 }]);
        expect((await states.get(3))?.state).toEqual(stateOf(3, 1));
        expect(await states.count()).toBe(1);
      }
      // A class named like another class's reminders table is refused, before anything is created.
      const e = await rejection(s.table({ name: 'Account__reminders', keyKind: 'int', stateSize: SIZE }));
      expect(e).toMatchObject({ code: 'STATE_TABLE_SPEC' });
      expect(e.message).toMatch(/__reminders/);
    });

    it('what was written is there after close and reopen', async () => {
      const s = await fx.make();
      await s.open();
      const t = await ints(s);
      const keys = Array.from({ length: 300 }, (_, i) => i * 11);
      await t.putMany({ keys, expected: new Array(300).fill(0), states: fixedStates(keys, 4) });
      await t.put(11, stateOf(11, 5), 1);
      await s.close();
      await s.close(); // idempotent
      const e = await rejection(t.get(11));
      expect(e).toBeInstanceOf(StateStoreClosedError);
      const again = fx.reopen(s);
      await again.open();
      opened.push(again);
      const t2 = await ints(again);
      expect(await t2.count()).toBe(300);
      expect(await t2.get(11)).toEqual({ version: 2, state: stateOf(11, 5) });
      const r = await t2.getMany(keys);
      expect(r.found).toBe(300);
      expect(r.bytes.subarray(r.offsets[299], r.offsets[300])).toEqual(stateOf(299 * 11, 4));
    });

    it('a row that does not decode is a StateDecodeError naming grain and key, for get, getMany and scan', async () => {
      const s = await fresh();
      const t = await ints(s);
      await t.putMany({ keys: [1, 2, 3], expected: [0, 0, 0], states: fixedStates([1, 2, 3], 1) });
      await fx.corrupt(s, 'Account', 2);
      for (const call of [() => t.get(2), () => t.getMany([1, 2]), () => t.scan({ limit: 10 })]) {
        const e = await rejection(call());
        expect(e).toBeInstanceOf(StateDecodeError);
        expect(e).toMatchObject({ code: 'STATE_DECODE', grain: 'Account', key: 2 });
      }
      expect(await t.get(1)).toEqual({ version: 1, state: stateOf(1, 1) });
      // Rows of another size than the table's stateSize do not decode either.
      const v = await s.table({ name: 'Sized', keyKind: 'int' });
      await v.put(4, new Uint8Array(7), 0);
      const sized = fx.reopen(s);
      await s.close();
      await sized.open();
      opened.push(sized);
      const w = await sized.table({ name: 'Sized', keyKind: 'int', stateSize: SIZE });
      expect(await rejection(w.get(4))).toMatchObject({ code: 'STATE_DECODE', key: 4 });
    });

    it('an unreachable store fails open() with StateStoreUnavailableError; calls before open() too', async () => {
      const s = fx.unreachable();
      const e = await rejection(s.open());
      expect(e).toBeInstanceOf(StateStoreUnavailableError);
      expect(e).toMatchObject({ code: 'STATE_STORE_UNAVAILABLE', store: s.kind, outcomeUnknown: false });
      expect((e as Error).cause).toBeDefined();
      const t = await rejection(s.table({ name: 'Account', keyKind: 'int' }));
      expect(t).toBeInstanceOf(StateStoreUnavailableError);
    });

    it('a bulk round trip of 100,000 actors', async () => {
      const t = await ints();
      const n = 100_000;
      const keys = new Float64Array(n);
      for (let i = 0; i < n; i++) keys[i] = i;
      const first = fixedStates(keys, 1);
      await t.putMany({ keys, expected: new Float64Array(n), states: first });
      const v = await t.putMany({ keys, expected: new Float64Array(n).fill(1), states: fixedStates(keys, 2) });
      expect(v[n - 1]).toBe(2);
      const r = await t.getMany(keys);
      expect(r.found).toBe(n);
      expect(r.versions.every((x) => x === 2)).toBe(true);
      // Buffer.equals: a deep toEqual of 3.2 MB compares element by element for seconds.
      expect(Buffer.from(r.bytes.buffer, r.bytes.byteOffset, r.bytes.length).equals(fixedStates(keys, 2).bytes)).toBe(
        true,
      );
    });

    it(
      'cluster fencing: a claim raises a partition above every earlier claim; a write under an older epoch ' +
        'is refused typed, nothing of its batch written; the epoch is stored with the row',
      async () => {
        const t = await ints();
        expect(t.claim).toBeTypeOf('function');
        // Keys 1..4 in partitions 0 and 1 (the caller names each row's partition).
        const parts = [0, 0, 1, 1];
        expect([...(await t.claim!([0, 1], [1, 1]))]).toEqual([1, 1]);
        await t.putMany({
          keys: [1, 2, 3, 4],
          expected: [0, 0, 0, 0],
          states: fixedStates([1, 2, 3, 4], 1),
          fence: { partitions: parts, epochs: [1, 1, 1, 1] },
        });
        expect(await t.get(1)).toEqual({ version: 1, state: stateOf(1, 1), epoch: 1 });
        // A new owner claims partition 1 (table epoch 1 again, e.g. a new cluster): it gets 2, above the stored 1.
        expect([...(await t.claim!([1], [1]))]).toEqual([2]);
        // The old owner's write (epoch 1) to both partitions: refused at the row of partition 1, nothing written.
        const e = await rejection(
          t.putMany({
            keys: [1, 3],
            expected: [1, 1],
            states: fixedStates([1, 3], 2),
            fence: { partitions: [0, 1], epochs: [1, 1] },
          }),
        );
        expect(e).toBeInstanceOf(StateFencedError);
        expect(e).toMatchObject({
          code: 'STATE_FENCED',
          grain: 'Account',
          key: 3,
          row: 1,
          partition: 1,
          epoch: 1,
          fence: 2,
        });
        expect(await t.get(1)).toEqual({ version: 1, state: stateOf(1, 1), epoch: 1 });
        expect(await t.get(3)).toEqual({ version: 1, state: stateOf(3, 1), epoch: 1 });
        // The new owner writes under its epoch; the row keeps it (its activation epoch), neighbours keep theirs.
        await t.putMany({
          keys: [3],
          expected: [1],
          states: fixedStates([3], 3),
          fence: { partitions: [1], epochs: [2] },
        });
        expect(await t.get(3)).toEqual({ version: 2, state: stateOf(3, 3), epoch: 2 });
        expect((await t.get(4))?.epoch).toBe(1);
        // A higher table epoch than stored is taken as is; claimed() reads the claims (0: none).
        expect([...(await t.claim!([0], [7]))]).toEqual([7]);
        expect([...(await t.claimed!([0, 1, 2]))]).toEqual([7, 2, 0]);
        // An unfenced write still works on a fenced table; a fence of the wrong shape is a batch error.
        await t.put(9, stateOf(9, 1), 0);
        expect((await t.get(9))?.version).toBe(1);
        const bad = await rejection(
          t.putMany({
            keys: [9],
            expected: [1],
            states: fixedStates([9], 2),
            fence: { partitions: [0, 1], epochs: [7] },
          }),
        );
        expect(bad).toBeInstanceOf(StateBatchError);
      },
    );

    it(
      'cluster fencing of deletes: a delete under an older epoch is refused typed, nothing of its batch ' +
        'deleted; under the claim it deletes',
      async () => {
        const t = await ints();
        await t.claim!([0, 1], [1, 1]);
        await t.putMany({
          keys: [1, 2, 3],
          expected: [0, 0, 0],
          states: fixedStates([1, 2, 3], 1),
          fence: { partitions: [0, 0, 1], epochs: [1, 1, 1] },
        });
        expect([...(await t.claim!([1], [1]))]).toEqual([2]);
        // The old owner deletes a key of each partition: refused at the row of partition 1, nothing deleted.
        const e = await rejection(t.deleteMany({ keys: [1, 3], fence: { partitions: [0, 1], epochs: [1, 1] } }));
        expect(e).toBeInstanceOf(StateFencedError);
        expect(e).toMatchObject({ code: 'STATE_FENCED', key: 3, row: 1, partition: 1, epoch: 1, fence: 2 });
        expect((await t.get(1))?.version).toBe(1);
        expect((await t.get(3))?.version).toBe(1);
        // With versions too: still refused by the fence first.
        expect(
          await rejection(t.deleteMany({ keys: [3], expected: [1], fence: { partitions: [1], epochs: [1] } })),
        ).toBeInstanceOf(StateFencedError);
        // The new owner's fenced delete, and the old owner's of its own partition 0 (still claimed at 1), go through.
        expect(await t.deleteMany({ keys: [3], expected: [1], fence: { partitions: [1], epochs: [2] } })).toBe(1);
        expect(await t.deleteMany({ keys: [1], fence: { partitions: [0], epochs: [1] } })).toBe(1);
        expect(await t.get(3)).toBeUndefined();
        expect((await t.get(2))?.version).toBe(1);
        const bad = await rejection(t.deleteMany({ keys: [2], fence: { partitions: [0, 1], epochs: [1] } }));
        expect(bad).toBeInstanceOf(StateBatchError);
        // A string-keyed table's deletes are fenced the same way.
        const s = await (await fresh()).table({ name: 'NamedDel', keyKind: 'string', stateSize: SIZE });
        await s.claim!([5], [3]);
        await s.putMany({
          keys: ['a'],
          expected: [0],
          states: [stateOf(1, 1)],
          fence: { partitions: [5], epochs: [3] },
        });
        await s.claim!([5], [3]);
        expect(await rejection(s.deleteMany({ keys: ['a'], fence: { partitions: [5], epochs: [3] } }))).toMatchObject({
          code: 'STATE_FENCED',
          key: 'a',
          partition: 5,
          epoch: 3,
          fence: 4,
        });
        expect((await s.get('a'))?.version).toBe(1);
        expect(await s.deleteMany({ keys: ['a'], fence: { partitions: [5], epochs: [4] } })).toBe(1);
      },
    );

    it(
      'cluster fencing of reminders: a put or delete under an older epoch is refused typed, nothing of it ' +
        'written; under the claim it goes through',
      async () => {
        const s = await fresh();
        expect(s.reminders).toBeTypeOf('function');
        const t = await s.table({ name: 'Alarm', keyKind: 'int', stateSize: SIZE });
        const r = await s.reminders!({ name: 'Alarm', keyKind: 'int', stateSize: SIZE });
        const row = (key: number, nextDue: number) => ({ key, name: 'ping', method: 'ping', periodMs: 1000, nextDue });
        await t.claim!([0, 1], [1, 1]);
        await r.put([row(1, 10), row(3, 10)], { partitions: [0, 1], epochs: [1, 1] });
        // The class's claims fence its reminders: a new owner claims partition 1.
        expect([...(await t.claim!([1], [1]))]).toEqual([2]);
        const e = await rejection(r.put([row(1, 20), row(3, 20)], { partitions: [0, 1], epochs: [1, 1] }));
        expect(e).toBeInstanceOf(StateFencedError);
        expect(e).toMatchObject({ code: 'STATE_FENCED', key: 3, row: 1, partition: 1, epoch: 1, fence: 2 });
        expect(await rejection(r.delete([{ key: 3, name: 'ping' }], { partitions: [1], epochs: [1] }))).toBeInstanceOf(
          StateFencedError,
        );
        expect((await r.list()).map((x) => [x.key, x.nextDue])).toEqual([
          [1, 10],
          [3, 10],
        ]);
        // The new owner's writes, and the old owner's of partition 0 (still its own), go through; so does an unfenced
        // one.
        await r.put([row(3, 30)], { partitions: [1], epochs: [2] });
        await r.put([row(1, 40)], { partitions: [0], epochs: [1] });
        expect((await r.list()).map((x) => [x.key, x.nextDue])).toEqual([
          [1, 40],
          [3, 30],
        ]);
        expect(await r.delete([{ key: 3, name: 'ping' }], { partitions: [1], epochs: [2] })).toBe(1);
        expect(await r.delete([{ key: 1, name: 'ping' }])).toBe(1);
        expect(await r.list()).toEqual([]);
        expect(await rejection(r.put([row(5, 1)], { partitions: [0, 1], epochs: [1] }))).toBeInstanceOf(
          StateBatchError,
        );
      },
    );

    it('cluster fencing of a string-keyed table: stale writes refused the same way', async () => {
      const t = await (await fresh()).table({ name: 'Named', keyKind: 'string', stateSize: SIZE });
      expect(t.claim).toBeTypeOf('function');
      await t.claim!([5], [3]);
      await t.putMany({ keys: ['a'], expected: [0], states: [stateOf(1, 1)], fence: { partitions: [5], epochs: [3] } });
      await t.claim!([5], [3]);
      const e = await rejection(
        t.putMany({ keys: ['a'], expected: [1], states: [stateOf(1, 2)], fence: { partitions: [5], epochs: [3] } }),
      );
      expect(e).toMatchObject({ code: 'STATE_FENCED', key: 'a', partition: 5, epoch: 3, fence: 4 });
      expect((await t.get('a'))?.state).toEqual(stateOf(1, 1));
    });
  });
}
