import { HOOK_METHOD, Reader, SLOT, decodeExact, joinKey, layoutOf, snapshot, viewAt } from '@ringgrain/core/backend';
import { describe, expect, it } from 'vitest';
import { CodegenError, TURN_ERRORS, generateKernel } from '../src/index.ts';
import { diff } from './compare.ts';
import { differential, type Case } from './diff-lib.ts';
import { BadForward, Hub, Sink, Tag, TagFromHub, TagOtherKey } from './fixtures/k2k-audit.ts';
import { Harness, HDR } from './harness.ts';
import { randomState, rng, type Ranges } from './random.ts';
import { HAVE_GXX, HAVE_NVCC, nvccCompile } from './toolchain.ts';

/**
 * K2K audit: ctx.send / ctx.forward in every documented form (fixtures/k2k-audit.ts), JS handler vs generated
 * C. The JS side's sends fail as the CPU backend's do (diff-lib `cpuK2K`): a key that is not a safe integer,
 * then a payload the host encoder refuses; the unit must fail the same turn with INVALID_KEY / REPLY_MISMATCH.
 */

const GRAINS = [Hub.grain, Sink.grain, Tag.grain];
const SMALL: Ranges = { float: 1e4, int: 1e6 };

/** Keys the CPU backend refuses or takes at its edges. */
const EDGES = [
  0.5,
  -0.5,
  1e-300,
  -0,
  0,
  1,
  -1,
  2 ** 31 - 1,
  2 ** 31,
  -(2 ** 31),
  -(2 ** 31) - 1,
  2 ** 32 - 1,
  2 ** 32,
  2 ** 32 + 0.5,
  2 ** 52 + 0.5,
  2 ** 53 - 1,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53 - 1),
  -(2 ** 53),
  1e300,
  2e300,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  123456.75,
  -98765,
];
let pick = 0;
const edge = (): number => EDGES[pick++ % EDGES.length]!;
/** Actor keys near the edges too (a host key is a safe integer). */
const bigKey = (r: () => number): number =>
  [2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 31 - 1, 2 ** 32 - 1, -(2 ** 31), 0, 2 ** 53 - 3][Math.floor(r() * 7)]!;

const HUB_CASES: Case[] = [
  ...[0, 1, 2, 3, 4, 5, 6, 7].flatMap((mode): Case[] => [
    { method: 'keys', ranges: SMALL, tweak: (m) => ((m.mode = mode), (m.d = edge())) },
    { method: 'keys', ranges: SMALL, tweak: (m) => ((m.mode = mode), (m.d = edge())), key: bigKey },
    { method: 'keys', ranges: { float: 3, int: 8 }, tweak: (m) => (m.mode = mode) },
  ]),
  { method: 'loop', ranges: { float: 3, int: 8 } },
  {
    method: 'loop',
    ranges: { float: 3, int: 8 },
    tweak: (m) => ((m.step = Math.round(m.step)), (m.n = Math.abs(m.n))),
  },
  { method: 'loop', ranges: SMALL, tweak: (m) => ((m.step = edge()), (m.n = 6)), key: bigKey },
  { method: 'copy', ranges: { float: 300, int: 100 } },
  { method: 'copy', ranges: { float: 300, int: 100 }, tweak: (m) => (m.a = Math.floor(Math.abs(m.a)) % 256) },
  { method: 'copy', ranges: { float: 3, int: 3 }, tweak: (m) => (m.a = 255), key: bigKey },
  ...[0, 1, 2, 3, 5, 6, 7, 9, -1, -2].flatMap((mode): Case[] => [
    { method: 'ask', ranges: SMALL, tweak: (m) => ((m.mode = mode), (m.to = edge())) },
    { method: 'ask', ranges: { float: 50, int: 50 }, tweak: (m) => ((m.mode = mode), (m.to = Math.round(m.to))) },
    { method: 'ask', ranges: SMALL, tweak: (m) => ((m.mode = mode), (m.to = edge())), key: bigKey },
  ]),
  { method: 'self', ranges: { float: 100, int: 3 } },
  { method: 'self', ranges: { float: 100, int: 3 }, key: bigKey },
  { method: 'order', ranges: SMALL, tweak: (m) => ((m.d = edge()), (m.n = edge())) },
  { method: 'order', ranges: SMALL, tweak: (m) => ((m.d = Math.round(m.d)), (m.n = edge())) },
  { method: 'order', ranges: SMALL, tweak: (m) => ((m.d = edge()), (m.n = Math.round(m.n))) },
  { method: 'late', ranges: { float: 400, int: 4 }, tweak: (m) => ((m.to = edge()), (m.y = m.mode & 4 ? 2e300 : m.y)) },
  { method: 'late', ranges: { float: 400, int: 4 }, tweak: (m) => (m.x = Math.abs(Math.round(m.x)) % 300) },
];

describe.skipIf(!HAVE_GXX)('K2K audit: sends and forwards, JS (as the CPU backend runs it) vs generated C', () => {
  it('Hub: keys from message, state and ctx.key at the edges; loops; payload copies; forwards', () => {
    pick = 0;
    const r = differential(Hub, GRAINS, HUB_CASES, 1800, 901, { cpuK2K: true });
    expect(r.sends).toBeGreaterThan(1500);
    expect(r.k2kErrors).toBeGreaterThan(100);
    expect(r.throws).toBeGreaterThan(5);
  });

  it('Hub on lane-parallel turns', () => {
    pick = 7;
    const r = differential(Hub, GRAINS, HUB_CASES, 640, 902, { cpuK2K: true, lanes: true });
    expect(r.rounds).toBeGreaterThanOrEqual(20);
    expect(r.k2kErrors).toBeGreaterThan(20);
  });

  it('Tag: string-keyed sends and forwards to its own key, a send to an int-keyed class', () => {
    const cases: Case[] = [
      { method: 'hit', ranges: { float: 100, int: 10 } },
      { method: 'add', ranges: SMALL },
      { method: 'note', ranges: SMALL },
    ];
    const r = differential(Tag, GRAINS, cases, 300, 903, { cpuK2K: true });
    expect(r.sends).toBeGreaterThan(100);
    const l = differential(Tag, GRAINS, cases, 96, 904, { cpuK2K: true, lanes: true });
    expect(l.rounds).toBeGreaterThanOrEqual(3);
  });

  it('Sink (the receiver) on random payloads', () => {
    differential(
      Sink,
      GRAINS,
      Sink.grain.methods.map((m) => ({ method: m.name, ranges: SMALL })),
      150,
      905,
      { cpuK2K: true },
    );
  });
});

describe.skipIf(!HAVE_GXX)('K2K audit: the order of a send\'s failures is the CPU backend\'s', () => {
  // Each input: [method, message, the error the CPU backend's handler fails with].
  const pinned: Array<[string, Record<string, number>, keyof typeof TURN_ERRORS | 'ok']> = [
    // key 0.5 and n 1.5 (an i32 field): cpu-backend k2kSend checks the key before it encodes the payload.
    ['order', { d: 0.5, n: 1.5 }, 'INVALID_KEY'],
    ['order', { d: 2 ** 53, n: 2 ** 40 }, 'INVALID_KEY'],
    ['order', { d: 3, n: 2 ** 40 }, 'REPLY_MISMATCH'],
    ['order', { d: Number.NaN, n: 1 }, 'INVALID_KEY'],
    // u 300 (a u8 field), then a helper that throws: JS throws while it builds the object, before any encoding.
    ['late', { x: 300, y: 2e300, to: 1, mode: 1 }, 'THROW'],
    ['late', { x: 300, y: 2e300, to: 0.5, mode: 0 }, 'THROW'],
    ['late', { x: 300, y: 1, to: 0.5, mode: 0 }, 'INVALID_KEY'],
    ['late', { x: 300, y: 1, to: 5, mode: 0 }, 'REPLY_MISMATCH'],
    ['late', { x: 300, y: 1, to: 5, mode: 1 }, 'REPLY_MISMATCH'],
    ['late', { x: 3, y: 1, to: 5, mode: 0 }, 'ok'],
  ];
  it(
    'an invalid key fails before an out-of-range payload field; a throw while building the object before either',
    () => {
      const cases: Case[] = pinned.map(([method, msg]) => ({
        method,
        ranges: SMALL,
        tweak: (m) => Object.assign(m, msg),
      }));
      const r = differential(Hub, GRAINS, cases, cases.length, 907, { cpuK2K: true });
      expect(
        r.results.map((x) =>
          x === 'REJECT'
            ? x
            : (Object.entries(TURN_ERRORS).find(([, v]) => v === x.rc)?.[0] ?? (x.rc === 0 ? 'ok' : x.rc)),
        ),
      ).toEqual(pinned.map((p) => p[2]));
    },
  );
});

describe('K2K audit: what the translation refuses', () => {
  it('string-keyed K2K from another class or by another key, and a forward whose reply differs: CodegenError', () => {
    const grains = [...GRAINS, TagFromHub.grain, TagOtherKey.grain, BadForward.grain];
    expect(() => generateKernel(TagFromHub.grain, { grains })).toThrow(CodegenError);
    expect(() => generateKernel(TagFromHub.grain, { grains })).toThrow(
      /ctx\.send to Tag, a grain with string keys, from another grain class \(TagFromHub\)/,
    );
    expect(() => generateKernel(TagOtherKey.grain, { grains })).toThrow(
      /ctx\.send to TagOtherKey, a grain with string keys, by a key other than ctx\.key/,
    );
    expect(() => generateKernel(BadForward.grain, { grains })).toThrow(
      /ctx\.forward to Sink\.put whose reply \(\{n:u32,sum:f64\}\) differs from BadForward\.go's \(\{n:u32\}\)/,
    );
  });
});

interface HookSend {
  grain: string;
  key: number;
  method: string;
  payload: unknown;
}

/**
 * Hub's hook as the CPU backend runs it (runHook): a state view, ctx.key, ctx.now(); a send refused by core as in
 * k2kSend.
 */
function runHook(which: 'onActivate' | 'onDeactivate', key: number, state: Uint8Array) {
  const buf = state.slice().buffer;
  const view = viewAt(Hub.grain.state, buf, 0);
  const sent: HookSend[] = [];
  let code: string | undefined;
  const ctx = {
    key,
    now: () => 1234.5,
    send: (g: any, k: number, method: string, payload: unknown) => {
      if (!Number.isSafeInteger(k)) {
        code = 'INVALID_KEY';
        throw new Error(`send to grain "${g.grain.name}" failed: invalid key ${k}`);
      }
      sent.push({ grain: g.grain.name, key: k, method, payload });
    },
  };
  let threw: string | undefined;
  try {
    (new Hub() as any)[which](view, ctx);
  } catch (e) {
    threw = (e as Error).message;
  }
  return { state: new Uint8Array(buf), threw, code, sent };
}

describe.skipIf(!HAVE_GXX)('K2K audit: activation hooks that send, throw and read ctx.key / ctx.now()', () => {
  it('Hub.onActivate / onDeactivate on the host harness match the JS hooks', () => {
    const h = Harness.build('Hub', generateKernel(Hub.grain, { grains: GRAINS }).source);
    const r = rng(906);
    const size = layoutOf(Hub.grain.state).size;
    const items: { which: 'onActivate' | 'onDeactivate'; key: number; state: Uint8Array }[] = [];
    const keys = [7, -7, 10, -10, 0, 1, 2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 32, 2 ** 31, 123456];
    for (let i = 0; i < 200; i++) {
      const state = randomState(Hub.grain.state, r, i % 3 === 0 ? { float: 3, int: 2000 } : SMALL);
      const v = viewAt(Hub.grain.state, state.buffer, 0) as { origin: number };
      if (i % 4 === 0) v.origin = [0.5, 2 ** 53, 1, -1, Number.NaN][i % 5]!;
      items.push({
        which: i % 2 === 0 ? 'onActivate' : 'onDeactivate',
        key: i < keys.length * 2 ? keys[i >> 1]! : Math.floor(r() * 2000) - 1000,
        state,
      });
      expect(state.length).toBe(size);
    }
    const got = h.hooks(items.map((x) => ({ which: HOOK_METHOD[x.which], key: x.key, budget: 1000, state: x.state })));
    let sends = 0;
    let throws = 0;
    let invalid = 0;
    for (const [i, x] of items.entries()) {
      const js = runHook(x.which, x.key, x.state);
      const cu = got[i]!;
      const where = `${x.which} #${i} key ${x.key}`;
      expect(
        diff(
          Hub.grain.state,
          snapshot(Hub.grain.state, cu.state.slice().buffer, 0),
          snapshot(Hub.grain.state, js.state.buffer, 0),
        ),
        where,
      ).toEqual([]);
      if (js.code === 'INVALID_KEY') {
        expect(cu.rc, where).toBe(TURN_ERRORS.INVALID_KEY);
        invalid++;
      } else if (js.threw !== undefined) {
        expect(cu.rc, where).toBe(TURN_ERRORS.THROW);
        expect(cu.error?.text, where).toBe(js.threw);
        throws++;
      } else expect(cu.rc, where).toBe(0);
      expect(cu.sent.length, where).toBe(js.sent.length);
      for (const [j, slot] of cu.sent.entries()) {
        const dv = new DataView(slot.buffer, slot.byteOffset, slot.byteLength);
        const want = js.sent[j]!;
        const target = GRAINS.find((g) => g.name === want.grain)!;
        const m = target.methodByName.get(want.method)!;
        expect(dv.getUint32(SLOT.grain, true), where).toBe(GRAINS.indexOf(target));
        expect(dv.getUint32(SLOT.method, true), where).toBe(m.id);
        expect(joinKey(dv.getUint32(SLOT.keyLo, true), dv.getUint32(SLOT.keyHi, true)), where).toBe(want.key);
        expect(dv.getUint32(SLOT.flags, true), where).toBe(0);
        expect(decodeExact(m.request, new Reader(slot.subarray(HDR)).reset(0, slot.length - HDR)), where).toEqual(
          decodeExact(
            m.request,
            new Reader(encodeOf(m.request, want.payload)).reset(0, encodeOf(m.request, want.payload).length),
          ),
        );
        sends++;
      }
    }
    expect(sends).toBeGreaterThan(150);
    expect(throws).toBeGreaterThan(10);
    expect(invalid).toBeGreaterThan(5);
  });
});

import { encode as encodeOf } from './diff-lib.ts';

describe.skipIf(!HAVE_NVCC)('K2K audit units compile with nvcc (sm_90)', () => {
  it('Hub, Sink, Tag', () => {
    for (const g of GRAINS) {
      const b = nvccCompile(generateKernel(g, { grains: GRAINS }).source, 'sm_90');
      expect(b.log, g.name).toBe('');
      expect(b.ok, g.name).toBe(true);
    }
  }, 600_000);
});
