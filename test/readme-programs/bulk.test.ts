/** README: tellMany / askMany from columns. */
import { AskManyError, SchemaValidationError, type GrainSystem } from '@ringgrain/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, imbalance, startSystem } from './backends.ts';
import { Account, Named, Probe } from './grains.ts';

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  let system: GrainSystem;
  beforeAll(async () => {
    system = await startSystem(backend, [Account, Probe, Named]);
  });
  afterAll(() => system.shutdown());

  it('tellMany of zero rows sends nothing; askMany of zero rows resolves to empty columns', async () => {
    const before = system.metrics()['Account']!.sent;
    expect(system.tellMany(Account, 'credit', { key: new Int32Array(0), amount: new Float64Array(0) })).toBe(0);
    const r = await system.askMany(Account, 'deposit', { key: new Int32Array(0), amount: new Float64Array(0) });
    expect(r.balance).toBeInstanceOf(Float64Array);
    expect(r.balance.length).toBe(0);
    await system.idle();
    expect(system.metrics()['Account']!.sent).toBe(before);
  });

  it('tellMany rows go out in order per actor, as N tells (images and rows alike)', async () => {
    for (const images of [true, false]) {
      system.tellManyImages = images;
      const base = images ? 1000 : 2000;
      const n = 4000;
      const key = new Int32Array(n);
      const nn = new Int32Array(n);
      for (let i = 0; i < n; i++) {
        key[i] = base + (i % 8);
        nn[i] = Math.floor(i / 8) + 1;
      }
      expect(system.tellMany(Probe, 'seq', { key, n: nn })).toBe(n);
      await system.idle();
      for (let a = 0; a < 8; a++) {
        const r = await system.grain(Probe, base + a).read({});
        expect(r, `actor ${base + a} images=${images}`).toMatchObject({ last: n / 8, bad: 0, count: n / 8 });
      }
    }
    system.tellManyImages = true;
    expect(await imbalance(system)).toEqual([]);
  });

  it('a bad column throws SchemaValidationError naming column and row, and sends nothing', async () => {
    const before = system.metrics()['Probe']!.sent;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ key: [1, 2, 3], n: [1, 2.5, 3] }, 'n'],
      [{ key: [1, 2, 3], n: [1, 2] }, 'n'],
      [{ key: [1, 2, 3], n: new Float64Array([1, 2, 2 ** 31]) }, 'n'],
      [{ key: [1, 2, 3] }, 'n'],
      [{ key: [1, 2, 1.5], n: [1, 2, 3] }, 'key'],
    ];
    for (const [cols, col] of cases) {
      let err: unknown;
      try {
        system.tellMany(Probe, 'seq', cols as never);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(cols)).toBeInstanceOf(SchemaValidationError);
      expect((err as Error).message).toContain(col);
    }
    await system.idle();
    expect(system.metrics()['Probe']!.sent).toBe(before);
  });

  it('askMany: replies as columns in row order (numeric → Float64Array, bool → array); string keys', async () => {
    const n = 300;
    const key = new Int32Array(n).map((_, i) => 5000 + (i % 7));
    const amount = new Float64Array(n).fill(1);
    const r = await system.askMany(Account, 'deposit', { key, amount });
    expect(r.balance.length).toBe(n);
    for (let i = 0; i < n; i++) expect(r.balance[i]).toBe(Math.floor(i / 7) + 1);
    const flips = await system.askMany(Probe, 'flip', { key: [1, 2, 3], on: [true, false, true] });
    expect(Array.from(flips.on as ArrayLike<boolean>)).toEqual([true, false, true]);
    const hits = await system.askMany(Named, 'hit', { key: ['x', 'y', 'x'], by: [1, 2, 3] });
    expect(Array.from(hits.hits)).toEqual([1, 2, 4]);
    system.tellMany(Named, 'poke', { key: ['x', 'z'], by: new Uint32Array([10, 20]) });
    expect((await system.grain(Named, 'x').hit({ by: 0 })).hits).toBe(14);
    expect((await system.grain(Named, 'z').hit({ by: 0 })).hits).toBe(20);
  });

  it('askMany: a failing row rejects with AskManyError naming the first failed row once all settled', async () => {
    const n = 100;
    const key = new Int32Array(n).map((_, i) => 7000 + (i % 5));
    const code = new Int32Array(n);
    code[37] = 1;
    code[80] = 1;
    const e = await system.askMany(Probe, 'boom', { key, code }).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(AskManyError);
    expect((e as AskManyError).row).toBe(37);
    expect((e as AskManyError).failedRows).toBe(2);
    await system.idle();
    expect(await imbalance(system)).toEqual([]);
  });

  it('tellMany: failing rows are tellError events carrying the row', async () => {
    const rows: Array<number | undefined> = [];
    const on = (e: { row?: number }) => rows.push(e.row);
    system.on('tellError', on);
    try {
      const code = new Int32Array(10);
      code[3] = 1;
      system.tellMany(Probe, 'boomTell', { key: new Int32Array(10).fill(8000), code });
      await system.idle();
      expect(rows.length).toBe(1);
    } finally {
      system.off('tellError', on);
    }
  });

  it(
    'tellMany: a row over the slot size is a tellError carrying its row (PayloadTooLargeError); the other ' +
      'rows go, in order',
    async () => {
      const events: Array<{ row?: number; error: Error }> = [];
      const on = (e: { row?: number; error: Error }) => events.push(e);
      system.on('tellError', on);
      try {
        const keys = ['ta', 'tb', 'tc', 't'.repeat(1000), 'td'];
        expect(system.tellMany(Named, 'poke', { key: keys, by: [1, 2, 3, 4, 5] })).toBe(5);
        const bytes = [new Uint8Array(10), new Uint8Array(900), new Uint8Array(20)];
        system.tellMany(Probe, 'blob', { key: [9001, 9002, 9003], bytes } as never);
        await system.idle();
        expect(events.map((e) => [e.row, e.error.constructor.name])).toEqual([
          [3, 'PayloadTooLargeError'],
          [1, 'PayloadTooLargeError'],
        ]);
        const hits = await system.askMany(Named, 'hit', { key: ['ta', 'tb', 'tc', 'td'], by: [0, 0, 0, 0] });
        expect(Array.from(hits.hits)).toEqual([1, 2, 3, 5]);
        await system.idle();
        expect(await imbalance(system)).toEqual([]);
      } finally {
        system.off('tellError', on);
      }
    },
  );
});
