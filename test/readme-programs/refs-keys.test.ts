/**
 * README: `system.grain(Account, 42)` is a typed reference; "keys are integers or strings"; an ask returns a
 * Promise of the typed reply, `ref.tell.m` is one-way (undefined once in the ring). Keys a JS caller gets wrong
 * (null, undefined, bigint, -0, numbers as strings) are typed errors or the same actor as their equal.
 */
import { InvalidKeyError, type GrainSystem } from '@ringgrain/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, imbalance, startSystem } from './backends.ts';
import { Account, Named, Probe } from './grains.ts';

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  let system: GrainSystem;
  beforeAll(async () => {
    system = await startSystem(backend, [Account, Probe, Named]);
  });
  afterAll(() => system.shutdown());

  it(
    'a ref carries its key; two refs of one key are one ' + 'actor; an ask is a Promise, a tell returns undefined',
    async () => {
      const a = system.grain(Account, 42);
      expect(a.key).toBe(42);
      expect(system.grain(Named, 'x').key).toBe('x');
      const p = a.deposit({ amount: 5 });
      expect(p).toBeInstanceOf(Promise);
      expect(await p).toEqual({ balance: 5 });
      expect(system.grain(Account, 42).tell.credit({ amount: 1 })).toBeUndefined();
      expect(await system.grain(Account, 42).get({})).toEqual({ balance: 6, ops: 2 });
    },
  );

  it('-0 is the actor 0 (by ref, tellMany and askMany alike)', async () => {
    system.grain(Probe, 0).tell.bump({ by: 1 });
    system.grain(Probe, -0).tell.bump({ by: 1 });
    system.tellMany(Probe, 'bump', { key: Float64Array.of(-0, 0), by: [1, 1] });
    expect((await system.grain(Probe, 0).read({})).small).toBe(4);
    expect((await system.grain(Probe, -0).read({})).small).toBe(4);
    const r = await system.askMany(Probe, 'read', { key: Float64Array.of(-0) });
    expect(Array.from(r.small as ArrayLike<number>)).toEqual([4]);
  });

  it(
    'null, undefined, a bigint, a numeric string, an object: InvalidKeyError (typed, with code and hint), ' +
      'nothing sent',
    async () => {
      await system.idle();
      const before = system.metrics()['Probe']!.sent;
      for (const k of [null, undefined, 7n, '7', {}, [1], true] as unknown[]) {
        let err: unknown;
        try {
          system.grain(Probe, k as number).tell.bump({ by: 1 });
        } catch (e) {
          err = e;
        }
        expect(err, String(k)).toBeInstanceOf(InvalidKeyError);
        expect((err as InvalidKeyError).code).toBe('INVALID_KEY');
        expect((err as InvalidKeyError).hint).toBeTruthy();
        await expect(
          Promise.resolve().then(() => system.grain(Probe, k as number).read({})),
          String(k),
        ).rejects.toBeInstanceOf(InvalidKeyError);
      }
      for (const k of [7, null, undefined] as unknown[])
        expect(() => system.grain(Named, k as string).tell.poke({ by: 1 }), String(k)).toThrow(InvalidKeyError);
      await system.idle();
      expect(system.metrics()['Probe']!.sent).toBe(before);
      expect(await imbalance(system)).toEqual([]);
    },
  );
});
