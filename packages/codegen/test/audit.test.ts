import { describe, expect, it } from 'vitest';
import { differential, type Case } from './diff-lib.ts';
import { t } from '@ringgrain/core';
import { viewAt, layoutOf } from '@ringgrain/core/backend';
import { generateKernel } from '../src/index.ts';
import { encode } from './diff-lib.ts';
import { Algo, Floats, Ints, Named2, Nest, Props, Shapes, Shrinking, Views } from './fixtures/audit.ts';
import type { Ranges } from './random.ts';
import { HAVE_GXX } from './toolchain.ts';

const SMALL: Ranges = { float: 1e4, int: 1e6 };
const all = (cls: any, ranges: Ranges): Case[] => cls.grain.methods.map((m: any) => ({ method: m.name, ranges }));

describe.skipIf(!HAVE_GXX)('audit: user-style grains, JS handler vs generated C', () => {
  it('Ints', () => {
    differential(
      Ints,
      [Ints.grain],
      [...all(Ints, SMALL), ...all(Ints, { float: 5e9, int: 5e9 }), ...all(Ints, { float: 3, int: 3 })],
      600,
      101,
    );
  });
  it('Floats', () => {
    differential(Floats, [Floats.grain], [...all(Floats, SMALL), ...all(Floats, { float: 3, int: 20 })], 400, 102);
  });
  it('Shapes', () => {
    differential(Shapes, [Shapes.grain], [...all(Shapes, SMALL), ...all(Shapes, { float: 3, int: 300 })], 400, 103);
  });
  it('Named2', () => {
    differential(Named2, [Named2.grain], all(Named2, SMALL), 100, 104);
  });
  it(
    'a reduction the loop end reads stays sequential (JS re-tests the end each iteration); a plain integer sum ' +
      'goes parallel',
    () => {
      const loops = generateKernel(Shrinking.grain).loops;
      expect(loops.map((l) => l.parallel)).toEqual([false, false, true]);
      expect(loops[0]!.why).toContain('it reduces into n, which its bounds read');
      expect(loops[1]!.why).toContain('it reduces into lo, which its bounds read');
      const r = differential(
        Shrinking,
        [Shrinking.grain],
        [{ method: 'count', ranges: { float: 1, int: 300 }, tweak: (m) => (m.n = Math.abs(m.n)) }],
        60,
        105,
      );
      expect(r.replies).toBe(60);
    },
  );
  it('?: choosing between array or object literals and fields fills reply fields: both branches taken', () => {
    const r = differential(
      Shapes,
      [Shapes.grain],
      [
        { method: 'lit', ranges: SMALL },
        { method: 'shrink', ranges: { float: 1, int: 3 } },
      ],
      200,
      106,
    );
    expect(r.exactReplies).toBe(r.replies);
    expect(r.replies + r.mismatches).toBe(200);
    expect(r.replies).toBeGreaterThan(100);
  });
  it(
    "the host encoder takes a live state struct view, an array of them and a state bool array as their schemas' " +
      'values',
    () => {
      const pt = t.struct({ x: t.f32 });
      const st = t.struct({ p: pt, ps: t.array(pt, 2), bs: t.array(t.bool, 2), xs: t.array(t.f64, 2) });
      const s = viewAt(st, new ArrayBuffer(layoutOf(st).size), 0) as any;
      s.p.x = 1.5;
      s.ps[1].x = -2;
      s.bs[1] = true;
      const same = (schema: any, view: unknown, plain: unknown) =>
        expect(encode(schema, view)).toEqual(encode(schema, plain));
      same(t.struct({ p: pt }), { p: s.p }, { p: { x: 1.5 } });
      same(t.struct({ ps: t.array(pt, 2) }), { ps: s.ps }, { ps: [{ x: 0 }, { x: -2 }] });
      same(t.struct({ bs: t.array(t.bool, 2) }), { bs: s.bs }, { bs: [false, true] });
      // A view of another struct schema is not taken for this one.
      expect(() => encode(t.struct({ p: t.struct({ y: t.f32 }) }), { p: s.p })).toThrow();
    },
  );
  it('Views: state structs and arrays of structs copied into replies and K2K payloads', () => {
    const r = differential(Views, [Views.grain], all(Views, SMALL), 200, 110);
    expect(r.sends).toBeGreaterThan(50);
    expect(r.exactReplies).toBe(r.replies);
  });
  it('Nest: arrays of arrays, vecs of structs with arrays, copied into replies and payloads', () => {
    const r = differential(
      Nest,
      [Nest.grain],
      [...all(Nest, { float: 100, int: 70000 }), ...all(Nest, { float: 3, int: 30 })],
      200,
      107,
    );
    expect(r.sends).toBeGreaterThan(50);
  });
  it('Props: handlers written as arrow/function properties, a quoted method name, overload signatures', () => {
    const r = differential(Props, [Props.grain], all(Props, SMALL), 200, 108);
    expect(r.replies + r.mismatches).toBe(150);
    expect(r.exactReplies).toBe(r.replies);
  });
  it('Algo: FNV-1a, xorshift, gcd, popcount, insertion sort and binary search', () => {
    const cases: Case[] = [
      ...all(Algo, SMALL),
      ...all(Algo, { float: 1, int: 2 ** 31 }),
      { method: 'sort', ranges: { float: 1, int: 5 }, tweak: (m) => (m.find = m.ys[Math.abs(m.find) % 12]) },
    ];
    const r = differential(Algo, [Algo.grain], cases, 360, 109);
    expect(r.exactReplies).toBe(r.replies);
    expect(r.replies).toBeGreaterThan(300);
  });
  it('special doubles (NaN, ±Infinity, -0, halves, 2^31 and 2^32 bounds, extremes) through Ints and Floats', () => {
    const SPECIAL = [
      NaN,
      Infinity,
      -Infinity,
      -0,
      0,
      0.5,
      -0.5,
      1.5,
      -2.5,
      2 ** 31,
      -(2 ** 31) - 1,
      2 ** 32,
      2 ** 32 + 0.5,
      -(2 ** 53),
      1e308,
      5e-324,
      -1e-300,
      3.4028235677973366e38,
      255.5,
    ];
    let k = 0;
    const pick = () => SPECIAL[k++ % SPECIAL.length]!;
    const f32 = (v: number) => Math.fround(v);
    const tw: Record<string, (m: any) => void> = {
      arith: (m) => ((m.v = pick()), (m.w = f32(pick()))),
      store: (m) => (m.v = pick()),
      cmp: (m) => (m.v = pick()),
      narrow: (m) => (m.v = pick()),
      math: (m) => ((m.a = pick()), (m.b = pick()), (m.c = f32(pick()))),
      early: (m) => (m.x = pick()),
      spec: (m) => (m.a = pick()),
    };
    for (const [cls, seed] of [
      [Ints, 110],
      [Floats, 111],
    ] as const) {
      const cases: Case[] = cls.grain.methods
        .filter((m) => tw[m.name])
        .map((m) => ({ method: m.name, ranges: SMALL, tweak: tw[m.name]! }));
      const r = differential(cls, [cls.grain], cases, 19 * 2 * cases.length, seed);
      expect(r.replies + r.mismatches + r.throws).toBe(19 * 2 * cases.length);
    }
  });
});
