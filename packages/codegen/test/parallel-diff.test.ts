/**
 * Element-parallel loops against the JS handler: the generated C built with RG_HOST_COOP runs each
 * parallel loop through its own lane runner and rg_coop_loop on an emulated warp (harness.ts: 32 threads,
 * shuffles through a barrier), so the lanes' interleaved iterations, their partial reductions and the
 * warp's combine, and the first failure in JS order are all compared with what the CPU backend computes.
 * Every run asserts that loops actually went to the warp (`posts`), so none of these can pass sequentially.
 */
import { describe, expect, it } from 'vitest';
import { VectorAdd } from '../../../examples/vector-add/grains.ts';
import { Person, Ward } from '../../../examples/sir/grains.ts';
import * as Conformance from '../../../test/fixtures/grains.ts';
import { generateKernel } from '../src/index.ts';
import { CONFORMANCE_GRAINS } from './fixtures/conformance.ts';
import { Account } from '../../../examples/bank/grains.ts';
import { Algo, Floats, Ints, Nest, Shapes, Shrinking, Views } from './fixtures/audit.ts';
import { Counter, Relay } from './fixtures/k2k.ts';
import { Stats } from './fixtures/stats.ts';
import { Guard } from './fixtures/throws.ts';
import { N, Par } from './fixtures/parallel.ts';
import { differential, encode, type Case } from './diff-lib.ts';
import { Harness } from './harness.ts';
import { randomState, rng, type Ranges } from './random.ts';
import { HAVE_GXX } from './toolchain.ts';

const SMALL: Ranges = { float: 1e4, int: 1e6 };
const all = (cls: any, ranges: Ranges): Case[] => cls.grain.methods.map((m: any) => ({ method: m.name, ranges }));
/** The class's loops that the code generator made element-parallel. */
const parallelLoops = (cls: any, grains = [cls.grain]) =>
  generateKernel(cls.grain, { grains }).loops.filter((l) => l.parallel);
/** Indices into the state's 1024 accumulators, one per element of xs (JS reads undefined past idx's end). */
const inRange = (m: any) => {
  m.idx = Array.from({ length: m.xs.length }, (_, i) => Math.abs(m.idx[i] ?? i * 7) % 1024);
};

describe.skipIf(!HAVE_GXX)('element-parallel loops on an emulated warp: JS handler vs generated C', () => {
  it('Par: maps over message arrays, a state map, a gather that may fail, integer and min/max reductions — 240 ' +
    'random inputs', () => {
    expect(
      parallelLoops(Par)
        .map((l) => l.method)
        .sort(),
    ).toEqual(['blend', 'bump', 'census', 'gather', 'scale']);
    const cases: Case[] = [
      { method: 'scale', ranges: SMALL },
      // blend reads b[i] for every i of a (JS reads undefined past b's end): b at least as long.
      {
        method: 'blend',
        ranges: { float: 10, int: 100 },
        tweak: (m) => {
          while (m.b.length < m.a.length) m.b.push(0.5);
        },
      },
      // bump writes acc[i] for i < n: n within the state's 1024 elements.
      { method: 'bump', ranges: SMALL, tweak: (m) => (m.n = Math.abs(m.n) % 1025) },
      { method: 'gather', ranges: SMALL, tweak: inRange },
      { method: 'census', ranges: SMALL },
      { method: 'census', ranges: { float: 1, int: 3 } },
      { method: 'total', ranges: SMALL },
    ];
    const r = differential(Par, [Par.grain], cases, 240, 301, { coop: true });
    expect(r.posts).toBeGreaterThan(150);
    expect(r.replies).toBeGreaterThan(200);
    expect(N).toBe(4096);
  }, 300_000);

  it('a failing iteration (an index past the state array): the warp fails the turn as the sequential loop does — ' +
    'same error, same state', () => {
    // JS reads undefined there and goes on, so this compares the warp with the generated sequential loop.
    const unit = generateKernel(Par.grain).source;
    const seq = Harness.build('Par', unit);
    const warp = Harness.build('Par', unit, { coop: true });
    const gather = Par.grain.methodByName.get('gather')!;
    const r = rng(341);
    const items = Array.from({ length: 60 }, (_, k) => {
      const n = 64 + Math.floor(r() * 4000);
      const idx = Array.from({ length: n }, () => Math.floor(r() * 1024));
      // one to three bad indices, anywhere (the first in JS order decides)
      for (let b = 0; b <= k % 3; b++)
        idx[Math.floor(r() * n)] = r() < 0.5 ? 1024 + Math.floor(r() * 5000) : -1 - Math.floor(r() * 5000);
      const xs = Array.from({ length: n }, () => Math.floor(r() * 100));
      return {
        method: gather.id,
        key: k,
        budget: 100_000,
        state: randomState(Par.grain.state, r, SMALL),
        payload: encode(gather.request, { idx, xs }),
      };
    });
    const a = seq.turns(items);
    const b = warp.turnsPosted(items);
    expect(b.posts).toBe(items.length);
    items.forEach((_, i) => {
      const x = a[i]!;
      const y = b.results[i]!;
      if (x === 'REJECT' || y === 'REJECT') throw new Error('a host-encoded payload was rejected');
      expect(y.rc, `input ${i}`).toBe(3);
      expect(y.rc).toBe(x.rc);
      expect(y.error?.text).toBe(x.error?.text);
      expect(Buffer.from(y.state).equals(Buffer.from(x.state)), `input ${i} state`).toBe(true);
    });
  }, 300_000);

  it('Par: long vectors only (every input past 2,048 elements: each lane runs 64 or more iterations)', () => {
    const long = (m: any) => {
      for (const k of Object.keys(m)) {
        const v = m[k];
        if (Array.isArray(v) && v.length < 2048) while (v.length < 2048 + (v.length % 7)) v.push(v.length % 5);
      }
      if (m.idx) inRange(m);
      if (m.a && m.b) m.a.length = m.b.length = Math.min(m.a.length, m.b.length);
    };
    const cases: Case[] = ['scale', 'blend', 'gather', 'census'].map((method) => ({
      method,
      ranges: SMALL,
      tweak: long,
    }));
    const r = differential(Par, [Par.grain], cases, 40, 302, { coop: true });
    expect(r.posts).toBe(40);
    expect(r.replies).toBe(40);
  }, 300_000);

  it('the examples: vector-add (vectors up to 5,000 elements, sometimes of different lengths) and SIR ' +
    'Person.setup', () => {
    const f32 = (r: () => number) => Math.fround((r() * 2 - 1) * 1e3);
    const vectors = (r: () => number) => {
      const n = Math.floor(r() * 5000);
      const m = r() < 0.1 ? Math.floor(r() * 5000) : n;
      return { a: Array.from({ length: n }, () => f32(r)), b: Array.from({ length: m }, () => f32(r)) };
    };
    const va = differential(
      VectorAdd,
      [VectorAdd.grain],
      [
        { method: 'add', ranges: SMALL, make: vectors },
        { method: 'stats', ranges: SMALL },
      ],
      120,
      311,
      { coop: true },
    );
    expect(va.posts).toBeGreaterThan(40);
    expect(va.exactReplies).toBe(va.replies);
    // SIR: Person.setup copies its contacts into the state on the lanes (Ward's and tick's loops send, so stay
    // sequential).
    const sir = [Person.grain, Ward.grain];
    expect(parallelLoops(Person, sir).map((l) => l.method)).toEqual(['setup']);
    const p = differential(
      Person,
      sir,
      [
        { method: 'setup', ranges: SMALL },
        { method: 'status', ranges: SMALL },
      ],
      150,
      312,
      { coop: true },
    );
    expect(p.posts).toBeGreaterThan(40);
    expect(p.exactReplies).toBe(p.replies);
  }, 300_000);

  it('audit and conformance fixtures whose loops go parallel (Shrinking, Algo, conformance grains)', () => {
    const grains = CONFORMANCE_GRAINS.map((g) => g.grain);
    let posted = 0;
    const shrink = differential(
      Shrinking,
      [Shrinking.grain],
      [{ method: 'count', ranges: { float: 1, int: 300 }, tweak: (m) => (m.n = Math.abs(m.n)) }],
      60,
      321,
      { coop: true },
    );
    expect(shrink.posts).toBeGreaterThan(0);
    posted += shrink.posts;
    if (parallelLoops(Algo).length)
      posted += differential(Algo, [Algo.grain], all(Algo, { float: 100, int: 1000 }), 200, 322, { coop: true }).posts;
    for (const cls of Object.values(Conformance) as any[]) {
      if (!cls?.grain || !grains.includes(cls.grain) || parallelLoops(cls, grains).length === 0) continue;
      posted += differential(cls, grains, all(cls, { float: 1e3, int: 1000 }), 100, 330, { coop: true }).posts;
    }
    expect(posted).toBeGreaterThan(0);
  }, 300_000);
});

/**
 * Lane-parallel turns: a worker warp runs up to 32 turns of distinct actors at once, one a lane, with no
 * warp to help. The harness built with `lanes` runs the turns 32 at a time, each on a thread of its own
 * (harness.ts), so decoding, the handler, its helpers, K2K payload encoding and the reply's encoding must
 * hold nothing two turns share; every result is compared with the JS handler's as above.
 */
describe.skipIf(!HAVE_GXX)('lane-parallel turns on threads: JS handler vs generated C', () => {
  const lanes = { lanes: true } as const;
  it('bank Account, Stats, K2K senders, throws: 2,000 turns in rounds of 32', () => {
    const acct = differential(
      Account,
      [Account.grain],
      ['deposit', 'withdraw', 'transfer', 'credit', 'balance'].map((method) => ({ method, ranges: SMALL })),
      400,
      401,
      lanes,
    );
    expect(acct.rounds).toBe(Math.ceil(400 / 32));
    expect(acct.exactReplies).toBe(acct.replies);
    expect(acct.sends).toBeGreaterThan(10);
    const st = differential(
      Stats,
      [Stats.grain],
      [
        { method: 'add', ranges: { float: 12, int: 1e6 } },
        { method: 'mix', ranges: SMALL },
        { method: 'spin', ranges: { float: 1, int: 1000 }, tweak: (m) => (m.n = Math.abs(m.n) % 1000) },
        { method: 'at', ranges: SMALL, tweak: (m) => (m.i = Math.abs(m.i) % 8) },
      ],
      600,
      402,
      lanes,
    );
    expect(st.rounds).toBe(Math.ceil(600 / 32));
    const grains = [Counter.grain, Relay.grain];
    const k2k = differential(
      Relay,
      grains,
      [
        { method: 'route', ranges: SMALL },
        { method: 'fanout', ranges: { float: 1, int: 200 } },
      ],
      400,
      403,
      lanes,
    );
    expect(k2k.sends).toBeGreaterThan(400);
    const g = differential(
      Guard,
      [Guard.grain],
      ['root', 'check', 'never', 'pack', 'relay'].map((method) => ({ method, ranges: SMALL })),
      600,
      404,
      lanes,
    );
    expect(g.throws).toBeGreaterThan(200);
    expect(g.rounds).toBe(Math.ceil(600 / 32));
  }, 300_000);

  it('audit fixtures (integer kinds, floats, shapes, nested arrays, state views, algorithms) and the conformance ' +
    'grains', () => {
    let rounds = 0;
    for (const [cls, seed] of [
      [Ints, 411],
      [Floats, 412],
      [Shapes, 413],
      [Nest, 414],
      [Views, 415],
      [Algo, 416],
    ] as const) {
      const r = differential(
        cls,
        [cls.grain],
        [...all(cls, SMALL), ...all(cls, { float: 3, int: 30 })],
        256,
        seed,
        lanes,
      );
      rounds += r.rounds;
    }
    expect(rounds).toBe(6 * 8);
    const C = Conformance;
    const grains = CONFORMANCE_GRAINS.map((x) => x.grain);
    const n = differential(
      C.Numbers,
      grains,
      all(C.Numbers, SMALL).map((c) =>
        c.method === 'fail' || c.method === 'failTell' ? { ...c, tweak: (m: any) => (m.code = m.code % 2) } : c,
      ),
      320,
      417,
      lanes,
    );
    expect(n.throws).toBeGreaterThan(10);
    expect(n.rounds).toBe(10);
  }, 300_000);
});

