/**
 * Values across the ring: every numeric kind, the small integer kinds, byte arrays, fixed and bounded
 * arrays, replies into the caller's arrays, nested structs, and the injected clock as handlers see it.
 */
import { HandlerError, SchemaValidationError } from '@ringgrain/core';
import { ReplyTargetError } from '@ringgrain/core/errors';
import { expect } from 'vitest';
import { Numbers, Small } from '../../fixtures/grains.ts';
import { rejection, until, plain, SMALL_HI, SMALL_LO, SMALL_ZERO, type ConformanceCase } from './helpers.ts';

export const valueCases: ConformanceCase[] = [
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
      expect(await ref.load({})).toEqual({
        f32: Math.fround(0.2),
        f64: -2.5,
        i32: 7,
        u32: 1,
        b: false,
        count: 2,
        total: 0,
      });
    },
  },
  {
    name:
      'small integer kinds (u8 i8 u16 i16): boundary values round trip as scalars, fixed arrays and vecs, ' +
      'decoded to their typed arrays',
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
    name:
      'small integer kinds: stored by a host tell and by a K2K send, read back; forwarded to the actor that ' +
      'replies',
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
    name:
      "small integer kinds: arithmetic is on JS numbers and each store wraps like the field's typed array " +
      '(truncate, modulo 2^bits)',
    grains: [[Small]],
    async run({ system }) {
      const ref = system.grain(Small, 120);
      ref.tell.store({
        u8: 250,
        i8: 120,
        u16: 5,
        i16: 32760,
        bytes: [250, 0, 1, 2, 3, 4, 5, 255],
        i8s: [127, -128, 0, 1],
        u16s: [65535, 0, 1, 2],
        i16s: [1000, -1000, 3],
      });
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
    name:
      'small integer kinds out of range: requests fail with SchemaValidationError naming the field (nothing ' +
      'sent); replies out of range fail the ask',
    grains: [[Small]],
    async run({ system, metrics = async () => system.metrics() }) {
      const ref = system.grain(Small, 130) as unknown as Record<string, (p: unknown) => Promise<unknown>>;
      const sentBefore = (await metrics())['Small']!.sent;
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
      expect((await metrics())['Small']!.sent).toBe(sentBefore);
      // A reply field of a small kind must get an integer in its range, on every backend.
      const small = system.grain(Small, 131);
      expect(await small.narrow({ u8: 255, i8: -128, u16: 65535, i16: -32768 })).toEqual({
        u8: 255,
        i8: -128,
        u16: 65535,
        i16: -32768,
      });
      expect(await small.narrow({ u8: 0, i8: 127, u16: 0, i16: 32767 })).toEqual({
        u8: 0,
        i8: 127,
        u16: 0,
        i16: 32767,
      });
      for (const over of [
        { u8: 256 },
        { u8: -1 },
        { i8: 128 },
        { i8: -129 },
        { u16: 65536 },
        { i16: -32769 },
        { u8: 0.5 },
      ]) {
        const e = await rejection(small.narrow({ u8: 0, i8: 0, u16: 0, i16: 0, ...over }));
        expect(e, JSON.stringify(over)).toBeInstanceOf(HandlerError);
        expect(e.message).toContain('reply does not match its schema');
      }
      expect(await small.narrow({ u8: 1, i8: 2, u16: 3, i16: 4 })).toEqual({ u8: 1, i8: 2, u16: 3, i16: 4 });
    },
  },
  {
    name:
      'small integer kinds: tellMany and askMany columns (typed arrays of any kind that fits skip the row ' +
      'check; a value out of range names column and row)',
    grains: [[Small]],
    async run({ system, metrics = async () => system.metrics() }) {
      const key = [140, 141, 142];
      const sent0 = (await metrics())['Small']!.sent;
      expect(
        system.tellMany(Small, 'set', {
          key,
          u8: new Uint8Array([0, 255, 7]),
          i8: new Int8Array([-128, 127, 0]),
          u16: new Uint16Array([0, 65535, 256]),
          i16: [-32768, 32767, -1],
        }),
      ).toBe(3);
      await system.idle();
      const got = await Promise.all(key.map((k) => system.grain(Small, k).load({})));
      expect(got.map((g) => [g.u8, g.i8, g.u16, g.i16])).toEqual([
        [0, -128, 0, -32768],
        [255, 127, 65535, 32767],
        [7, 0, 256, -1],
      ]);
      const sent1 = (await metrics())['Small']!.sent;
      expect(sent1 - sent0).toBe(3 + 3);
      const col = (path: unknown[]) => expect.objectContaining({ path });
      const fails = (cols: Record<string, unknown>) => {
        try {
          system.tellMany(Small, 'set', {
            key: [1, 2],
            u8: [1, 2],
            i8: [1, 2],
            u16: [1, 2],
            i16: [1, 2],
            ...cols,
          } as never);
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
      expect((await metrics())['Small']!.sent).toBe(sent1);
      const r = await system.askMany(Small, 'narrow', {
        key: [143, 144],
        u8: [255, 0],
        i8: new Int8Array([-128, 127]),
        u16: [65535, 0],
        i16: [32767, -32768],
      });
      expect(r.u8).toBeInstanceOf(Float64Array);
      expect([...r.u8, ...r.i8, ...r.u16, ...r.i16]).toEqual([255, 0, -128, 127, 65535, 0, 32767, -32768]);
    },
  },
  {
    // A 464-byte payload: 400 bytes fit as a bin (3 header bytes), not as a msgpack array (values ≥ 128 take 2 bytes).
    name:
      'byte arrays (t.vec(t.u8, 400)) travel as msgpack bin of their bytes: 0, 255, 256 and 400 bytes, as ' +
      'Uint8Array or number[]',
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
      const empty = await ref.arrays({
        fixed: [0, 0, 0, 0],
        ints: [0, 0, 0],
        bounded: [],
        flags: [false, false],
        f64s: [],
      });
      expect(empty.n).toBe(0);
      expect([...empty.bounded]).toEqual([]);
      const full = await ref.arrays({
        fixed: [0, 0, 0, 0],
        ints: [1, 2, 3],
        bounded: [1, 2, 3, 4, 5, 6, 7, 8],
        flags: [true, true],
        f64s: [1, 2, 3, 4],
      });
      expect(full.n).toBe(8);
      expect(full.intSum).toBe(6);
      expect([...full.f64s]).toEqual([1, 2, 3, 4]);
    },
  },
  {
    name:
      "ask with `into`: the reply's numeric arrays are the caller's own (or views of their first n " +
      'elements); a wrong kind throws ReplyTargetError at the call, one too short rejects the ask with it',
    grains: [[Numbers]],
    async run({ system, metrics = async () => system.metrics() }) {
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
      const before = (await metrics())['Numbers']!.processed;
      await expect(
        ref.arrays(req, { into: { doubled: new Float64Array(4) as unknown as Float32Array } }),
      ).rejects.toBeInstanceOf(ReplyTargetError);
      await expect(ref.arrays(req, { into: { n: new Uint32Array(1) } as never })).rejects.toBeInstanceOf(
        ReplyTargetError,
      );
      // Too short for this reply: the ask rejects with ReplyTargetError (the turn ran: its state moved on).
      await expect(ref.arrays(req, { into: { f64s: new Float64Array(1) } })).rejects.toMatchObject({
        code: 'REPLY_TARGET',
        field: 'f64s',
      });
      await system.idle();
      expect((await metrics())['Numbers']!.processed).toBe(before + 1);
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
        pts: [
          { x: 0, y: 0 },
          { x: 2, y: 4 },
          { x: 10, y: 10 },
          { x: 0.5, y: 0.5 },
        ],
        box: { lo: { x: 0, y: 0 }, hi: { x: 3, y: 5 } },
      });
      expect(r).toEqual({ centroid: { x: 12.5 / 4 - 1, y: 14.5 / 4 + 1 }, n: 4, inside: 3 });
      expect(
        await ref.nested({ origin: { x: 0, y: 0 }, pts: [], box: { lo: { x: 0, y: 0 }, hi: { x: 0, y: 0 } } }),
      ).toEqual({ centroid: { x: 0, y: 0 }, n: 0, inside: 0 });
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
];
