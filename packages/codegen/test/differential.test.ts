import type { GrainDef } from '@ringgrain/core/types';
import { layoutOf, snapshot } from '@ringgrain/core/backend';
import { describe, expect, it } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import * as Conformance from '../../../test/fixtures/grains.ts';
import { generateKernel } from '../src/index.ts';
import { Counter, Relay } from './fixtures/k2k.ts';
import { Stats } from './fixtures/stats.ts';
import { CONFORMANCE_GRAINS } from './fixtures/conformance.ts';
import { Guard } from './fixtures/throws.ts';
import { Harness } from './harness.ts';
import { differential, encode, type Case } from './diff-lib.ts';
import { randomState, rng, type Ranges } from './random.ts';
import { HAVE_GXX } from './toolchain.ts';

const SMALL: Ranges = { float: 1e4, int: 1e6 };

describe.skipIf(!HAVE_GXX)('differential: JS handler vs generated C (host build)', () => {
  it('bank Account: every method, 400 random inputs', () => {
    const cases: Case[] = ['deposit', 'withdraw', 'transfer', 'credit', 'balance'].map((method) => ({
      method,
      ranges: SMALL,
    }));
    const r = differential(Account, [Account.grain], cases, 400, 1);
    expect(r.replies).toBe(240);
    expect(r.exactReplies).toBe(r.replies);
    expect(r.sends).toBeGreaterThan(10);
  });

  it('Stats: arrays, vecs, nested structs, f32 math, loops, helpers — 700 random inputs', () => {
    const cases: Case[] = [
      { method: 'add', ranges: { float: 12, int: 1e6 } },
      { method: 'move', ranges: { float: 100, int: 70 } },
      { method: 'mix', ranges: SMALL },
      { method: 'mix', ranges: { float: 1e4, int: 300 } },
      // Halves and negative halves: Math.round's tie rule (toward +Infinity, -0 for [-0.5, 0)).
      { method: 'mix', ranges: { float: 40, int: 300 }, tweak: (m) => (m.c = Math.round(m.c * 2) / 2) },
      { method: 'spin', ranges: { float: 1, int: 1000 }, tweak: (m) => (m.n = Math.abs(m.n) % 1000) },
      { method: 'at', ranges: SMALL, tweak: (m) => (m.i = Math.abs(m.i) % 8) },
    ];
    const r = differential(Stats, [Stats.grain], cases, 700, 2);
    expect(r.replies).toBe(700);
    // Transcendentals may differ by an ulp between glibc and V8; everything else is bit-identical.
    expect(r.exactReplies).toBeGreaterThan(600);
  });

  it('K2K: ctx.send to another class and to itself, ctx.forward, ctx.key — 200 random inputs', () => {
    const grains = [Counter.grain, Relay.grain];
    const r = differential(
      Relay,
      grains,
      [
        { method: 'route', ranges: SMALL },
        { method: 'fanout', ranges: { float: 1, int: 200 } },
      ],
      200,
      3,
    );
    expect(r.sends).toBeGreaterThan(200);
    const c = differential(
      Counter,
      grains,
      [
        { method: 'add', ranges: SMALL },
        { method: 'bump', ranges: SMALL },
      ],
      100,
      4,
    );
    expect(c.replies).toBe(50);
  });

  it(
    'throw new Error(constant) in handlers and helpers, array literals in replies and payloads — 600 random ' +
      'inputs',
    () => {
      const cases: Case[] = ['root', 'check', 'never', 'pack', 'relay'].map((method) => ({ method, ranges: SMALL }));
      cases.push({
        method: 'nudge',
        ranges: SMALL,
        tweak: (m) => ((m.k = Math.abs(m.k) % 2), (m.j = Math.abs(m.j) % 2)),
      });
      const r = differential(Guard, [Guard.grain], cases, 600, 6);
      // root (x < 0), check (!ok, code < -100), never (always), relay (b < 0): each throws for part of the inputs.
      expect(r.throws).toBeGreaterThan(200);
      expect(r.replies).toBeGreaterThan(150);
      expect(r.exactReplies).toBe(r.replies);
      expect(r.sends).toBe(100);
    },
  );

  it('conformance fixture grains (test/fixtures/grains.ts): every method — 1,000 random inputs', () => {
    const C = Conformance;
    const grains = CONFORMANCE_GRAINS.map((g) => g.grain);
    const all = (cls: { grain: GrainDef }, ranges: Ranges, tweak?: Record<string, (m: any) => void>): Case[] =>
      cls.grain.methods.map((m) => ({ method: m.name, ranges, ...(tweak?.[m.name] ? { tweak: tweak[m.name] } : {}) }));
    const n = differential(
      C.Numbers,
      grains,
      all(C.Numbers, SMALL, { fail: (m) => (m.code = m.code % 2), failTell: (m) => (m.code = m.code % 2) }),
      400,
      7,
    );
    expect(n.throws).toBeGreaterThan(20);
    expect(n.exactReplies).toBe(n.replies);
    // Seq's sender index must be in range (JS would read undefined past the 16 entries).
    const seqTweak = { push: (m: any) => (m.sender %= 16), pushAsk: (m: any) => (m.sender %= 16) };
    differential(C.Seq, grains, all(C.Seq, SMALL, seqTweak), 150, 8);
    const snd = differential(
      C.Sender,
      grains,
      all(C.Sender, { float: 1, int: 20 }, { emit: (m) => (m.count %= 20) }),
      50,
      9,
    );
    expect(snd.sends).toBeGreaterThan(100);
    for (const [i, cls] of [C.Hop1, C.Hop2, C.Hop3, C.Coordinator, C.Leaf].entries()) {
      differential(cls, grains, all(cls, { float: 1e4, int: 1000 }, { scatter: (m) => (m.n %= 20) }), 60, 10 + i);
    }
    // String keys: ctx.forward(Named, ctx.key, ...) carries the interned id with STRING_KEY.
    const named = differential(C.Named, grains, all(C.Named, SMALL), 100, 20);
    expect(named.sends).toBe(50);
  });

  it('small integer kinds (Small): stores wrap, bitwise operators, narrowing replies — 1,200 random inputs', () => {
    const C = Conformance;
    const grains = CONFORMANCE_GRAINS.map((g) => g.grain);
    // Amounts that wrap once or many times, fractions, negative fractions, and values past 2^32 and 2^53.
    const amounts = [
      0.5,
      -0.5,
      1.5,
      -1.9,
      255,
      256,
      -256,
      65535,
      65536,
      1e6 + 0.25,
      2 ** 32 + 3,
      -(2 ** 40),
      2 ** 53 + 2,
      1e300,
    ];
    let a = 0;
    const BOUNDS: Record<string, [number, number]> = {
      u8: [0, 255],
      i8: [-128, 127],
      u16: [0, 65535],
      i16: [-32768, 32767],
    };
    const cases: Case[] = [
      ...C.Small.grain.methods
        .filter((m) => m.name !== 'narrow' && m.name !== 'add')
        .map((m) => ({ method: m.name, ranges: { float: 1e4, int: 1e6 } })),
      { method: 'add', ranges: { float: 1e4, int: 1e6 } },
      { method: 'add', ranges: { float: 300, int: 1e6 }, tweak: (m) => (m.by = amounts[a++ % amounts.length]) },
      // Each kind's bounds and one past them, integers within or beyond them, fractions.
      {
        method: 'narrow',
        ranges: { float: 70000, int: 1e6 },
        tweak: (m) => {
          for (const [k, [lo, hi]] of Object.entries(BOUNDS))
            m[k] = [lo - 1, lo, hi, hi + 1, Math.trunc(m[k]), m[k]][Math.abs(Math.trunc(m[k])) % 6];
        },
      },
      {
        method: 'narrow',
        ranges: { float: 300, int: 1e6 },
        tweak: (m) => {
          for (const k of Object.keys(BOUNDS)) m[k] = Math.trunc(m[k]);
        },
      },
    ];
    const r = differential(C.Small, grains, cases, 1200, 21);
    expect(r.exactReplies).toBe(r.replies);
    expect(r.replies).toBeGreaterThan(700);
    expect(r.mismatches).toBeGreaterThan(50);
    expect(r.sends).toBeGreaterThan(100);
  });

  it('typed turn errors: TURN_BUDGET, INDEX_RANGE and a reply integer out of range', () => {
    const def = Stats.grain;
    const h = Harness.build(def.name, generateKernel(def).source);
    const state = new Uint8Array(randomState(def.state, rng(5), SMALL));
    const spin = def.methodByName.get('spin')!;
    const at = def.methodByName.get('at')!;
    const [budget, inRange, index, frac] = h.turns([
      { method: spin.id, key: 1, budget: 50, state, payload: encode(spin.request, { n: 51 }) },
      { method: spin.id, key: 1, budget: 50, state, payload: encode(spin.request, { n: 50 }) },
      { method: at.id, key: 1, budget: 50, state, payload: encode(at.request, { i: 8 }) },
      { method: at.id, key: 1, budget: 50, state, payload: encode(at.request, { i: -1 }) },
    ]);
    expect(budget).toMatchObject({
      rc: 2,
      error: { text: "TURN_BUDGET: a loop ran past the turn's iteration budget (turnBudget)" },
    });
    expect(inRange).toMatchObject({ rc: 0 });
    expect(index).toMatchObject({ rc: 3 });
    expect(frac).toMatchObject({ rc: 3 });
    // The aborted spin turn did not reach its state update (s.count += 1 comes after the loop).
    expect(Buffer.from((budget as { state: Uint8Array }).state).equals(Buffer.from(state))).toBe(true);

    // Through a const struct local: a failing value skips that store; the earlier store stays.
    const g = Guard.grain;
    const nudge = g.methodByName.get('nudge')!;
    const gh = Harness.build(g.name, generateKernel(g).source);
    const zero = new Uint8Array(layoutOf(g.state).size);
    const [ok, bad] = gh.turns([
      {
        method: nudge.id,
        key: 1,
        budget: 50,
        state: zero,
        payload: encode(nudge.request, { k: 1, j: 1, d: 0.1, ys: [1, 2.5] }),
      },
      {
        method: nudge.id,
        key: 1,
        budget: 50,
        state: zero,
        payload: encode(nudge.request, { k: 1, j: 2, d: 0.1, ys: [1, 2.5] }),
      },
    ]);
    const pts = (r: unknown) =>
      (snapshot(g.state, (r as { state: Uint8Array }).state.slice().buffer, 0) as { pts: { x: number; y: number }[] })
        .pts[1];
    expect(ok).toMatchObject({ rc: 0 });
    expect(pts(ok)).toEqual({ x: Math.fround(0.1), y: 2.5 });
    expect(bad).toMatchObject({ rc: 3 });
    expect(pts(bad)).toEqual({ x: Math.fround(0.1), y: 0 });
  });
});
