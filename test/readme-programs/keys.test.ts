/** README: keys are integers or strings; a bad key fails the send (InvalidKeyError). */
import { InvalidKeyError, type GrainSystem } from '@ringgrain/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, imbalance, startSystem } from './backends.ts';
import { Named, Probe } from './grains.ts';

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  let system: GrainSystem;
  beforeAll(async () => {
    system = await startSystem(backend, [Probe, Named]);
  });
  afterAll(() => system.shutdown());

  it('integer keys across the safe range are distinct actors', async () => {
    const keys = [
      0,
      -1,
      1,
      2 ** 31 - 1,
      -(2 ** 31),
      2 ** 31,
      2 ** 32,
      2 ** 32 + 1,
      2 ** 40,
      -(2 ** 40),
      Number.MAX_SAFE_INTEGER,
      Number.MIN_SAFE_INTEGER,
    ];
    for (let i = 0; i < keys.length; i++) system.grain(Probe, keys[i]!).tell.bump({ by: i + 1 });
    for (let i = 0; i < keys.length; i++)
      expect((await system.grain(Probe, keys[i]!).read({})).small, `key ${keys[i]}`).toBe(i + 1);
    await system.idle();
    expect(await imbalance(system)).toEqual([]);
  });

  it(
    'string keys: empty, unicode, long, and look-alikes are distinct actors, by ref and by ' + 'tellMany/askMany alike',
    async () => {
      const keys = ['', ' ', 'a', 'A', 'ä', '日本', '1', '01', 'x'.repeat(100)];
      for (let i = 0; i < keys.length; i++) system.grain(Named, keys[i]!).tell.poke({ by: i + 1 });
      for (let i = 0; i < keys.length; i++)
        expect((await system.grain(Named, keys[i]!).hit({ by: 0 })).hits, `key ${JSON.stringify(keys[i])}`).toBe(i + 1);
      // The bulk paths take the same keys as a ref ('' was refused by their key check only).
      system.tellMany(Named, 'poke', { key: keys, by: keys.map(() => 100) });
      const r = await system.askMany(Named, 'hit', { key: keys, by: keys.map(() => 0) });
      expect(Array.from(r.hits)).toEqual(keys.map((_, i) => i + 101));
    },
  );

  it('bad keys throw InvalidKeyError and send nothing', async () => {
    const before = system.metrics()['Probe']!.sent;
    for (const k of [1.5, Number.NaN, Infinity, 2 ** 53, '7' as unknown as number]) {
      expect(() => system.grain(Probe, k).tell.bump({ by: 1 }), String(k)).toThrow(InvalidKeyError);
      await expect(
        Promise.resolve().then(() => system.grain(Probe, k).read({})),
        String(k),
      ).rejects.toBeInstanceOf(InvalidKeyError);
    }
    expect(() => system.grain(Named, 3 as unknown as string).tell.poke({ by: 1 })).toThrow(InvalidKeyError);
    expect(() => system.tellMany(Probe, 'bump', { key: [1, 2.5], by: [1, 1] })).toThrow();
    await system.idle();
    expect(system.metrics()['Probe']!.sent).toBe(before);
  });
});
