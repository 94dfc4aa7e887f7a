/**
 * Keys through K2K: int keys over the whole safe range (negative, past 32 bits) sent to, forwarded to and
 * read back; string keys of any content sent actor → itself, string → int → string; ctx.key in each turn.
 */
import { HandlerError, InvalidKeyError, SchemaValidationError, type GrainSystem } from '@ringgrain/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keys, KeysS, strHash } from './grains.ts';
import { CONFIGS, guard, settle, startSystem } from './helpers.ts';

const INT_KEYS = [
  0,
  1,
  -1,
  7,
  2 ** 31 - 1,
  2 ** 31,
  -(2 ** 31),
  -(2 ** 31) - 1,
  2 ** 32 - 1,
  2 ** 32,
  2 ** 32 + 5,
  -(2 ** 32),
  2 ** 40 + 3,
  Number.MAX_SAFE_INTEGER,
  Number.MIN_SAFE_INTEGER,
  -123456789012,
];
const STR_KEYS = [
  '',
  'a',
  'A',
  '0',
  '1',
  ' ',
  'ü',
  'ß',
  '日本',
  '😀',
  'a😀b',
  'q-1',
  'x'.repeat(100),
  '\u0000',
  'tab\there',
  'Ω≈ç√∫',
];

describe.each(CONFIGS)('$name', (cfg) => {
  let system: GrainSystem;
  beforeAll(async () => {
    system = await startSystem(cfg.backend, [Keys, KeysS], { threads: cfg.threads });
  });
  afterAll(() => system?.shutdown());

  it(
    'int keys across the safe range: every actor sends to every other (K2K), each sees ctx.key = its own key ' +
      'and counts exact; a forward answers from the target',
    async () => {
      for (const from of INT_KEYS) for (const to of INT_KEYS) system.grain(Keys, from).tell.pass({ to });
      expect(await settle(system, 'int passes')).toEqual([]);
      for (const k of INT_KEYS) {
        const w = await guard(system.grain(Keys, k).who({}), `who ${k}`);
        // The last sender is any of them on a pool (senders on other threads); on one thread the last one sent.
        expect(INT_KEYS).toContain(w.lastFrom);
        expect({ ...w, lastFrom: 0 }).toEqual({ key: k, count: INT_KEYS.length, lastFrom: 0, seenKey: k, fromStr: 0 });
        if (cfg.backend === 'inline') expect(w.lastFrom).toBe(INT_KEYS[INT_KEYS.length - 1]);
        const via = await guard(
          system.grain(Keys, INT_KEYS[(INT_KEYS.indexOf(k) + 3) % INT_KEYS.length]!).whoVia({ to: k }),
          `whoVia ${k}`,
        );
        expect(via).toEqual(w);
      }
      // -0 is the actor 0.
      expect((await system.grain(Keys, -0).who({})).count).toBe(INT_KEYS.length);
    },
  );

  it('int → string → int: Keys k sends KeysS `k<k>` which answers back; both see their own ctx.key', async () => {
    for (const k of INT_KEYS) for (let i = 0; i < 3; i++) system.grain(Keys, k).tell.toStr({});
    expect(await settle(system, 'int/string')).toEqual([]);
    for (const k of INT_KEYS) {
      expect((await system.grain(Keys, k).who({})).fromStr).toBe(3);
      expect(await system.grain(KeysS, `k${k}`).who({})).toEqual({
        self: 0,
        fromInt: 3,
        lastFrom: k,
        keyLen: `k${k}`.length,
        keyHash: strHash(`k${k}`),
      });
    }
  });

  it(
    'string keys of any content: K2K to ctx.key reaches the same actor the host reaches (one actor per key, ' +
      'whatever lane)',
    async () => {
      for (const k of STR_KEYS) system.grain(KeysS, k).tell.echo({ times: 5 });
      for (const k of STR_KEYS) system.grain(KeysS, k).tell.self({});
      expect(await settle(system, 'string echoes')).toEqual([]);
      for (const k of STR_KEYS) {
        expect([k, await system.grain(KeysS, k).who({})]).toEqual([
          k,
          { self: 6, fromInt: 0, lastFrom: 0, keyLen: k.length, keyHash: strHash(k) },
        ]);
      }
    },
  );

  it(
    'a string key that is not well-formed UTF-16 (a lone surrogate) is refused, typed, from the host (ref, ' +
      'tellMany) and in K2K: it would run as the actor of another key, on another thread',
    async () => {
      for (const k of ['\ud800', 'a\udc00', 'x\ud83d']) {
        let e: unknown;
        try {
          system.grain(KeysS, k).tell.self({});
        } catch (x) {
          e = x;
        }
        expect(e).toBeInstanceOf(InvalidKeyError);
        await expect(system.grain(KeysS, k).who({})).rejects.toBeInstanceOf(InvalidKeyError);
      }
      expect(() => system.tellMany(KeysS, 'self', { key: ['ok', 'x\ud83d'] })).toThrow(SchemaValidationError);
      const e = await guard(
        system
          .grain(KeysS, 'half')
          .sendHalf({})
          .then(
            (v) => v,
            (x: unknown) => x,
          ),
        'sendHalf',
      );
      expect(e).toBeInstanceOf(HandlerError);
      expect((e as Error).message).toMatch(
        /KeysS\.sendHalf failed: send to grain "KeysS" failed: invalid key .*lone surrogate/,
      );
      // The keys it would have collapsed into stay their own actors, untouched.
      for (const k of ['\ufffd', 'a\ufffd', 'x\ufffd', 'half\ufffd'])
        expect((await system.grain(KeysS, k).who({})).self).toBe(0);
      expect(await settle(system, 'lone surrogates')).toEqual([]);
    },
  );
});
