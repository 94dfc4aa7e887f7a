import { Grain, t, type TypesOf } from '@ringgrain/core';

/**
 * An int-keyed stored grain: `mark` records a value chosen per key, so a state that comes back under another key shows.
 */
export class IntKeyed extends Grain({
  name: 'AuditInt',
  module: import.meta.url,
  state: t.struct({ mark: t.f64, turns: t.u32 }),
  methods: {
    mark: { request: t.struct({ mark: t.f64 }) },
    get: { request: t.struct({}), reply: t.struct({ mark: t.f64, turns: t.u32 }) },
  },
}) {
  mark(s: I['state'], m: I['req']['mark']): void {
    s.mark = m.mark;
    s.turns += 1;
  }

  get(s: I['state']): I['reply']['get'] {
    return { mark: s.mark, turns: s.turns };
  }
}
type I = TypesOf<typeof IntKeyed>;

/** The same, string-keyed. */
export class StrKeyed extends Grain({
  name: 'AuditStr',
  module: import.meta.url,
  key: 'string',
  state: t.struct({ mark: t.f64, turns: t.u32 }),
  methods: {
    mark: { request: t.struct({ mark: t.f64 }) },
    get: { request: t.struct({}), reply: t.struct({ mark: t.f64, turns: t.u32 }) },
  },
}) {
  mark(s: S['state'], m: S['req']['mark']): void {
    s.mark = m.mark;
    s.turns += 1;
  }

  get(s: S['state']): S['reply']['get'] {
    return { mark: s.mark, turns: s.turns };
  }
}
type S = TypesOf<typeof StrKeyed>;

const M = Number.MAX_SAFE_INTEGER;

/** Int keys around zero, chunk boundaries, 2^31, 2^32 and ±(2^53 − 1). */
export const INT_KEYS: readonly number[] = [
  -M,
  -M + 1,
  -(2 ** 53) + 64,
  -(2 ** 32) - 1,
  -(2 ** 32),
  -(2 ** 31) - 1,
  -(2 ** 31),
  -129,
  -128,
  -127,
  -65,
  -64,
  -63,
  -2,
  -1,
  0,
  1,
  2,
  62,
  63,
  64,
  65,
  127,
  128,
  129,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32 - 1,
  2 ** 32,
  2 ** 32 + 1,
  2 ** 40 + 63,
  2 ** 40 + 64,
  M - 64,
  M - 1,
  M,
];

/** String keys a user could pick (no '' and no lone surrogate: refused at the call). */
export const STR_KEYS: readonly string[] = [
  'a',
  'A',
  'a b',
  'é',
  'e\u0301',
  '日本語',
  '😀',
  '👩‍👩‍👧',
  '𝒳',
  '\u0001',
  '\u001b',
  '\u007f',
  '\uffff',
  'x'.repeat(1000),
  'ä'.repeat(512),
  '🎉'.repeat(256),
  '0',
  '-1',
  '1e3',
  ' ',
  'a\u0000b',
];

/** A distinct mark per key (by its index in the list), exact in a f64. */
export const markOf = (i: number): number => 1000 + i + 0.5;
