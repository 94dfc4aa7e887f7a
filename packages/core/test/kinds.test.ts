/**
 * The scalar kinds table (schema/kinds.ts) against the platform it describes: typed arrays, DataView
 * conversions and the msgpack formats; and the store semantics state views give each kind.
 */
import { describe, expect, it } from 'vitest';
import {
  KINDS,
  NUMERIC_KINDS,
  SCALAR_KINDS,
  intRange,
  layoutOf,
  snapshot,
  t,
  viewAt,
} from '../src/entries/internal.ts';

describe('scalar kinds table', () => {
  it('lists every kind of t.*, numeric kinds being those with a typed array', () => {
    expect(SCALAR_KINDS).toEqual(['f32', 'f64', 'i8', 'u8', 'i16', 'u16', 'i32', 'u32', 'bool']);
    expect(NUMERIC_KINDS).toEqual(['f32', 'f64', 'i8', 'u8', 'i16', 'u16', 'i32', 'u32']);
    for (const k of SCALAR_KINDS) expect(t[k], k).toMatchObject({ kind: 'scalar', scalar: k });
  });

  it(
    "sizes are the typed arrays' element sizes, alignment equals size, integer ranges are the typed arrays' " +
      'ranges',
    () => {
      for (const k of NUMERIC_KINDS) {
        const spec = KINDS[k];
        expect(spec.size, k).toBe(spec.array.BYTES_PER_ELEMENT);
        expect(spec.align, k).toBe(spec.size);
        const r = intRange(k);
        if (!r) continue;
        // The typed array keeps min and max and wraps one past them to the other end.
        const a = spec.array.from([r.min, r.max, r.max + 1, r.min - 1]);
        expect([...a], k).toEqual([r.min, r.max, r.min, r.max]);
      }
      expect(KINDS.bool.size).toBe(1);
    },
  );

  it('the msgpack choice agrees with the value class; fixed-width tags are the msgpack formats of that width', () => {
    for (const k of SCALAR_KINDS) {
      const { repr, msgpack } = KINDS[k];
      const want = repr.class === 'float' ? (repr.bits === 32 ? 'float32' : 'float64') : repr.class;
      expect(msgpack.scalar, k).toBe(want);
      if (repr.class === 'int') {
        const bytes = KINDS[k].size;
        const signed = repr.min < 0;
        const tag = { 1: signed ? 0xd0 : 0xcc, 2: signed ? 0xd1 : 0xcd, 4: signed ? 0xd2 : 0xce }[bytes as 1 | 2 | 4];
        expect(msgpack.fixed, k).toMatchObject({ tag, width: 1 + bytes });
      }
    }
  });

  it("zod accepts each integer kind's bounds and refuses one past them and fractions", () => {
    for (const k of NUMERIC_KINDS) {
      const r = intRange(k);
      if (!r) continue;
      const z = KINDS[k].zod;
      expect(z.safeParse(r.min).success && z.safeParse(r.max).success, k).toBe(true);
      expect(
        [
          z.safeParse(r.min - 1).success,
          z.safeParse(r.max + 1).success,
          z.safeParse(0.5).success,
          z.safeParse('1').success,
        ],
        k,
      ).toEqual([false, false, false, false]);
    }
  });
});

describe("state views store like the kind's typed array (what the generated C does too)", () => {
  const s = t.struct({ a: t.u8, b: t.i8, c: t.u16, d: t.i16, bytes: t.array(t.u8, 3), shorts: t.vec(t.i16, 2) });
  type V = {
    a: number;
    b: number;
    c: number;
    d: number;
    bytes: Uint8Array;
    shorts: { length: number; items: Int16Array };
  };

  it('scalar fields wrap modulo 2^bits after truncation; NaN and ±Infinity store 0', () => {
    const buf = new ArrayBuffer(layoutOf(s).size);
    const v = viewAt(s, buf, 0) as V;
    const cases: Array<[keyof V & ('a' | 'b' | 'c' | 'd'), number, number]> = [
      ['a', 255, 255],
      ['a', 256, 0],
      ['a', -1, 255],
      ['a', 1.9, 1],
      ['a', -1.9, 255],
      ['a', 2 ** 40 + 3, 3],
      ['a', NaN, 0],
      ['a', Infinity, 0],
      ['b', 127, 127],
      ['b', 128, -128],
      ['b', 255, -1],
      ['b', -129, 127],
      ['b', -0.5, 0],
      ['c', 65536, 0],
      ['c', -1, 65535],
      ['c', 70000.7, 4464],
      ['d', 32768, -32768],
      ['d', -32769, 32767],
      ['d', 65535, -1],
      ['d', -Infinity, 0],
    ];
    for (const [f, stored, read] of cases) {
      v[f] = stored;
      expect(v[f], `${f} = ${stored}`).toBe(read);
    }
    // Arithmetic happens on JS numbers; the store wraps the result.
    v.a = 250;
    v.a += 10;
    expect(v.a).toBe(4);
    v.b = -128;
    v.b -= 1;
    expect(v.b).toBe(127);
  });

  it('arrays of small integers are their typed arrays over the state bytes; snapshots copy them', () => {
    const buf = new ArrayBuffer(layoutOf(s).size);
    const v = viewAt(s, buf, 0) as V;
    expect(v.bytes).toBeInstanceOf(Uint8Array);
    expect(v.shorts.items).toBeInstanceOf(Int16Array);
    v.bytes[0] = 300;
    v.bytes[1] = -2;
    v.shorts.items[1] = 40000;
    v.shorts.length = 2;
    const snap = snapshot(s, buf, 0) as V & { shorts: Int16Array };
    expect([...snap.bytes]).toEqual([44, 254, 0]);
    expect(snap.shorts).toBeInstanceOf(Int16Array);
    expect([...snap.shorts]).toEqual([0, 40000 - 65536]);
  });
});
