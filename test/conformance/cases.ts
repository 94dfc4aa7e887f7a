/**
 * THE list of conformance cases. Every backend runs every case (through conformance.test.ts and the
 * fixture in backends.ts), except what the SKIP list in skips.ts names, with a reason.
 *
 * A case declares the grain classes it needs (registered with the backend under test as placement) and
 * kernel options; the runner builds a fresh system with an injected clock, runs the case, then checks
 * that every kernel's counters balance once settled (see `expectBalanced`), and shuts the system down.
 */
import {
  DecodeError,
  HandlerError,
  InvalidKeyError,
  InvalidTransitionError,
  KernelFaultError,
  KernelTerminatedError,
  PayloadTooLargeError,
  QueueFullError,
  ReplyTargetError,
  SchemaValidationError,
  AskManyError,
  UnknownGrainError,
  UnknownMethodError,
  type AnyGrainClass,
  type GrainDef,
  type GrainSystem,
  type KernelOptions,
  type SystemOptions,
  type TransitionEvent,
} from '@ringgrain/core';
import { HOST_SENDER, SLOT } from '@ringgrain/core/backend';
import { waitUntil } from '@ringgrain/core/internal';
import { expect } from 'vitest';
import { persistenceCases, type PersistenceCase } from './persistence.ts';
import { reminderCases } from './reminders.ts';
import { timerCases } from './timers.ts';
import { Coordinator, Hop1, Hop2, Hop3, Leaf, Named, Numbers, Sender, Seq, Small, Unregistered } from '../fixtures/grains.ts';

export interface CaseContext {
  readonly system: GrainSystem;
  readonly backend: string;
  /** The injected clock: set `clock.now` to move time. */
  readonly clock: { now: number };
}

export interface ConformanceCase {
  readonly name: string;
  readonly grains: ReadonlyArray<readonly [AnyGrainClass, Partial<KernelOptions>?]>;
  readonly system?: Partial<SystemOptions>;
  /**
   * Needs a system of its own (lifecycle changes, kernel options, exact counter values). Other cases
   * share one system per backend (starting a CPU kernel costs a worker thread and its module imports):
   * they use their own keys and assert counter deltas, and the balance check runs after each of them.
   */
  readonly isolated?: boolean;
  /** A persistent-state case (persistence.ts): the runner gives it a store and a system factory instead. */
  readonly persistence?: PersistenceCase;
  run(c: CaseContext): Promise<void>;
}

/** Resolves to the rejection of `p`, failing the test when `p` resolves. */
export async function rejection(p: Promise<unknown> | undefined): Promise<Error> {
  if (!p) throw new Error('expected a pending send (a Promise), got undefined');
  try {
    const v = await p;
    throw new Error(`expected a rejection, got ${JSON.stringify(v)}`);
  } catch (e) {
    return e as Error;
  }
}

/** Runs `fn` expecting it to throw synchronously; returns the error. */
function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a synchronous throw');
}

/**
 * Counters balance when settled: for every kernel, messages in (host sends + K2K received) equal
 * messages out (processed + rejected by the kernel + given up by the host at terminate), and across
 * kernels every K2K send was received. Waits (bounded) for in-flight work to settle first.
 */
export async function expectBalanced(system: GrainSystem): Promise<void> {
  const check = (): string[] => {
    const m = system.metrics();
    const bad: string[] = [];
    let k2kSent = 0;
    let k2kReceived = 0;
    for (const [name, c] of Object.entries(m)) {
      k2kSent += c.k2kSent;
      k2kReceived += c.k2kReceived;
      const inn = c.sent + c.k2kReceived;
      const out = c.processed + c.rejected + c.hostRejected;
      if (inn !== out) bad.push(`${name}: sent ${c.sent} + k2kReceived ${c.k2kReceived} != processed ${c.processed} + rejected ${c.rejected} + hostRejected ${c.hostRejected}`);
    }
    if (k2kSent !== k2kReceived) bad.push(`k2kSent ${k2kSent} != k2kReceived ${k2kReceived}`);
    return bad;
  };
  await waitUntil(() => check().length === 0, 5000);
  expect(check()).toEqual([]);
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Typed arrays as plain arrays (through nested objects), to compare what was sent with what came back. */
function plain(v: unknown): unknown {
  if (ArrayBuffer.isView(v)) return Array.from(v as unknown as ArrayLike<number>);
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

/** Values of Small's request fields at the bounds of each small kind. */
const SMALL_LO = {
  u8: 0,
  i8: -128,
  u16: 0,
  i16: -32768,
  bytes: new Uint8Array([0, 255, 1, 254, 127, 128, 0, 255]),
  i8s: new Int8Array([-128, 127, -1, 0]),
  u16s: new Uint16Array([0, 65535, 256, 255]),
  i16s: new Int16Array([-32768, 32767, -1]),
};
const SMALL_HI = { u8: 255, i8: 127, u16: 65535, i16: 32767, bytes: [255, 254, 253, 128, 127, 1, 0, 7], i8s: [127, -128, 1, -1], u16s: [65535, 65534, 32768, 1], i16s: [32767, -32768, 0] };
const SMALL_ZERO = { u8: 0, i8: 0, u16: 0, i16: 0, bytes: [0, 0, 0, 0, 0, 0, 0, 0], i8s: [0, 0, 0, 0], u16s: [0, 0, 0, 0], i16s: [0, 0, 0] };

export const cases: ConformanceCase[] = [
  {
    name: 'ask and tell round trip every numeric kind',
    grains: [[Numbers]],
    async run({ system }) {
      const ref = system.grain(Numbers, 100);
      const values = [
        { f32: 1.5, f64: Math.PI, i32: -(2 ** 31), u32: 2 ** 32 - 1, b: true },
        { f32: -0, f64: -1e300, i32: 2 ** 31 - 1, u32: 0, b: false },
        { f32: Math.fround(1 / 3), f64: 5e-324, i32: -1, u32: 128, b: true },
        { f32: 3.4028234663852886e38, f64: 0.1, i32: 65536, u32: 65535, b: false },
      ];
      for (const v of values) expect(await ref.echo(v)).toEqual(v);
      // f32 is rounded as a float32 would be, both in the message and in state.
      expect((await ref.echo({ f32: 0.1, f64: 0.1, i32: 0, u32: 0, b: false })).f32).toBe(Math.fround(0.1));
      expect(ref.tell.store({ f32: 0.1, f64: 2.5, i32: -7, u32: 4_000_000_000, b: true })).toBeUndefined();
      expect(ref.tell.store({ f32: 0.2, f64: -2.5, i32: 7, u32: 1, b: false })).toBeUndefined();
      expect(await ref.load({})).toEqual({ f32: Math.fround(0.2), f64: -2.5, i32: 7, u32: 1, b: false, count: 2, total: 0 });
    },
  },
  {
    name: 'small integer kinds (u8 i8 u16 i16): boundary values round trip as scalars, fixed arrays and vecs, decoded to their typed arrays',
    grains: [[Small]],
    async run({ system }) {
      const ref = system.grain(Small, 100);
      const bv = new Uint8Array(24).map((_, i) => (i * 37 + 255) & 0xff);
      for (const v of [
        { ...SMALL_LO, bv: new Uint8Array(0), sv: new Int16Array(0) },
        { ...SMALL_HI, bv, sv: [-32768, 32767, 0, -1] },
        { ...SMALL_ZERO, bv: [255], sv: [1] },
      ]) {
        const r = await ref.echo(v);
        expect(plain(r)).toEqual(plain(v));
        expect(r.bytes).toBeInstanceOf(Uint8Array);
        expect(r.i8s).toBeInstanceOf(Int8Array);
        expect(r.u16s).toBeInstanceOf(Uint16Array);
        expect(r.i16s).toBeInstanceOf(Int16Array);
        expect(r.bv).toBeInstanceOf(Uint8Array);
        expect(r.sv).toBeInstanceOf(Int16Array);
      }
    },
  },
  {
    name: 'small integer kinds: stored by a host tell and by a K2K send, read back; forwarded to the actor that replies',
    grains: [[Small]],
    async run({ system }) {
      expect(system.grain(Small, 110).tell.store(SMALL_LO)).toBeUndefined();
      await until('the tell stored', async () => (await system.grain(Small, 110).load({})).count === 1);
      const zeros = { log: [0, 0, 0, 0, 0, 0, 0, 0], logged: 0, count: 1 };
      expect(plain(await system.grain(Small, 110).load({}))).toEqual(plain({ ...SMALL_LO, ...zeros }));
      // K2K: Small 111 sends Small 112 a store carrying every kind.
      expect(await system.grain(Small, 111).send({ to: 112, ...SMALL_HI })).toEqual({ sent: 1 });
      await until('the K2K store', async () => (await system.grain(Small, 112).load({})).count === 1);
      expect(plain(await system.grain(Small, 112).load({}))).toEqual(plain({ ...SMALL_HI, ...zeros }));
      expect((await system.grain(Small, 111).load({})).count).toBe(0);
      // ctx.forward: Small 113 passes the ask to Small 114's echo, whose reply reaches the asker.
      const v = { ...SMALL_HI, bv: [1, 2, 3], sv: new Int16Array([-2, 2]) };
      expect(plain(await system.grain(Small, 113).via({ to: 114, ...v }))).toEqual(plain(v));
    },
  },
  {
    name: 'small integer kinds: arithmetic is on JS numbers and each store wraps like the field\'s typed array (truncate, modulo 2^bits)',
    grains: [[Small]],
    async run({ system }) {
      const ref = system.grain(Small, 120);
      ref.tell.store({ u8: 250, i8: 120, u16: 5, i16: 32760, bytes: [250, 0, 1, 2, 3, 4, 5, 255], i8s: [127, -128, 0, 1], u16s: [65535, 0, 1, 2], i16s: [1000, -1000, 3] });
      // The expected state, computed with the typed arrays the kinds are.
      const u8 = new Uint8Array([250]);
      const i8 = new Int8Array([120]);
      const u16 = new Uint16Array([5]);
      const i16 = new Int16Array([32760]);
      const bytes = new Uint8Array([250, 0, 1, 2, 3, 4, 5, 255]);
      const i8s = new Int8Array([127, -128, 0, 1]);
      const u16s = new Uint16Array([65535, 0, 1, 2]);
      const i16s = new Int16Array([1000, -1000, 3]);
      const log: number[] = [];
      for (const by of [10, -300, 1.5, -0.5, 2 ** 40 + 3, 65536.75, -1e15, 7]) {
        u8[0] = u8[0]! + by;
        i8[0] = i8[0]! + by;
        u16[0] = u16[0]! - by;
        i16[0] = i16[0]! + by;
        for (let i = 0; i < 8; i++) bytes[i] = bytes[i]! + by;
        for (let i = 0; i < 4; i++) {
          i8s[i] = i8s[i]! - by;
          u16s[i] = u16s[i]! + by * 3;
        }
        for (let i = 0; i < 3; i++) i16s[i] = i16s[i]! * by;
        log.push(new Uint8Array([by])[0]!);
        const want = { u8: u8[0], i8: i8[0], u16: u16[0], i16: i16[0], bytes, i8s, u16s, i16s };
        expect(plain(await ref.add({ by })), `add ${by}`).toEqual(plain(want));
      }
      const loaded = await ref.load({});
      expect({ log: [...loaded.log], logged: loaded.logged }).toEqual({ log, logged: 8 });
      // Bitwise operators take ToInt32 of the value; comparisons see the values, not their bits.
      const t0 = await system.grain(Small, 121).twiddle({ k: 3 });
      expect(t0).toEqual({ u8: 255, i8: 3, u16: 3, i16: 3, lt: true, eq: true });
      const t1 = await system.grain(Small, 121).twiddle({ k: -1 });
      // u8: ~255 = -256 → 0; i8: (3 >> 1) - 1 = 0; u16: (3 << 4) | -1 = -1 → 65535; i16: 3 ^ -1 = -4.
      expect(t1).toEqual({ u8: 0, i8: 0, u16: 65535, i16: -4, lt: false, eq: false });
      expect([...(await system.grain(Small, 121).load({})).bytes]).toEqual([0, 0, 0, 1, 0, 0, 0, 1]);
    },
  },
  {
    name: 'small integer kinds out of range: requests fail with SchemaValidationError naming the field (nothing sent); replies out of range fail the ask',
    grains: [[Small]],
    async run({ system }) {
      const ref = system.grain(Small, 130) as unknown as Record<string, (p: unknown) => Promise<unknown>>;
      const sentBefore = system.kernel(Small).counters().sent;
      const echo = { ...SMALL_ZERO, bv: [], sv: [] };
      const bad: Array<[string, unknown, string]> = [
        ['echo', { ...echo, u8: 256 }, 'u8'],
        ['echo', { ...echo, u8: -1 }, 'u8'],
        ['echo', { ...echo, u8: 1.5 }, 'u8'],
        ['echo', { ...echo, i8: 128 }, 'i8'],
        ['echo', { ...echo, i8: -129 }, 'i8'],
        ['echo', { ...echo, u16: 65536 }, 'u16'],
        ['echo', { ...echo, u16: -1 }, 'u16'],
        ['echo', { ...echo, i16: 32768 }, 'i16'],
        ['echo', { ...echo, i16: -32769 }, 'i16'],
        ['echo', { ...echo, bytes: [0, 0, 0, 0, 0, 0, 0, 256] }, 'bytes'],
        ['echo', { ...echo, i8s: [0, 0, -129, 0] }, 'i8s'],
        ['echo', { ...echo, u16s: [0, 70000, 0, 0] }, 'u16s'],
        ['echo', { ...echo, i16s: [0, 0, 40000] }, 'i16s'],
        ['echo', { ...echo, bv: new Array(25).fill(0) }, 'bv'],
        ['echo', { ...echo, sv: [-40000] }, 'sv'],
        ['echo', { ...echo, bytes: new Uint8Array(7) }, 'bytes'],
        ['store', { ...SMALL_ZERO, u16: 65535.5 }, 'u16'],
      ];
      for (const [method, payload, path] of bad) {
        const e = await rejection(ref[method]!(payload));
        expect(e, `${method} ${JSON.stringify(plain(payload))}`).toBeInstanceOf(SchemaValidationError);
        expect(e.message).toContain(`"${path}`);
      }
      expect(system.kernel(Small).counters().sent).toBe(sentBefore);
      // A reply field of a small kind must get an integer in its range, on every backend.
      const small = system.grain(Small, 131);
      expect(await small.narrow({ u8: 255, i8: -128, u16: 65535, i16: -32768 })).toEqual({ u8: 255, i8: -128, u16: 65535, i16: -32768 });
      expect(await small.narrow({ u8: 0, i8: 127, u16: 0, i16: 32767 })).toEqual({ u8: 0, i8: 127, u16: 0, i16: 32767 });
      for (const over of [{ u8: 256 }, { u8: -1 }, { i8: 128 }, { i8: -129 }, { u16: 65536 }, { i16: -32769 }, { u8: 0.5 }]) {
        const e = await rejection(small.narrow({ u8: 0, i8: 0, u16: 0, i16: 0, ...over }));
        expect(e, JSON.stringify(over)).toBeInstanceOf(HandlerError);
        expect(e.message).toContain('reply does not match its schema');
      }
      expect(await small.narrow({ u8: 1, i8: 2, u16: 3, i16: 4 })).toEqual({ u8: 1, i8: 2, u16: 3, i16: 4 });
    },
  },
  {
    name: 'small integer kinds: tellMany and askMany columns (typed arrays of any kind that fits skip the row check; a value out of range names column and row)',
    grains: [[Small]],
    async run({ system }) {
      const key = [140, 141, 142];
      const sent0 = system.kernel(Small).counters().sent;
      expect(system.tellMany(Small, 'set', { key, u8: new Uint8Array([0, 255, 7]), i8: new Int8Array([-128, 127, 0]), u16: new Uint16Array([0, 65535, 256]), i16: [-32768, 32767, -1] })).toBe(3);
      await system.idle();
      const got = await Promise.all(key.map((k) => system.grain(Small, k).load({})));
      expect(got.map((g) => [g.u8, g.i8, g.u16, g.i16])).toEqual([[0, -128, 0, -32768], [255, 127, 65535, 32767], [7, 0, 256, -1]]);
      const sent1 = system.kernel(Small).counters().sent;
      expect(sent1 - sent0).toBe(3 + 3);
      const col = (path: unknown[]) => expect.objectContaining({ path });
      const fails = (cols: Record<string, unknown>) => {
        try {
          system.tellMany(Small, 'set', { key: [1, 2], u8: [1, 2], i8: [1, 2], u16: [1, 2], i16: [1, 2], ...cols } as never);
        } catch (e) {
          expect(e).toBeInstanceOf(SchemaValidationError);
          return e;
        }
        throw new Error('expected a SchemaValidationError');
      };
      expect(fails({ u8: new Int16Array([1, -1]) })).toEqual(col(['u8', 1]));
      expect(fails({ i8: new Uint8Array([200, 1]) })).toEqual(col(['i8', 0]));
      expect(fails({ u16: [1, 65536] })).toEqual(col(['u16', 1]));
      expect(fails({ i16: new Float64Array([0.5, 1]) })).toEqual(col(['i16', 0]));
      expect(system.kernel(Small).counters().sent).toBe(sent1);
      const r = await system.askMany(Small, 'narrow', { key: [143, 144], u8: [255, 0], i8: new Int8Array([-128, 127]), u16: [65535, 0], i16: [32767, -32768] });
      expect(r.u8).toBeInstanceOf(Float64Array);
      expect([...r.u8, ...r.i8, ...r.u16, ...r.i16]).toEqual([255, 0, -128, 127, 65535, 0, 32767, -32768]);
    },
  },
  {
    // A 464-byte payload: 400 bytes fit as a bin (3 header bytes), not as a msgpack array (values ≥ 128 take 2 bytes).
    name: 'byte arrays (t.vec(t.u8, 400)) travel as msgpack bin of their bytes: 0, 255, 256 and 400 bytes, as Uint8Array or number[]',
    grains: [[Small, { slotSize: 512 }]],
    isolated: true,
    async run({ system }) {
      const ref = system.grain(Small, 1);
      for (const n of [0, 1, 255, 256, 400]) {
        const data = new Uint8Array(n).map((_, i) => (i * 131 + 7) & 0xff);
        const sum = data.reduce((a, b) => a + b, 0);
        const r = await ref.blob({ data });
        expect(r.n, `n=${n}`).toBe(n);
        expect(r.sum).toBe(sum);
        expect(r.data).toBeInstanceOf(Uint8Array);
        expect(Buffer.from(r.data).equals(Buffer.from(data)), `n=${n}`).toBe(true);
        expect(plain(await ref.blob({ data: Array.from(data) }))).toEqual(plain(r));
      }
      const e = await rejection(system.grain(Small, 2).blob({ data: new Uint8Array(401) }));
      expect(e).toBeInstanceOf(SchemaValidationError);
      expect(e.message).toContain('"data"');
    },
  },
  {
    name: 'fixed and bounded arrays round trip',
    grains: [[Numbers]],
    async run({ system }) {
      const ref = system.grain(Numbers, 200);
      const r = await ref.arrays({
        fixed: [1.5, -2, 0.1, 4],
        ints: new Int32Array([2 ** 31 - 1, -(2 ** 31), 1]),
        bounded: [1, 2, 3, 2 ** 32 - 1],
        flags: [true, false],
        f64s: new Float64Array([Math.E]),
      });
      expect(r.doubled).toBeInstanceOf(Float32Array);
      expect([...r.doubled]).toEqual([3, -4, Math.fround(Math.fround(0.1) * 2), 8]);
      expect(r.intSum).toBe(0);
      expect(r.n).toBe(4);
      expect(r.boundedSum).toBe(6 + 2 ** 32 - 1);
      expect([...r.bounded]).toEqual([1, 2, 3, 2 ** 32 - 1]);
      expect(r.flags).toEqual([false, true]);
      expect([...r.f64s]).toEqual([Math.E]);
      // Empty and full bounded arrays.
      const empty = await ref.arrays({ fixed: [0, 0, 0, 0], ints: [0, 0, 0], bounded: [], flags: [false, false], f64s: [] });
      expect(empty.n).toBe(0);
      expect([...empty.bounded]).toEqual([]);
      const full = await ref.arrays({ fixed: [0, 0, 0, 0], ints: [1, 2, 3], bounded: [1, 2, 3, 4, 5, 6, 7, 8], flags: [true, true], f64s: [1, 2, 3, 4] });
      expect(full.n).toBe(8);
      expect(full.intSum).toBe(6);
      expect([...full.f64s]).toEqual([1, 2, 3, 4]);
    },
  },
  {
    name: "ask with `into`: the reply's numeric arrays are the caller's own (or views of their first n elements); a wrong kind throws ReplyTargetError at the call, one too short rejects the ask with it",
    grains: [[Numbers]],
    async run({ system }) {
      const ref = system.grain(Numbers, 201);
      const req = { fixed: [1, 2, 3, 4], ints: [1, 2, 3], bounded: [7, 8, 9], flags: [true, false], f64s: [0.5, 0.25] };
      const doubled = new Float32Array(4).fill(-1);
      const bounded = new Uint32Array(8).fill(99);
      const f64s = new Float64Array(2);
      const r = await ref.arrays(req, { into: { doubled, bounded, f64s } });
      expect(r.doubled).toBe(doubled);
      expect([...doubled]).toEqual([2, 4, 6, 8]);
      // Longer than the reply: a view of the caller's array, its first 3 elements written, the rest as they were.
      expect(r.bounded.buffer).toBe(bounded.buffer);
      expect([...r.bounded]).toEqual([7, 8, 9]);
      expect([...bounded]).toEqual([7, 8, 9, 99, 99, 99, 99, 99]);
      expect(r.f64s).toBe(f64s);
      expect([...f64s]).toEqual([0.5, 0.25]);
      // Fields not given in `into` are new arrays as usual.
      expect(r.flags).toEqual([false, true]);
      // A wrong kind or a field that is not a numeric array: refused at the call, nothing sent.
      await system.idle();
      const before = system.metrics()['Numbers']!.processed;
      await expect(ref.arrays(req, { into: { doubled: new Float64Array(4) as unknown as Float32Array } })).rejects.toBeInstanceOf(ReplyTargetError);
      await expect(ref.arrays(req, { into: { n: new Uint32Array(1) } as never })).rejects.toBeInstanceOf(ReplyTargetError);
      // Too short for this reply: the ask rejects with ReplyTargetError (the turn ran: its state moved on).
      await expect(ref.arrays(req, { into: { f64s: new Float64Array(1) } })).rejects.toMatchObject({ code: 'REPLY_TARGET', field: 'f64s' });
      await system.idle();
      expect(system.metrics()['Numbers']!.processed).toBe(before + 1);
      // The same arrays serve the next ask (a loop of large asks allocates nothing).
      const again = await ref.arrays({ ...req, fixed: [0, 0, 0, 1] }, { into: { doubled } });
      expect(again.doubled).toBe(doubled);
      expect([...doubled]).toEqual([0, 0, 0, 2]);
    },
  },
  {
    name: 'nested structs round trip',
    grains: [[Numbers]],
    async run({ system }) {
      const ref = system.grain(Numbers, 300);
      const r = await ref.nested({
        origin: { x: 1, y: -1 },
        pts: [{ x: 0, y: 0 }, { x: 2, y: 4 }, { x: 10, y: 10 }, { x: 0.5, y: 0.5 }],
        box: { lo: { x: 0, y: 0 }, hi: { x: 3, y: 5 } },
      });
      expect(r).toEqual({ centroid: { x: 12.5 / 4 - 1, y: 14.5 / 4 + 1 }, n: 4, inside: 3 });
      expect(await ref.nested({ origin: { x: 0, y: 0 }, pts: [], box: { lo: { x: 0, y: 0 }, hi: { x: 0, y: 0 } } })).toEqual({ centroid: { x: 0, y: 0 }, n: 0, inside: 0 });
    },
  },
  {
    name: 'ctx.now() is the injected clock',
    grains: [[Numbers]],
    async run({ system, clock }) {
      clock.now = 1_234_567.25;
      expect(await system.grain(Numbers, 400).now({})).toEqual({ t: 1_234_567.25 });
      clock.now = 42;
      expect(await system.grain(Numbers, 401).now({})).toEqual({ t: 42 });
    },
  },
  {
    name: 'FIFO per sender→actor under concurrent K2K and host senders, one turn at a time per actor',
    grains: [[Seq], [Sender]],
    async run({ system }) {
      const target = 7;
      const senders = 4;
      const perSender = 300;
      const chunk = 25;
      const hostCount = 600;
      const work: Array<Promise<unknown> | undefined> = [];
      let hostSeq = 0;
      for (let round = 0; round < perSender / chunk; round++) {
        // Interleave: a chunk of K2K sends from every Sender actor, then some host sends, then an ask.
        for (let s = 1; s <= senders; s++) {
          work.push(system.grain(Sender, s).emit({ target, from: s, first: round * chunk + 1, count: chunk }));
        }
        for (let i = 0; i < hostCount / (perSender / chunk); i++) work.push(system.grain(Seq, target).tell.push({ sender: 0, seq: ++hostSeq }));
      }
      for (let i = 1; i <= 50; i++) work.push(system.grain(Seq, target).pushAsk({ sender: 5, seq: i }));
      await Promise.all(work);
      const total = senders * perSender + hostCount + 50;
      await until('all pushes processed', async () => (await system.grain(Seq, target).stats({})).count === total);
      const st = await system.grain(Seq, target).stats({});
      expect(st.violations).toBe(0);
      expect(st.overlaps).toBe(0);
      expect([...st.last.slice(0, 6)]).toEqual([hostCount, perSender, perSender, perSender, perSender, 50]);
    },
  },
  {
    // On the GPU a worker runs up to 32 queued turns at once, one per distinct actor, in waves: this is
    // the mix it must keep in order (many actors interleaved, repeats of one actor inside a batch).
    name: 'many actors interleaved: per-actor FIFO and one turn at a time hold for tells and asks in bursts',
    grains: [[Seq]],
    isolated: true,
    async run({ system }) {
      const actors = 37;
      const perActor = 400;
      const n = actors * perActor;
      const key = new Int32Array(n);
      const sender = new Uint32Array(n);
      const seq = new Uint32Array(n);
      for (let i = 0; i < n; i++) {
        // Runs of 1..3 messages to one actor, then the next actor: repeats inside a batch, and interleaving.
        const a = Math.floor(i / 3) % actors;
        key[i] = 5000 + a;
        sender[i] = 1;
      }
      const next = new Uint32Array(actors);
      for (let i = 0; i < n; i++) seq[i] = ++next[key[i]! - 5000]!;
      expect(system.tellMany(Seq, 'push', { key, sender, seq })).toBe(n);
      // Asks in flight to every actor at once, several per actor.
      const asks: Array<Promise<{ count: number }>> = [];
      for (let r = 1; r <= 20; r++) for (let a = 0; a < actors; a++) asks.push(system.grain(Seq, 5000 + a).pushAsk({ sender: 2, seq: r }));
      const answers = await Promise.all(asks);
      for (const x of answers) expect(x.count).toBeGreaterThan(0);
      await system.idle();
      for (let a = 0; a < actors; a++) {
        const st = await system.grain(Seq, 5000 + a).stats({});
        expect({ actor: a, violations: st.violations, overlaps: st.overlaps, count: st.count }).toEqual({ actor: a, violations: 0, overlaps: 0, count: next[a]! + 20 });
        expect([st.last[1], st.last[2]]).toEqual([next[a], 20]);
      }
    },
  },
  {
    name: 'system.idle() resolves once host messages and the K2K chains they caused are all processed',
    grains: [[Coordinator], [Leaf], [Numbers]],
    // Its own system: the fan-out reaches Leaf keys 0..399, which the shared cases count on.
    isolated: true,
    async run({ system }) {
      // Tells and a K2K fan-out/fan-in, then no polling: after idle() every effect is there.
      for (let i = 0; i < 300; i++) system.grain(Numbers, 9000 + (i % 7)).tell.add({ by: 1 });
      expect(await system.grain(Coordinator, 901).scatter({ n: 400, value: 1 })).toEqual({ expected: 400 });
      await system.idle();
      const r = await system.grain(Coordinator, 901).result({});
      expect(r.count).toBe(400);
      let total = 0;
      for (let k = 0; k < 7; k++) total += (await system.grain(Numbers, 9000 + k).add({ by: 0 })).total;
      expect(total).toBe(300);
    },
  },
  {
    name: 'tellMany: N tells from columns, in order, counted; a bad column fails with the column and row and sends nothing',
    grains: [[Numbers]],
    isolated: true,
    async run({ system }) {
      const n = 5000;
      const key = new Int32Array(n);
      const by = new Int32Array(n);
      for (let i = 0; i < n; i++) {
        key[i] = 100 + (i % 10);
        by[i] = i;
      }
      const sent0 = system.metrics()['Numbers']!.sent;
      expect(system.tellMany(Numbers, 'add', { key, by })).toBe(n);
      await system.idle();
      for (let k = 0; k < 10; k++) {
        let want = 0;
        for (let i = k; i < n; i += 10) want += i;
        expect(await system.grain(Numbers, 100 + k).add({ by: 0 })).toEqual({ count: n / 10 + 1, total: want });
      }
      const sent1 = system.metrics()['Numbers']!.sent;
      expect(sent1 - sent0).toBe(n + 10);
      const bad = new Float64Array(3).fill(1);
      bad[2] = 1.5;
      const e = (() => {
        try {
          system.tellMany(Numbers, 'add', { key: [1, 2, 3], by: bad });
        } catch (err) {
          return err as SchemaValidationError;
        }
        throw new Error('expected a SchemaValidationError');
      })();
      expect(e).toBeInstanceOf(SchemaValidationError);
      expect(e.path).toEqual(['by', 2]);
      expect(() => system.tellMany(Numbers, 'add', { key: [1, 2], by: [1] })).toThrow(/column "by" has 1 rows, the key column 2/);
      expect(system.metrics()['Numbers']!.sent).toBe(sent1);
    },
  },
  {
    name: 'askMany: N asks from columns, replies as columns in row order; a failed row rejects with AskManyError naming it',
    grains: [[Numbers]],
    isolated: true,
    async run({ system }) {
      const n = 3000;
      const key = new Int32Array(n);
      const by = new Int32Array(n);
      for (let i = 0; i < n; i++) {
        key[i] = 300 + (i % 7);
        by[i] = i;
      }
      const r = await system.askMany(Numbers, 'add', { key, by });
      expect(r.count).toBeInstanceOf(Float64Array);
      expect(r.count.length).toBe(n);
      // Row i is the (floor(i / 7) + 1)-th add to its actor, whose total is the sum of the rows before it.
      const totals = new Map<number, number>();
      for (let i = 0; i < n; i++) {
        const k = 300 + (i % 7);
        const t = (totals.get(k) ?? 0) + i;
        totals.set(k, t);
        expect(r.count[i], `row ${i}`).toBe(Math.floor(i / 7) + 1);
        expect(r.total[i], `row ${i}`).toBe(t);
      }
      expect((await system.askMany(Numbers, 'add', { key: [], by: [] })).count.length).toBe(0);
      expect(() => system.tellMany(Numbers, 'add', { key: [1], by: [1.5] })).toThrow(SchemaValidationError);
      await expect(system.askMany(Numbers, 'add', { key: [1], by: [1.5] })).rejects.toBeInstanceOf(SchemaValidationError);
      // A handler that throws on one row: the call rejects naming that row; the other rows were answered.
      const ok = await system.askMany(Numbers, 'fail', { key: [1, 2], code: [0, 0] });
      expect(ok.ok).toEqual([true, true]);
      const e = await system.askMany(Numbers, 'fail', { key: [1, 2, 3], code: [0, 7, 0] }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(e).toBeInstanceOf(AskManyError);
      expect((e as AskManyError).row).toBe(1);
      expect((e as AskManyError).failedRows).toBe(1);
    },
  },
  {
    name: 'askMany of many times the ring: the rows that find it full wait in order and every row is answered',
    grains: [[Numbers, { ringCapacity: 64 }]],
    isolated: true,
    async run({ system }) {
      const n = 20_000;
      const key = new Int32Array(n).map((_, i) => 400 + (i % 13));
      const by = new Int32Array(n).map((_, i) => i % 5);
      const [r, single] = await Promise.all([system.askMany(Numbers, 'add', { key, by }), system.grain(Numbers, 400).add({ by: 0 })]);
      const count = new Map<number, number>();
      for (let i = 0; i < n; i++) {
        const c = (count.get(key[i]!) ?? 0) + 1;
        count.set(key[i]!, c);
        expect(r.count[i], `row ${i}`).toBe(c);
      }
      // The ask sent after the batch waited behind all of its rows (FIFO per sender → actor).
      expect(single.count).toBe(count.get(400)! + 1);
    },
  },
  {
    name: 'a K2K burst larger than every queue of the target kernel arrives whole and in order',
    // A small target ring (the K2K ring on CPU; the host ring on CUDA, whose device queues are 32 × 256).
    grains: [[Seq, { ringCapacity: 64 }], [Sender]],
    isolated: true,
    async run({ system }) {
      // One turn sends 12,000 messages to one actor: more than the target kernel's queues hold together
      // (CUDA: 32 partitions × 256 slots by default). Nothing may fail, drop or reorder.
      const n = 12_000;
      expect(await system.grain(Sender, 1).emit({ target: 3, from: 7, first: 1, count: n })).toEqual({ sent: n });
      await until('the burst processed', async () => (await system.grain(Seq, 3).stats({})).count === n, 60_000);
      const st = await system.grain(Seq, 3).stats({});
      expect(st.violations).toBe(0);
      expect(st.overlaps).toBe(0);
      expect(st.last[7]).toBe(n);
      // Kernel counters are published, not read at the call (CUDA: warp 0 sums the partitions' rows into
      // the control block between its other work): wait until they balance before reading them.
      await system.idle();
      const m = system.metrics();
      expect(m['Sender']!.k2kSent).toBe(n);
      expect(m['Seq']!.k2kReceived).toBe(n);
      expect(m['Sender']!.handlerErrors + m['Seq']!.handlerErrors).toBe(0);
      // Where the backend reports an overflow area, the burst went through it and left it empty.
      const ov = m['Seq']!.overflow;
      if (ov) {
        expect(ov.overflowed).toBeGreaterThan(0);
        expect(ov.inUse).toBe(0);
        expect(ov.exhausted).toBe(0);
      }
    },
  },
  {
    name: '10,000+ distinct actors in one kernel',
    grains: [[Numbers]],
    async run({ system }) {
      const n = 10_240;
      const base = 1_000_000;
      await system.idle(); // earlier cases' turns counted before the baseline is read
      const before = system.metrics()['Numbers']!.activations;
      const replies = await Promise.all(Array.from({ length: n }, (_, k) => system.grain(Numbers, base + k).add({ by: k })));
      replies.forEach((r, k) => expect(r).toEqual({ count: 1, total: k }));
      // Second round: every actor kept its own slot.
      const again = await Promise.all(Array.from({ length: n }, (_, k) => system.grain(Numbers, base + k).add({ by: 1 })));
      again.forEach((r, k) => expect(r).toEqual({ count: 2, total: k + 1 }));
      await expectBalanced(system);
      expect(system.metrics()['Numbers']!.activations - before).toBe(n);
    },
  },
  {
    name: 'string and integer keys',
    grains: [[Named], [Numbers]],
    async run({ system }) {
      const keys = ['alice', 'bob', '', 'ключ-🔑', 'a'.repeat(100)];
      for (const [i, k] of keys.entries()) expect(await system.grain(Named, k).inc({ by: i + 1 })).toEqual({ value: i + 1, calls: 1 });
      for (const [i, k] of keys.entries()) expect(await system.grain(Named, k).inc({ by: 10 })).toEqual({ value: i + 11, calls: 2 });
      // A K2K forward addressed by string key.
      expect(await system.grain(Named, 'alice').viaSelf({ by: 5 })).toEqual({ value: 21, calls: 3 });
      const intKeys = [0, -1, -(2 ** 31), 2 ** 31, 2 ** 40 + 3, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER];
      for (const [i, k] of intKeys.entries()) expect(await system.grain(Numbers, k).add({ by: i })).toEqual({ count: 1, total: i });
      for (const [i, k] of intKeys.entries()) expect(await system.grain(Numbers, k).add({ by: 100 })).toEqual({ count: 2, total: i + 100 });
      expect(await rejection(system.grain(Numbers, 1.5).add({ by: 1 }))).toBeInstanceOf(InvalidKeyError);
      expect(await rejection(system.grain(Numbers, 2 ** 60).add({ by: 1 }))).toBeInstanceOf(InvalidKeyError);
      expect(await rejection(system.grain(Named, 5 as unknown as string).inc({ by: 1 }))).toBeInstanceOf(InvalidKeyError);
    },
  },
  {
    name: 'K2K chain A→B→C with ctx.forward: the reply to the asker comes from C',
    grains: [[Hop1], [Hop2], [Hop3]],
    async run({ system }) {
      expect(await system.grain(Hop1, 10).go({ x: 5, trail: 0 })).toEqual({ x: 33, trail: 123, by: 3 });
      const many = await Promise.all(Array.from({ length: 200 }, (_, i) => system.grain(Hop1, 10).go({ x: i, trail: 9 })));
      many.forEach((r, i) => expect(r).toEqual({ x: (i * 2 + 1) * 3, trail: 9123, by: 3 }));
      expect(await system.grain(Hop2, 11).seen({})).toEqual({ seen: 201 });
      await system.idle(); // counters are published between batches: exact once idle
      const m = system.metrics();
      expect(m['Hop1']!.replied).toBe(0);
      expect(m['Hop2']!.k2kReceived).toBe(201);
      expect(m['Hop3']!.replied).toBe(201);
    },
  },
  {
    name: 'fan-out / fan-in across grain classes',
    grains: [[Coordinator], [Leaf]],
    async run({ system }) {
      const n = 100;
      expect(await system.grain(Coordinator, 1).scatter({ n, value: 10 })).toEqual({ expected: n });
      await until('all gathers', async () => (await system.grain(Coordinator, 1).result({})).count === n);
      let sum = 0;
      for (let i = 0; i < n; i++) sum += 2 * (10 + i);
      expect(await system.grain(Coordinator, 1).result({})).toEqual({ expected: n, count: n, sum });
      expect(await system.grain(Leaf, 5).get({})).toEqual({ total: 15, hits: 1 });
      await system.idle(); // counters are published between batches: exact once idle
      expect(system.metrics()['Leaf']!.activations).toBe(n);
    },
  },
  {
    name: 'lifecycle: every valid transition on a live kernel, each emitting an event',
    isolated: true,
    grains: [[Numbers]],
    async run({ system }) {
      const events: TransitionEvent[] = [];
      system.on('transition', (e) => events.push(e));
      const k = system.kernel(Numbers);
      const ref = system.grain(Numbers, 1);
      expect(k.state).toBe('active');
      await k.deactivate(); // active → deactivated
      expect(k.state).toBe('deactivated');
      await k.activate(); // deactivated → active
      expect(await ref.add({ by: 1 })).toEqual({ count: 1, total: 1 });
      await k.deactivate();
      await k.terminate(); // deactivated → terminated
      expect(k.state).toBe('terminated');
      await k.launch(); // terminated → launched
      expect(k.state).toBe('launched');
      await k.terminate(); // launched → terminated
      await k.launch();
      await k.activate(); // launched → active
      expect(await ref.add({ by: 2 })).toEqual({ count: 1, total: 2 });
      await k.terminate(); // active → terminated
      await k.launch();
      await k.activate();
      k.markFaulted(new Error('injected fault')); // active → faulted
      expect(k.state).toBe('faulted');
      expect(await rejection(ref.add({ by: 1 }))).toBeInstanceOf(KernelFaultError);
      await k.terminate(); // faulted → terminated
      await k.launch();
      await k.activate();
      expect(await ref.add({ by: 3 })).toEqual({ count: 1, total: 3 });
      const path = events.map((e) => `${e.from}>${e.to}`);
      expect(path).toEqual([
        'active>deactivated', 'deactivated>active', 'active>deactivated', 'deactivated>terminated',
        'terminated>launched', 'launched>terminated', 'terminated>launched', 'launched>active',
        'active>terminated', 'terminated>launched', 'launched>active', 'active>faulted',
        'faulted>terminated', 'terminated>launched', 'launched>active',
      ]);
      expect(events.every((e) => e.grain === 'Numbers')).toBe(true);
    },
  },
  {
    name: 'lifecycle: every invalid transition is rejected with InvalidTransitionError and changes nothing',
    isolated: true,
    grains: [[Numbers]],
    async run({ system }) {
      const k = system.kernel(Numbers);
      const ref = system.grain(Numbers, 1);
      const invalid = async (action: 'launch' | 'activate' | 'deactivate' | 'terminate') => {
        const before = k.state;
        const e = await rejection(k[action]());
        expect(e, `${action} while ${before}`).toBeInstanceOf(InvalidTransitionError);
        expect(k.state).toBe(before);
      };
      // active
      await invalid('launch');
      await invalid('activate');
      expect(await ref.add({ by: 1 })).toEqual({ count: 1, total: 1 });
      // deactivated
      await k.deactivate();
      await invalid('launch');
      await invalid('deactivate');
      await k.activate();
      expect(await ref.add({ by: 1 })).toEqual({ count: 2, total: 2 });
      // launched
      await k.terminate();
      await k.launch();
      await invalid('launch');
      await invalid('deactivate');
      // terminated
      await k.terminate();
      await invalid('activate');
      await invalid('deactivate');
      await invalid('terminate');
      // faulted
      await k.launch();
      await k.activate();
      k.markFaulted(new Error('injected'));
      await invalid('launch');
      await invalid('activate');
      await invalid('deactivate');
      await k.terminate();
      await k.launch();
      await k.activate();
      expect(await ref.add({ by: 5 })).toEqual({ count: 1, total: 5 });
    },
  },
  {
    name: 'messages sent while deactivated are processed after activate, in order',
    isolated: true,
    grains: [[Seq]],
    async run({ system }) {
      const k = system.kernel(Seq);
      await k.deactivate();
      const asks: Array<Promise<{ count: number }>> = [];
      for (let i = 1; i <= 100; i++) {
        if (i % 10 === 0) asks.push(system.grain(Seq, 1).pushAsk({ sender: 0, seq: i }));
        else expect(system.grain(Seq, 1).tell.push({ sender: 0, seq: i })).toBeUndefined();
      }
      await sleep(30);
      expect(k.counters().processed).toBe(0);
      expect(k.counters().inboundDepth).toBe(100);
      await k.activate();
      expect((await Promise.all(asks)).map((r) => r.count)).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
      const st = await system.grain(Seq, 1).stats({});
      expect(st.violations).toBe(0);
      expect(st.last[0]).toBe(100);
    },
  },
  {
    name: 'terminate with pending asks rejects them with KernelTerminatedError',
    isolated: true,
    grains: [[Numbers]],
    async run({ system }) {
      const k = system.kernel(Numbers);
      await k.deactivate();
      // rejection() attaches a handler now: the asks reject during terminate().
      const asks = [1, 2, 3].map((i) => rejection(system.grain(Numbers, i).add({ by: i })));
      await sleep(10);
      expect(k.counters().processed).toBe(0);
      await k.terminate();
      for (const a of asks) expect(await a).toBeInstanceOf(KernelTerminatedError);
      const c = k.counters();
      expect(c.sent).toBe(3);
      expect(c.processed).toBe(0);
      expect(c.hostRejected).toBe(3);
    },
  },
  {
    name: 'ask or tell to a terminated kernel fails with KernelTerminatedError',
    isolated: true,
    grains: [[Numbers]],
    async run({ system }) {
      await system.kernel(Numbers).terminate();
      expect(await rejection(system.grain(Numbers, 1).add({ by: 1 }))).toBeInstanceOf(KernelTerminatedError);
      expect(thrown(() => system.grain(Numbers, 1).tell.add({ by: 1 }))).toBeInstanceOf(KernelTerminatedError);
      expect(system.kernel(Numbers).counters().sent).toBe(0);
    },
  },
  {
    name: 'relaunch after terminate works and state starts fresh',
    isolated: true,
    grains: [[Numbers], [Hop1], [Hop2], [Hop3]],
    async run({ system }) {
      const ref = system.grain(Numbers, 9);
      expect(await ref.add({ by: 7 })).toEqual({ count: 1, total: 7 });
      expect(await system.grain(Hop1, 1).go({ x: 1, trail: 0 })).toEqual({ x: 9, trail: 123, by: 3 });
      await system.kernel(Numbers).terminate();
      await system.launch(Numbers);
      expect(system.kernel(Numbers).state).toBe('active');
      expect(await ref.load({})).toEqual({ f32: 0, f64: 0, i32: 0, u32: 0, b: false, count: 0, total: 0 });
      expect(await ref.add({ by: 1 })).toEqual({ count: 1, total: 1 });
      // A relaunched kernel in a K2K chain is reachable again.
      await system.kernel(Hop2).terminate();
      await system.launch(Hop2);
      expect(await system.grain(Hop1, 1).go({ x: 2, trail: 0 })).toEqual({ x: 15, trail: 123, by: 3 });
      expect(await system.grain(Hop2, 2).seen({})).toEqual({ seen: 1 });
    },
  },
  {
    name: 'handler errors reject the ask with the handler message; the actor keeps its state and runs',
    grains: [[Numbers]],
    async run({ system }) {
      const ref = system.grain(Numbers, 500);
      await system.idle(); // earlier cases' turns counted before the baseline is read
      const errorsBefore = system.metrics()['Numbers']!.handlerErrors;
      expect(await ref.add({ by: 10 })).toEqual({ count: 1, total: 10 });
      const e = await rejection(ref.fail({ code: 3 }));
      expect(e).toBeInstanceOf(HandlerError);
      expect(e.message).toContain('refused: code must be zero');
      expect((e as HandlerError).method).toBe('fail');
      expect(await ref.fail({ code: 0 })).toEqual({ ok: true });
      expect(await ref.add({ by: 1 })).toEqual({ count: 3, total: 11 });
      // A failing tell has no asker: it surfaces as a tellError event, never silently.
      const tellErrors: Error[] = [];
      system.on('tellError', (x) => tellErrors.push(x.error));
      ref.tell.failTell({ code: 1 });
      await until('tellError event', async () => tellErrors.length === 1);
      expect(tellErrors[0]).toBeInstanceOf(HandlerError);
      expect(tellErrors[0]!.message).toContain('tell refused');
      await system.idle(); // counters are published between batches: exact once idle
      expect(system.metrics()['Numbers']!.handlerErrors - errorsBefore).toBe(2);
    },
  },
  {
    name: 'schema violations fail with SchemaValidationError naming the zod path; nothing is sent',
    grains: [[Numbers]],
    async run({ system }) {
      const ref = system.grain(Numbers, 600) as unknown as Record<string, (p: unknown) => Promise<unknown>>;
      const sentBefore = system.kernel(Numbers).counters().sent;
      const bad: Array<[string, unknown, string]> = [
        ['add', { by: 'one' }, 'by'],
        ['add', { by: 1.5 }, 'by'],
        ['echo', { f32: 1, f64: 1, i32: 1, u32: -1, b: true }, 'u32'],
        ['arrays', { fixed: [1, 2, 3], ints: [0, 0, 0], bounded: [], flags: [true, true], f64s: [] }, 'fixed'],
        ['arrays', { fixed: [1, 2, 3, 4], ints: [0, 0, 0], bounded: [1, 2, 3, 4, 5, 6, 7, 8, 9], flags: [true, true], f64s: [] }, 'bounded'],
        ['nested', { origin: { x: 0, y: 'no' }, pts: [], box: { lo: { x: 0, y: 0 }, hi: { x: 0, y: 0 } } }, 'origin.y'],
        ['nested', { origin: { x: 0, y: 0 }, pts: [{ x: 0, y: 0, z: 1 }], box: { lo: { x: 0, y: 0 }, hi: { x: 0, y: 0 } } }, 'pts.0'],
        ['add', { by: 1, extra: 2 }, '(root)'],
      ];
      for (const [method, payload, path] of bad) {
        const e = await rejection(ref[method]!(payload));
        expect(e, `${method} ${JSON.stringify(payload)}`).toBeInstanceOf(SchemaValidationError);
        expect(e.message).toContain(`"${path}`);
      }
      expect(system.kernel(Numbers).counters().sent).toBe(sentBefore);
      expect(await system.grain(Numbers, 600).add({ by: 2 })).toEqual({ count: 1, total: 2 });
    },
  },
  {
    name: 'oversize payloads fail with PayloadTooLargeError, never truncated',
    isolated: true,
    grains: [[Numbers, { slotSize: 256 }]],
    async run({ system }) {
      const ref = system.grain(Numbers, 1);
      const xs = Array.from({ length: 64 }, (_, i) => i + 0.5);
      const e = await rejection(ref.bulk({ xs }));
      expect(e).toBeInstanceOf(PayloadTooLargeError);
      expect(e.message).toMatch(/needs \d+ bytes but a slot holds 208/);
      expect(system.kernel(Numbers).counters().sent).toBe(0);
      // What fits goes through whole.
      const fits = xs.slice(0, 20);
      expect(await ref.bulk({ xs: fits })).toEqual({ n: 20, sum: fits.reduce((a, b) => a + b, 0) });
    },
  },
  {
    name: 'unknown grain (UnknownGrainError) and unknown method (UnknownMethodError, and refused by the kernel)',
    grains: [[Numbers]],
    async run({ system }) {
      expect(thrown(() => system.grain(Unregistered, 1))).toBeInstanceOf(UnknownGrainError);
      expect(thrown(() => system.kernel(Unregistered))).toBeInstanceOf(UnknownGrainError);
      const def = Numbers.grain as unknown as GrainDef;
      expect(thrown(() => system.send(def, 'nope', 1, {}, true))).toBeInstanceOf(UnknownMethodError);
      expect((system.grain(Numbers, 700) as unknown as Record<string, unknown>)['nope']).toBeUndefined();
      // A message naming a method id the kernel does not have is refused and counted, not dropped.
      const tellErrors: Error[] = [];
      system.on('tellError', (x) => tellErrors.push(x.error));
      const k = system.kernel(Numbers);
      const rejectedBefore = k.counters().rejected;
      const lane = k.lanes[k.laneOf(700)]!;
      const slot = lane.producer.claim();
      const dv = lane.inbound.dv;
      dv.setUint32(slot + SLOT.length, 1, true);
      dv.setUint32(slot + SLOT.method, 99, true);
      dv.setUint32(slot + SLOT.flags, 0, true);
      dv.setUint32(slot + SLOT.corr, 0, true);
      dv.setUint32(slot + SLOT.keyLo, 700, true);
      dv.setUint32(slot + SLOT.keyHi, 0, true);
      dv.setUint32(slot + SLOT.sender, HOST_SENDER, true);
      dv.setUint32(slot + SLOT.grain, k.grainId, true);
      lane.inbound.u8[slot + 48] = 0x80;
      lane.producer.publish(slot);
      k.sent++;
      k.wake(k.laneOf(700));
      await until('rejection reported', async () => tellErrors.length === 1);
      expect(tellErrors[0]).toBeInstanceOf(DecodeError);
      expect(tellErrors[0]!.message).toMatch(/unknown method/);
      expect(k.counters().rejected - rejectedBefore).toBe(1);
      expect(await system.grain(Numbers, 700).add({ by: 1 })).toEqual({ count: 1, total: 1 });
    },
  },
  {
    name: 'full queue: senders wait (backlog) and complete after activate, in order, nothing dropped',
    isolated: true,
    grains: [[Seq, { ringCapacity: 4 }]],
    async run({ system }) {
      const k = system.kernel(Seq);
      await k.deactivate();
      const results: Array<Promise<unknown> | undefined> = [];
      for (let i = 1; i <= 40; i++) results.push(i % 8 === 0 ? system.grain(Seq, 1).pushAsk({ sender: 0, seq: i }) : system.grain(Seq, 1).tell.push({ sender: 0, seq: i }));
      // The ring holds 4; the rest wait for room.
      expect(results.slice(0, 4)).toEqual([undefined, undefined, undefined, undefined]);
      expect(results.slice(4).every((r) => r instanceof Promise)).toBe(true);
      await sleep(20);
      expect(k.counters().sent).toBe(4);
      await k.activate();
      await Promise.all(results);
      const st = await system.grain(Seq, 1).stats({});
      expect(st.count).toBe(40);
      expect(st.violations).toBe(0);
      expect(st.last[0]).toBe(40);
    },
  },
  {
    name: 'full queue: QueueFullError after queueFullTimeoutMs; what was queued is processed, nothing silently dropped',
    isolated: true,
    grains: [[Seq, { ringCapacity: 4 }]],
    system: { queueFullTimeoutMs: 60 },
    async run({ system }) {
      const k = system.kernel(Seq);
      await k.deactivate();
      for (let i = 1; i <= 4; i++) expect(system.grain(Seq, 1).tell.push({ sender: 0, seq: i })).toBeUndefined();
      const waitingTell = system.grain(Seq, 1).tell.push({ sender: 0, seq: 5 });
      const waitingAsk = system.grain(Seq, 1).pushAsk({ sender: 0, seq: 6 });
      expect(await rejection(waitingTell)).toBeInstanceOf(QueueFullError);
      expect(await rejection(waitingAsk)).toBeInstanceOf(QueueFullError);
      expect(k.counters().sent).toBe(4);
      await k.activate();
      await until('queued pushes processed', async () => (await system.grain(Seq, 1).stats({})).count === 4);
      const st = await system.grain(Seq, 1).stats({});
      expect(st.last[0]).toBe(4);
      expect(st.violations).toBe(0);
    },
  },
  {
    name: 'full queue: a send that waits is still checked at the call (a bad payload throws, nothing queued is lost); tells cancelled by QueueFullError are tellError events and counted',
    isolated: true,
    grains: [[Seq, { ringCapacity: 4 }]],
    system: { queueFullTimeoutMs: 60 },
    async run({ system }) {
      const k = system.kernel(Seq);
      const tellErrors: Error[] = [];
      system.on('tellError', (e) => tellErrors.push(e.error));
      await k.deactivate();
      for (let i = 1; i <= 4; i++) expect(system.grain(Seq, 1).tell.push({ sender: 0, seq: i })).toBeUndefined();
      const waiting = [5, 6, 7].map((i) => system.grain(Seq, 1).tell.push({ sender: 0, seq: i }));
      expect(waiting.every((w) => w instanceof Promise)).toBe(true);
      expect(() => system.grain(Seq, 1).tell.push({ sender: 0, seq: -1 })).toThrow(SchemaValidationError);
      await until('waiting tells cancelled', async () => tellErrors.length === 3);
      expect(tellErrors.every((e) => e instanceof QueueFullError)).toBe(true);
      for (const w of waiting) expect(await rejection(w)).toBeInstanceOf(QueueFullError);
      expect(k.counters().cancelled).toBe(3);
      expect(k.counters().sent).toBe(4);
      await k.activate();
      await until('queued pushes processed', async () => (await system.grain(Seq, 1).stats({})).count === 4);
      expect((await system.grain(Seq, 1).stats({})).last[0]).toBe(4);
      await system.idle();
    },
  },
  // Timers (timers.ts), stepped by the injected clock.
  ...timerCases,
  // Persistent state (persistence.ts) and reminders (reminders.ts), on the runner's store (LMDB in a temp directory).
  ...[...persistenceCases, ...reminderCases].map((p): ConformanceCase => ({ name: `${p.name} [store]`, grains: [], isolated: true, persistence: p, run: async () => {} })),
];
