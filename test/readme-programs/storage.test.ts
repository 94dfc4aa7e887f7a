/**
 * README "Persistent state" with LMDB: flush, idle collection by the injected clock, restart, preload; int and string
 * keys.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { InvalidKeyError } from '@ringgrain/core';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { afterAll, describe, expect, it } from 'vitest';
import { BACKENDS, imbalance, startSystem } from './backends.ts';
import { Account, Named } from './grains.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rg-readme-storage-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  it(
    'states survive idle collection and a restart; preload ' + 'uploads them; the empty string key is refused',
    async () => {
      const dataDir = path.join(tmp, backend);
      const clock = { now: 1_000 };
      const intKeys = [42, -3, 2 ** 40];
      const strKeys = ['zoë', 'e', 'x'.repeat(64)];
      let store = new LmdbStore({ dataDir });
      let system = await startSystem(
        backend,
        [
          [Account, { storage: store, idleMs: 1_000 }],
          [Named, { storage: store, idleMs: 1_000 }],
        ],
        { clock: () => clock.now },
      );
      for (let i = 0; i < intKeys.length; i++) await system.grain(Account, intKeys[i]!).deposit({ amount: i + 5 });
      for (let i = 0; i < strKeys.length; i++) await system.grain(Named, strKeys[i]!).hit({ by: i + 1 });
      // A store holds no empty key: with storage '' is refused at the call (it used to fail every load).
      expect(() => system.grain(Named, '').tell.poke({ by: 1 })).toThrow(InvalidKeyError);
      await expect(Promise.resolve().then(() => system.grain(Named, '').hit({ by: 1 }))).rejects.toBeInstanceOf(
        InvalidKeyError,
      );
      expect(() => system.tellMany(Named, 'poke', { key: ['e', ''], by: [1, 1] })).toThrow(/row 1/);
      expect(await system.flush()).toEqual({ written: 6, kept: 0 });
      expect(await system.flush()).toEqual({ written: 0, kept: 0 });
      // Idle by the injected clock: every actor deactivated, and back from its written state.
      clock.now += 5_000;
      // Two calls at once (as a call and the sweep, every idleMs / 2, may be): each actor is collected once,
      // and once either resolves every actor idle by then is deactivated.
      const [a, b] = await Promise.all([system.collectIdle(), system.collectIdle()]);
      const m = system.metrics();
      // A call counts the actors it deactivated and those of a collection under way that it joined (the other
      // call's, or the sweep's): the first call counts all 6; each actor is deactivated once.
      expect(Math.max(a, b)).toBe(6);
      expect(a + b).toBeGreaterThanOrEqual(6);
      expect(a + b).toBeLessThanOrEqual(12);
      expect(m['Account']!.storage!.deactivated + m['NamedRP']!.storage!.deactivated).toBe(6);
      expect([m['Account']!.storage!.resident, m['NamedRP']!.storage!.resident]).toEqual([0, 0]);
      expect(await system.grain(Account, 42).get({})).toEqual({ balance: 5, ops: 1 });
      await system.grain(Account, -3).deposit({ amount: 1 });
      await system.idle();
      expect(await imbalance(system)).toEqual([]);
      const st = system.metrics()['Account']!.storage!;
      expect(st.deactivated).toBe(3);
      expect(st.loadedFound).toBe(2);
      await system.shutdown();
      await store.close();

      store = new LmdbStore({ dataDir });
      system = await startSystem(
        backend,
        [
          [Account, { storage: store }],
          [Named, { storage: store }],
        ],
        { clock: () => clock.now },
      );
      try {
        expect(await system.preload(Account)).toBe(3);
        expect(await system.preload(Named, [...strKeys, 'nobody'])).toBe(3);
        const acc = await system.askMany(Account, 'get', { key: [...intKeys, 7] });
        expect(Array.from(acc.balance)).toEqual([5, 6 + 1, 7, 0]);
        const hits = await system.askMany(Named, 'hit', { key: [...strKeys, 'nobody'], by: [0, 0, 0, 0] });
        expect(Array.from(hits.hits)).toEqual([1, 2, 3, 0]);
        await system.idle();
        expect(system.metrics()['Account']!.storage!.preloaded).toBe(3);
      } finally {
        await system.shutdown();
        await store.close();
      }
    },
  );
});
