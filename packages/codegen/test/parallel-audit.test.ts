/**
 * An audit of the element-parallel check (src/front/parallel.ts) on loops a user could write where running
 * the iterations on the lanes would give another result than JS's sequential order: break/continue/return,
 * a loop variable changed in the body, decreasing loops, scatters, stores into state scalars, carried
 * locals, bounds that change, shifted reads through a const struct local, floating-point sums — and the
 * safe loops next to them, which must still go parallel. Each verdict is pinned; every handler runs against
 * the JS handler on the emulated warp (harness.ts RG_HOST_COOP), and the warp's bytes are compared with the
 * sequential build's (-0 and NaN included, which the tolerant comparison of diff-lib does not see).
 * Three bugs found by this audit are pinned at the end: sums whose partial sums could pass 2^53, a start
 * of -0, a sum that JS leaves at -0.
 */
import { describe, expect, it } from 'vitest';
import { CodegenError, generateKernel } from '../src/index.ts';
import { AliasRequest, AliasState, ForOf, N, ParAudit } from './fixtures/parallel-audit.ts';
import { differential, encode, runJs, type Case } from './diff-lib.ts';
import { Harness } from './harness.ts';
import { randomState, randomValue, rng, type Ranges } from './random.ts';
import { HAVE_GXX } from './toolchain.ts';

const SMALL: Ranges = { float: 1e4, int: 1e6 };
const loops = generateKernel(ParAudit.grain).loops;
const verdict = new Map(loops.map((l) => [l.method, l]));

/** Order-dependent loops: sequential, each for this reason. */
const SEQUENTIAL: Record<string, string> = {
  brk: 'it has break',
  cont: 'it has continue',
  early: 'it has return',
  skip: 'it assigns its variable i',
  step2: 'its update is not `i++`',
  down: 'its condition is not `i < <end>`',
  reverse: 'it stores into m.ys at an index other than i',
  modulo: 'it stores into m.ys at an index other than i',
  scatter: 'it stores into s.acc at an index other than i',
  count: 'it stores into s.count at an index other than i',
  lastWins: 'it stores into s.last at an index other than i',
  lastLocal: 'it assigns last, declared outside the loop',
  carry: 'it reduces into run and also reads it',
  shrink: 'it assigns n, declared outside the loop',
  stateShift: 'reads s.acc at another index',
  selfRead: 'reads m.xs at another index',
  fromEnd: 'reads m.xs at another index',
  ptsSwap: 'reads s.pts.x at another index',
  ptsAlias: 'reads s.pts at another index',
  boundRed: 'it reduces into n, which its bounds read',
  floatSum: 'sums into sum values that are not integers',
  halfSum: 'sums into sum values that are not integers',
  whileMap: 'a while loop',
  // Conservative rather than order-dependent: s.pts[i + 1] may fail, and the body stores into state.
  ptsMap: 'it stores into state and an iteration can fail',
  bigSum: 'it sums into sum more than one integer term an iteration',
  nestedBigSum: 'it sums into sum inside a nested loop',
};
/** Safe loops: they must go to the lanes. */
const PARALLEL = [
  'map',
  'neighbours',
  'stateMap',
  'ptsRead',
  'shadowI',
  'nested',
  'condSum',
  'nestedCount',
  'nearSum',
  'minMax',
  'minMaxZeros',
  'checked',
  'localBody',
  'negZeroStart',
  'negZeroSum',
];

/** Inputs that keep every index in range (JS reads undefined past an array's end; the C fails the turn). */
const cap = (v: unknown[], n: number) => {
  if (v.length > n) v.length = n;
};
const sameLength = (m: any) => {
  cap(m.xs, 3500); // two f64 vecs fit the 64 KiB encode buffer
  while (m.ys.length < m.xs.length) m.ys.push(m.ys.length % 3);
  m.ys.length = m.xs.length;
};
const upTo = (k: number) => (m: any) => (m.n = m.n % k);
const TWEAK: Record<string, Partial<Case>> = {
  reverse: { tweak: sameLength },
  modulo: {
    tweak: (m) => {
      cap(m.xs, 3500);
      while (m.ys.length < 4) m.ys.push(0);
    },
  },
  scatter: { tweak: (m) => (m.idx = m.xs.map((_: number, i: number) => Math.abs(m.idx[i] ?? i * 7) % 1024)) },
  shrink: { tweak: (m) => (m.n = m.n % (m.xs.length + 1)) },
  boundRed: { tweak: (m) => (m.n = m.n % (m.xs.length + 1)) },
  stateShift: { tweak: upTo(1023) },
  ptsSwap: { tweak: upTo(255) },
  ptsAlias: { tweak: upTo(255) },
  ptsMap: { tweak: upTo(255) },
  stateMap: { tweak: upTo(1025) },
  ptsRead: { tweak: (m) => cap(m.xs, 256) },
  neighbours: {
    tweak: (m) => {
      while (m.xs.length < 1023) m.xs.push(0.5);
    },
  },
  nested: {
    tweak: (m) => {
      sameLength(m);
      m.w = m.w % 9;
    },
  },
  minMax: {
    tweak: (m) => {
      sameLength(m);
      for (let i = 0; i < m.xs.length; i += 7) m.xs[i] = 0;
      for (let i = 0; i < m.xs.length; i += 5) m.ys[i] = i % 2 ? 0 : -1;
    },
  },
  minMaxZeros: { ranges: { float: 1, int: 2 } },
  // A few inputs hold a value the helper throws for (the first in JS order decides the error).
  checked: {
    ranges: { float: 9000, int: 100 },
    tweak: (m) => {
      if (m.xs.length % 4 === 0 && m.xs.length > 8) m.xs[m.xs.length >> 1] = m.xs[m.xs.length - 3] = -9500;
    },
  },
  nearSum: {
    make: (r) => ({
      xs: Array.from({ length: 64 + Math.floor(r() * (N - 64)) }, () => 4294967295 - Math.floor(r() * 4)),
      start: r() < 0.5 ? 2 ** 52 - Math.floor(r() * 1e6) : 2 ** 53 - Math.floor(r() * 2 ** 40),
    }),
  },
  bigSum: {
    make: (r) => ({
      start: r() < 0.5 ? 2 ** 52 : Math.floor(r() * 2 ** 40),
      u: 4294967295 - Math.floor(r() * 3),
      n: 60000 + Math.floor(r() * 5536),
    }),
  },
  nestedBigSum: { make: (r) => ({ start: 2 ** 52, u: 4294967295, n: 64 + Math.floor(r() * 100), k: 300 }) },
  negZeroStart: {
    tweak: (m) => {
      m.start = m.k > 0 ? -0 : 0;
      m.k = m.k || 1;
    },
  },
  negZeroSum: {
    tweak: (m) => {
      m.start = m.xs.length % 2 ? -0 : 0;
      if (m.xs.length % 3) m.xs = m.xs.map(() => 0);
    },
  },
};
const caseOf = (method: string): Case => ({ method, ranges: SMALL, ...TWEAK[method] });

/**
 * The same inputs through the sequential build and the warp build: every turn's rc, reply and state bytes
 * equal (the warp must be exactly the sequential loop, -0 and NaN bits included). Returns the posts.
 */
function warpEqualsSequential(methods: readonly string[], n: number, seed: number): number {
  const unit = generateKernel(ParAudit.grain).source;
  const seq = Harness.build('ParAudit', unit);
  const warp = Harness.build('ParAudit', unit, { coop: true });
  const r = rng(seed);
  const items = Array.from({ length: n }, (_, k) => {
    const c = caseOf(methods[k % methods.length]!);
    const m = ParAudit.grain.methodByName.get(c.method)!;
    const msg = (c.make ? c.make(r) : randomValue(m.request, r, c.ranges)) as any;
    c.tweak?.(msg);
    return {
      method: m.id,
      key: k,
      budget: 100_000,
      state: randomState(ParAudit.grain.state, r, c.ranges),
      payload: encode(m.request, msg),
    };
  });
  const a = seq.turns(items);
  const b = warp.turnsPosted(items);
  items.forEach((_, i) => {
    const x = a[i]!;
    const y = b.results[i]!;
    if (x === 'REJECT' || y === 'REJECT') throw new Error('a host-encoded payload was rejected');
    const where = `${methods[i % methods.length]} input #${i}`;
    expect(y.rc, where).toBe(x.rc);
    expect(y.error?.text, where).toBe(x.error?.text);
    expect(Buffer.from(y.reply ?? []).toString('hex'), `${where} reply`).toBe(
      Buffer.from(x.reply ?? []).toString('hex'),
    );
    expect(Buffer.from(y.state).equals(Buffer.from(x.state)), `${where} state`).toBe(true);
  });
  return b.posts;
}
describe('element-parallel audit: verdicts', () => {
  it('keeps every order-dependent loop sequential, each with its reason', () => {
    for (const [method, why] of Object.entries(SEQUENTIAL)) {
      expect(verdict.get(method), method).toMatchObject({ parallel: false, why: expect.stringContaining(why) });
    }
  });

  it(
    'still runs the safe loops on the lanes: maps, a state map, const struct reads, nested loops, integer sums, ' +
      'min/max, a helper that may throw',
    () => {
      expect(
        loops
          .filter((l) => l.parallel)
          .map((l) => l.method)
          .sort(),
      ).toEqual([...PARALLEL].sort());
      expect(loops.length).toBe(Object.keys(SEQUENTIAL).length + PARALLEL.length);
      expect(verdict.get('condSum')?.why).toContain('reduces pos (sum), n (sum), neg (sum)');
      expect(verdict.get('nestedCount')?.why).toContain('reduces n (sum)');
      expect(verdict.get('minMax')?.why).toContain('reduces lo (min), hi (max)');
    },
  );

  it(
    'rejects an array alias of the request or the state and for..of with a CodegenError naming grain, method, ' +
      'line and a hint',
    () => {
      const cases = [
        [AliasRequest, 'local holding a msg vec'],
        [AliasState, 'local holding a state array'],
        [ForOf, 'for..of'],
      ] as const;
      for (const [cls, text] of cases) {
        let err: unknown;
        try {
          generateKernel(cls.grain);
        } catch (e) {
          err = e;
        }
        expect(err, cls.grain.name).toBeInstanceOf(CodegenError);
        const e = err as CodegenError;
        expect(e.message).toContain(text);
        expect(e.site).toMatchObject({ grain: cls.grain.name, method: 'go', file: 'parallel-audit.ts' });
        expect(e.site!.line).toBeGreaterThan(0);
        expect(e.hint).toBeTruthy();
      }
    },
  );
});

describe.skipIf(!HAVE_GXX)('element-parallel audit: JS handler vs generated C on an emulated warp', () => {
  it('the sequential loops agree with JS (none reaches the warp) — 312 random inputs', () => {
    const methods = Object.keys(SEQUENTIAL);
    const r = differential(ParAudit, [ParAudit.grain], methods.map(caseOf), methods.length * 12, 401, { coop: true });
    expect(r.posts).toBe(0);
    expect(r.replies).toBe(methods.length * 12);
    expect(r.exactReplies).toBe(r.replies);
  }, 300_000);

  it('every safe loop goes to the warp and agrees with JS — 40 random inputs each', () => {
    for (const [k, method] of PARALLEL.entries()) {
      const r = differential(ParAudit, [ParAudit.grain], [caseOf(method)], 40, 410 + k, { coop: true });
      // Some inputs of these run sequentially by design: n past the state's 1,024; a start of -0; a start past 2^52.
      expect(r.posts, method).toBeGreaterThan(['stateMap', 'negZeroStart', 'nearSum'].includes(method) ? 10 : 30);
      expect(r.replies + r.throws, method).toBe(40);
      // Byte-exact replies but for minMax, whose 0 / 0 NaN the C and JS encode with other bits (the
      // sequential build too: not the lanes' doing; the warp's bytes equal the sequential build's below).
      if (method !== 'minMax') expect(r.exactReplies, method).toBe(r.replies);
      if (method === 'checked') expect(r.throws).toBeGreaterThan(3);
    }
  }, 300_000);

  it('the warp gives the sequential build’s bytes exactly (rc, error, reply, state) — 450 random inputs over ' +
    'every handler', () => {
    const posts = warpEqualsSequential([...Object.keys(SEQUENTIAL), ...PARALLEL], 450, 420);
    expect(posts).toBeGreaterThan(120);
  }, 300_000);
});

describe.skipIf(!HAVE_GXX)('element-parallel audit: bugs found, pinned', () => {
  it('an integer sum of several terms an iteration stays sequential: 17 × 2^16 terms near 2^32 from 2^52 pass ' +
    '2^53, where JS rounds', () => {
    const r = differential(ParAudit, [ParAudit.grain], [caseOf('bigSum')], 12, 430, { coop: true });
    expect(r.exactReplies).toBe(12);
    expect(r.posts).toBe(0);
    expect(verdict.get('bigSum')).toMatchObject({
      parallel: false,
      why: expect.stringContaining('partial sums could pass 2^53'),
    });
    // One term an iteration is exact on the lanes while the start is within 2^52; past it the loop runs sequentially.
    const near = differential(ParAudit, [ParAudit.grain], [caseOf('nearSum')], 40, 431, { coop: true });
    expect(near.exactReplies).toBe(40);
    expect(near.posts).toBeGreaterThan(5);
    expect(near.posts).toBeLessThan(35);
  }, 300_000);

  it('a sum inside a nested loop stays sequential when its terms may be large: 1.2 M terms of 2^32 - 1 from ' +
    '2^52, with a budget that allows them', () => {
    const warp = Harness.build('ParAudit', generateKernel(ParAudit.grain).source, { coop: true });
    const m = ParAudit.grain.methodByName.get('nestedBigSum')!;
    const state = randomState(ParAudit.grain.state, rng(432), SMALL);
    const items = [4096, 3000, 2048].map((n, k) => ({
      method: m.id,
      key: k,
      budget: 4_000_000,
      state,
      payload: encode(m.request, { start: 2 ** 52, u: 4294967295, n, k: 300 }),
    }));
    const got = warp.turnsPosted(items);
    items.forEach((it, i) => {
      const js = runJs(ParAudit, ParAudit.grain, 'nestedBigSum', it.key, it.state, it.payload);
      const y = got.results[i]!;
      if (y === 'REJECT') throw new Error('rejected');
      expect(y.rc).toBe(0);
      expect(Buffer.from(y.reply!).toString('hex'), `n = ${[4096, 3000, 2048][i]}`).toBe(
        Buffer.from(encode(m.reply!, js.reply)).toString('hex'),
      );
    });
    expect(got.posts).toBe(0);
    expect(verdict.get('nestedBigSum')).toMatchObject({
      parallel: false,
      why: expect.stringContaining('inside a nested loop'),
    });
    // Counting (terms of 1) inside a nested loop stays on the lanes: the turn budget bounds it far below 2^53.
    expect(verdict.get('nestedCount')).toMatchObject({ parallel: true });
  }, 300_000);

  it('a loop starting at -0 (a float start): JS’s first i is -0 and -0 * k is -0; the lanes run only a start ' +
    'that is not -0', () => {
    const r = differential(ParAudit, [ParAudit.grain], [caseOf('negZeroStart')], 60, 440, { coop: true });
    expect(r.exactReplies).toBe(60);
    expect(r.posts).toBeGreaterThan(10);
    expect(r.posts).toBeLessThan(50);
    const src = generateKernel(ParAudit.grain).source;
    const h = src.slice(src.indexOf('static int rg_h_ParAudit_negZeroStart('));
    expect(h.slice(0, h.indexOf('\n}\n'))).toMatch(/_lo\d+ == trunc\(_lo\d+\) && !rg_signbit\(_lo\d+\)/);
    // An integer start (a literal, an integer field) cannot be -0: no check.
    const m = src.slice(src.indexOf('static int rg_h_ParAudit_map('));
    expect(m.slice(0, m.indexOf('\n}\n'))).not.toContain('rg_signbit');
  }, 300_000);

  it('an integer sum that JS leaves at -0 (start -0, nothing added or only -= 0): the lanes’ partials start at ' +
    '-0', () => {
    const r = differential(ParAudit, [ParAudit.grain], [caseOf('negZeroSum')], 60, 450, { coop: true });
    expect(r.posts).toBeGreaterThan(50);
    expect(r.exactReplies).toBe(60);
    const minusZero = Buffer.from(encode(ParAudit.grain.methodByName.get('negZeroSum')!.reply!, { sum: -0 })).toString(
      'hex',
    );
    const negZero = r.results.filter((y) => y !== 'REJECT' && Buffer.from(y.reply ?? []).toString('hex') === minusZero);
    expect(negZero.length).toBeGreaterThan(5);
  }, 300_000);
});
