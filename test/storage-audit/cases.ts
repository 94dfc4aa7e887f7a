/**
 * The key-space audit, shared by the LMDB and PostgreSQL files: (1) the StateTable contract (get, put,
 * getMany, putMany, deleteMany, scan, count) with keys at and around chunk boundaries, negative keys,
 * ±(2^53 − 1), -0, and awkward string keys; (2) programs a user could write: GrainSystem + a backend + the
 * store, turns, flush, shutdown, a new system on the same store, preload, idle collection and reload.
 */
import { GrainSystem, InvalidKeyError, type StorageErrorEvent } from '@ringgrain/core';
import type { Backend, StateStore } from '@ringgrain/core/types';
import { StateBatchError, scanPages, stateTableSpec, type StateTable } from '@ringgrain/core/store';
import { expect, it } from 'vitest';
import { INT_KEYS, IntKeyed, STR_KEYS, StrKeyed, markOf } from './grains.ts';

export interface AuditFixture {
  /** A store over a fresh location (not opened). */
  make(): Promise<StateStore>;
  /** Another store over the same location. */
  reopen(store: StateStore): StateStore;
  /** String keys this store refuses with a StateBatchError (and why). */
  readonly refusedStrings?: readonly string[];
  readonly backends: ReadonlyArray<readonly [string, () => Backend]>;
}

const SIZE = 16;
const stateOf = (i: number, gen: number): Uint8Array => {
  const s = new Uint8Array(SIZE);
  const dv = new DataView(s.buffer);
  dv.setFloat64(0, i + 0.5, true);
  dv.setFloat64(8, gen, true);
  return s;
};
const idOf = (b: Uint8Array, at = 0): number => new DataView(b.buffer, b.byteOffset + at).getFloat64(0, true);
const genOf = (b: Uint8Array, at = 0): number => new DataView(b.buffer, b.byteOffset + at + 8).getFloat64(0, true);

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

/** Every key's state read back with get and getMany (shuffled), each the one written for it. */
async function checkAll<K extends number | string>(
  table: StateTable<K>,
  keys: readonly K[],
  gen: number,
  version: number,
): Promise<void> {
  for (let i = 0; i < keys.length; i++) {
    const e = await table.get(keys[i]!);
    expect(e, `get ${JSON.stringify(keys[i])}`).toBeDefined();
    expect([idOf(e!.state), genOf(e!.state), e!.version], `get ${JSON.stringify(keys[i])}`).toEqual([
      i + 0.5,
      gen,
      version,
    ]);
  }
  const order = keys.map((_, i) => i).reverse();
  const r = await table.getMany(order.map((i) => keys[i]!) as never);
  expect(r.found).toBe(keys.length);
  for (let j = 0; j < order.length; j++) {
    expect(
      [idOf(r.bytes, r.offsets[j]!), genOf(r.bytes, r.offsets[j]!), r.versions[j]],
      `getMany ${JSON.stringify(keys[order[j]!])}`,
    ).toEqual([order[j]! + 0.5, gen, version]);
  }
}

async function scanAll<K extends number | string>(table: StateTable<K>, limit: number): Promise<K[]> {
  const out: K[] = [];
  for await (const page of scanPages(table, limit)) {
    for (let j = 0; j < page.keys.length; j++) out.push(page.keys[j]!);
  }
  return out;
}

export function tableCases(f: AuditFixture): void {
  it('int keys: put, putMany, get, getMany, scan (key order, pages of 1, 3, 1000), count, deleteMany', async () => {
    const store = await f.make();
    await store.open();
    try {
      const t = await store.table({ name: 'AuditIntTable', keyKind: 'int', stateSize: SIZE });
      // One row at a time, then every row in one shuffled batch (keys sharing chunks with others).
      for (let i = 0; i < INT_KEYS.length; i++) expect(await t.put(INT_KEYS[i]!, stateOf(i, 1), 0)).toBe(1);
      await checkAll(t, INT_KEYS, 1, 1);
      const shuffled = [...INT_KEYS.keys()]
        .filter((i) => i % 2 === 1)
        .reverse()
        .concat([...INT_KEYS.keys()].filter((i) => i % 2 === 0));
      expect(new Set(shuffled).size).toBe(INT_KEYS.length);
      const bytes = new Uint8Array(INT_KEYS.length * SIZE);
      shuffled.forEach((i, j) => bytes.set(stateOf(i, 2), j * SIZE));
      const v = await t.putMany({
        keys: shuffled.map((i) => INT_KEYS[i]!),
        expected: shuffled.map(() => 1),
        states: { bytes, stride: SIZE },
      });
      expect(Array.from(v)).toEqual(shuffled.map(() => 2));
      await checkAll(t, INT_KEYS, 2, 2);
      const sorted = [...INT_KEYS].sort((a, b) => a - b);
      for (const limit of [1, 3, 1000]) expect(await scanAll(t, limit), `scan limit ${limit}`).toEqual(sorted);
      expect(await t.count()).toBe(INT_KEYS.length);
      // scan after a key that is not stored, in a chunk of its own or beside stored ones.
      for (const after of [-(2 ** 53) + 2, -66, -3, 66, 2 ** 35]) {
        const page = await t.scan({ after, limit: 1000 });
        expect(page.keys, `scan after ${after}`).toEqual(sorted.filter((k) => k > after));
      }
      // Delete every other key; the rest stay, each with its own state.
      const gone = INT_KEYS.filter((_, i) => i % 2 === 0);
      expect(await t.deleteMany({ keys: gone, expected: gone.map(() => 2) })).toBe(gone.length);
      const kept = INT_KEYS.filter((_, i) => i % 2 === 1);
      for (let i = 0; i < INT_KEYS.length; i++) {
        const e = await t.get(INT_KEYS[i]!);
        if (i % 2 === 0) expect(e, `deleted ${INT_KEYS[i]}`).toBeUndefined();
        else expect([idOf(e!.state), e!.version]).toEqual([i + 0.5, 2]);
      }
      expect(await scanAll(t, 2)).toEqual([...kept].sort((a, b) => a - b));
      expect(await t.count()).toBe(kept.length);
    } finally {
      await store.close();
    }
  });

  it('int key -0 is key 0: one row, in every call, and scan reads it back as a number', async () => {
    const store = await f.make();
    await store.open();
    try {
      const t = await store.table({ name: 'AuditZero', keyKind: 'int', stateSize: SIZE });
      expect(await t.put(-0, stateOf(0, 1), 0)).toBe(1);
      expect(idOf((await t.get(0))!.state)).toBe(0.5);
      expect((await t.getMany([0])).found).toBe(1);
      // A second insert of key 0 conflicts with the row -0 wrote.
      expect((await rejection(t.put(0, stateOf(0, 2), 0))) as Error).toHaveProperty('code', 'STATE_VERSION_CONFLICT');
      expect(await t.put(0, stateOf(0, 2), 1)).toBe(2);
      // -0 and 1 in one batch: the chunk id of the run is that of -0; key 1 must land in chunk 0.
      expect(
        Array.from(await t.putMany({ keys: [-0, 1], expected: [2, 0], states: [stateOf(0, 3), stateOf(1, 3)] })),
      ).toEqual([3, 1]);
      expect(idOf((await t.get(1))!.state)).toBe(1.5);
      expect(genOf((await t.get(0))!.state)).toBe(3);
      expect(await scanAll(t, 1)).toEqual([0, 1]);
      expect(await t.count()).toBe(2);
      expect(await t.deleteMany({ keys: [-0] })).toBe(1);
      expect(await t.get(0)).toBeUndefined();
      expect(await scanAll(t, 10)).toEqual([1]);
    } finally {
      await store.close();
    }
  });

  it('string keys: unicode, emoji, control characters, long keys; scan visits each once', async () => {
    const store = await f.make();
    await store.open();
    try {
      const t = await store.table({ name: 'AuditStrTable', keyKind: 'string', stateSize: SIZE });
      const refused = new Set(f.refusedStrings ?? []);
      const keys = STR_KEYS.filter((k) => !refused.has(k));
      for (let i = 0; i < keys.length; i++) expect(await t.put(keys[i]!, stateOf(i, 1), 0)).toBe(1);
      await checkAll(t, keys, 1, 1);
      const bytes = new Uint8Array(keys.length * SIZE);
      keys.forEach((_, i) => bytes.set(stateOf(i, 2), i * SIZE));
      await t.putMany({ keys: [...keys], expected: keys.map(() => 1), states: { bytes, stride: SIZE } });
      await checkAll(t, keys, 2, 2);
      for (const limit of [1, 4, 1000]) {
        const seen = await scanAll(t, limit);
        expect([...seen].sort(), `scan limit ${limit}`).toEqual([...keys].sort());
        expect(new Set(seen).size).toBe(keys.length);
      }
      expect(await t.count()).toBe(keys.length);
      for (const k of refused) {
        const e = await rejection(t.put(k, stateOf(0, 1), 0));
        expect(e, JSON.stringify(k)).toBeInstanceOf(StateBatchError);
      }
    } finally {
      await store.close();
    }
  });

  it("string keys refused with StateBatchError: '', a lone surrogate, a key over 1024 UTF-8 bytes", async () => {
    const store = await f.make();
    await store.open();
    try {
      const t = await store.table({ name: 'AuditStrBad', keyKind: 'string', stateSize: SIZE });
      for (const k of ['', '\uD800', '\uDC00', 'a\uDBFFb', '😀'.repeat(257)]) {
        for (const p of [t.put(k, stateOf(0, 1), 0), t.get(k), t.getMany(['ok', k])]) {
          expect(await rejection(p), JSON.stringify(k)).toBeInstanceOf(StateBatchError);
        }
      }
      // Nothing was written, and '\uD800' and '\uDC00' did not become one row.
      expect(await t.count()).toBe(0);
      expect(await t.put('\uFFFD', stateOf(0, 1), 0)).toBe(1);
    } finally {
      await store.close();
    }
  });
}

function watch(system: GrainSystem): StorageErrorEvent[] {
  const errors: StorageErrorEvent[] = [];
  system.on('storageError', (e) => errors.push(e));
  return errors;
}
const fmt = (errors: StorageErrorEvent[]) => errors.map((e) => `${e.grain} ${e.op}: ${e.error.message}`);

/** Many actors across chunks: the listed keys plus dense and sparse runs. */
const MANY = [
  ...new Set([
    ...INT_KEYS,
    ...Array.from({ length: 300 }, (_, i) => i - 150),
    ...Array.from({ length: 100 }, (_, i) => i * 64 - 3200),
    ...Array.from({ length: 50 }, (_, i) => 2 ** 52 + i * 97),
  ]),
];

export function systemCases(f: AuditFixture): void {
  for (const [bname, backend] of f.backends) {
    const make = (clock?: { now: number }) =>
      new GrainSystem({
        backends: { b: backend() },
        logLevel: 'silent',
        handleSignals: false,
        ...(clock ? { clock: () => clock.now } : {}),
      });
    const strKeys = STR_KEYS.filter((k) => !(f.refusedStrings ?? []).includes(k));

    it(`${bname}: turns, flush, shutdown, a new system reads every actor's state back (int and string keys), ` +
      'then preload', async () => {
      const store = await f.make();
      const a = make();
      const errors = watch(a);
      a.register(IntKeyed, { placement: 'b', storage: store, flushIntervalMs: 3_600_000 });
      a.register(StrKeyed, { placement: 'b', slotSize: 1536, storage: store, flushIntervalMs: 3_600_000 });
      await a.start();
      try {
        for (let i = 0; i < MANY.length; i++) a.grain(IntKeyed, MANY[i]!).mark({ mark: markOf(i) });
        a.tellMany(IntKeyed, 'mark', {
          key: Float64Array.from(MANY),
          mark: Float64Array.from(MANY, (_, i) => markOf(i)),
        });
        for (let i = 0; i < strKeys.length; i++) a.grain(StrKeyed, strKeys[i]!).mark({ mark: markOf(i) });
        await a.idle();
        const fl = await a.flush();
        expect(fl.written).toBe(MANY.length + strKeys.length);
        // A second round of turns after the flush, written by shutdown.
        for (let i = 0; i < MANY.length; i++) a.grain(IntKeyed, MANY[i]!).mark({ mark: markOf(i) });
        await a.idle();
      } finally {
        await a.shutdown();
        await store.close();
      }
      expect(fmt(errors)).toEqual([]);

      const again = f.reopen(store);
      const b = make();
      const errorsB = watch(b);
      b.register(IntKeyed, { placement: 'b', storage: again });
      b.register(StrKeyed, { placement: 'b', slotSize: 1536, storage: again });
      await b.start();
      try {
        const r = await b.askMany(IntKeyed, 'get', { key: Float64Array.from(MANY) });
        for (let i = 0; i < MANY.length; i++)
          expect([r.mark[i], r.turns[i]], `int key ${MANY[i]}`).toEqual([markOf(i), 3]);
        for (let i = 0; i < strKeys.length; i++)
          expect(await b.grain(StrKeyed, strKeys[i]!).get({}), `string key ${JSON.stringify(strKeys[i])}`).toEqual({
            mark: markOf(i),
            turns: 1,
          });
        // The stored tables, read directly: every key once, int keys in order.
        const tab = await again.table(stateTableSpec(IntKeyed.grain, 'layout'));
        expect(await scanAll(tab, 77)).toEqual([...MANY].sort((x, y) => x - y));
      } finally {
        await b.shutdown();
      }
      expect(fmt(errorsB)).toEqual([]);

      // Preload everything, then every state is there without a load.
      const c = make();
      const errorsC = watch(c);
      c.register(IntKeyed, { placement: 'b', storage: again });
      c.register(StrKeyed, { placement: 'b', slotSize: 1536, storage: again });
      await c.start();
      try {
        expect(await c.preload(IntKeyed)).toBe(MANY.length);
        expect(await c.preload(StrKeyed)).toBe(strKeys.length);
        const r = await c.askMany(IntKeyed, 'get', { key: Float64Array.from(MANY) });
        for (let i = 0; i < MANY.length; i++)
          expect([r.mark[i], r.turns[i]], `preloaded int key ${MANY[i]}`).toEqual([markOf(i), 3]);
        for (let i = 0; i < strKeys.length; i++)
          expect(await c.grain(StrKeyed, strKeys[i]!).get({}), `preloaded ${JSON.stringify(strKeys[i])}`).toEqual({
            mark: markOf(i),
            turns: 1,
          });
      } finally {
        await c.shutdown();
      }
      expect(fmt(errorsC)).toEqual([]);

      // Preload of named keys (some not stored).
      const d = make();
      d.register(IntKeyed, { placement: 'b', storage: again });
      await d.start();
      try {
        const pick = INT_KEYS.filter((_, i) => i % 3 === 0);
        await d.preload(IntKeyed, [...pick, 12345, -12345]);
        for (const k of pick)
          expect((await d.grain(IntKeyed, k).get({})).mark, `preload(keys) ${k}`).toBe(markOf(MANY.indexOf(k)));
        expect(await d.grain(IntKeyed, 12345).get({})).toEqual({ mark: 0, turns: 0 });
      } finally {
        await d.shutdown();
        await again.close();
      }
    }, 120_000);

    it(`${bname}: idle collection writes and frees each actor; the next message reloads its own state`, async () => {
      const store = await f.make();
      const clock = { now: 1_000_000 };
      const a = make(clock);
      const errors = watch(a);
      a.register(IntKeyed, { placement: 'b', storage: store, flushIntervalMs: 3_600_000, idleMs: 1_000_000 });
      a.register(StrKeyed, {
        placement: 'b',
        slotSize: 1536,
        storage: store,
        flushIntervalMs: 3_600_000,
        idleMs: 1_000_000,
      });
      await a.start();
      try {
        for (let round = 1; round <= 2; round++) {
          for (let i = 0; i < MANY.length; i++) a.grain(IntKeyed, MANY[i]!).mark({ mark: markOf(i) + round });
          for (let i = 0; i < strKeys.length; i++) a.grain(StrKeyed, strKeys[i]!).mark({ mark: markOf(i) + round });
          await a.idle();
          clock.now += 2_000_000;
          expect(await a.collectIdle()).toBe(MANY.length + strKeys.length);
          expect(a.metrics()['AuditInt']!.storage!.resident, `round ${round}`).toBe(0);
        }
        const r = await a.askMany(IntKeyed, 'get', { key: Float64Array.from(MANY) });
        for (let i = 0; i < MANY.length; i++)
          expect([r.mark[i], r.turns[i]], `int key ${MANY[i]}`).toEqual([markOf(i) + 2, 2]);
        for (let i = 0; i < strKeys.length; i++)
          expect(await a.grain(StrKeyed, strKeys[i]!).get({}), JSON.stringify(strKeys[i])).toEqual({
            mark: markOf(i) + 2,
            turns: 2,
          });
      } finally {
        await a.shutdown();
        await store.close();
      }
      expect(fmt(errors)).toEqual([]);
    }, 120_000);

    it(`${bname}: key -0 addresses actor 0, across flush, restart and idle collection`, async () => {
      const store = await f.make();
      const clock = { now: 1_000_000 };
      const a = make(clock);
      const errors = watch(a);
      a.register(IntKeyed, { placement: 'b', storage: store, flushIntervalMs: 3_600_000, idleMs: 1_000_000 });
      await a.start();
      try {
        a.grain(IntKeyed, -0).mark({ mark: 7.5 });
        a.grain(IntKeyed, 1).mark({ mark: 8.5 });
        await a.idle();
        expect(await a.grain(IntKeyed, 0).get({})).toEqual({ mark: 7.5, turns: 1 });
        await a.flush();
        clock.now += 2_000_000;
        await a.collectIdle();
        expect(await a.grain(IntKeyed, -0).get({})).toEqual({ mark: 7.5, turns: 1 });
        a.tellMany(IntKeyed, 'mark', { key: Float64Array.of(-0), mark: Float64Array.of(9.5) });
        await a.idle();
      } finally {
        await a.shutdown();
        await store.close();
      }
      expect(fmt(errors)).toEqual([]);
      const again = f.reopen(store);
      const b = make();
      b.register(IntKeyed, { placement: 'b', storage: again });
      await b.start();
      try {
        expect(await b.grain(IntKeyed, 0).get({})).toEqual({ mark: 9.5, turns: 2 });
        expect(await b.grain(IntKeyed, 1).get({})).toEqual({ mark: 8.5, turns: 1 });
        const t = await again.table(stateTableSpec(IntKeyed.grain, 'layout'));
        expect(await scanAll(t, 10)).toEqual([0, 1]);
      } finally {
        await b.shutdown();
        await again.close();
      }
    }, 60_000);

    it(`${bname}: '' and a lone surrogate are refused at the call with storage (InvalidKeyError)`, async () => {
      const store = await f.make();
      const a = make();
      a.register(StrKeyed, { placement: 'b', slotSize: 1536, storage: store });
      await a.start();
      try {
        for (const k of ['', '\uD800']) {
          await expect(
            Promise.resolve().then(() => a.grain(StrKeyed, k).mark({ mark: 1 })),
            JSON.stringify(k),
          ).rejects.toThrow(InvalidKeyError);
          await expect(
            Promise.resolve().then(() => a.grain(StrKeyed, k).get({})),
            JSON.stringify(k),
          ).rejects.toThrow(InvalidKeyError);
        }
      } finally {
        await a.shutdown();
        await store.close();
      }
    });
  }
}
