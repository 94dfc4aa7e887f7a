import { decode as mpDecode, encode as mpEncode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { Packr, Unpackr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import {
  DecodeError,
  MISMATCH,
  OVERFLOW,
  PayloadTooLargeError,
  Reader,
  Ring,
  SLOT_HEADER_SIZE,
  SchemaValidationError,
  SlotReader,
  SlotWriter,
  Writer,
  compileEncoder,
  decodeExact,
  encodedSize,
  ringBytes,
  t,
  type Schema,
} from '../src/entries/internal.ts';
import { fromGeneric, schemaArb, structArb, toPlain, valueArb } from './arbitraries.ts';

function encode(schema: Schema, value: unknown, cap = 1 << 16): Uint8Array {
  const w = new Writer(new Uint8Array(cap)).reset(0, cap);
  compileEncoder(schema)(value, w);
  return w.u8.slice(0, w.pos);
}

function decode(schema: Schema, bytes: Uint8Array): unknown {
  // Put the bytes at an odd offset inside a bigger buffer: fields are unaligned on the wire.
  const buf = new Uint8Array(bytes.length + 7);
  buf.set(bytes, 3);
  return decodeExact(schema, new Reader(buf).reset(3, 3 + bytes.length));
}

function foldNegZero(v: unknown): unknown {
  if (Object.is(v, -0)) return 0;
  if (v instanceof Float32Array || v instanceof Float64Array) return v.map((x) => (Object.is(x, -0) ? 0 : x));
  if (ArrayBuffer.isView(v)) return v;
  if (Array.isArray(v)) return v.map(foldNegZero);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, foldNegZero(x)]));
  return v;
}

const unpackr = new Unpackr({ useRecords: false });
const packr = new Packr({ useRecords: false });

const everything = t.struct({
  f32: t.f32,
  f64: t.f64,
  i32: t.i32,
  u32: t.u32,
  ok: t.bool,
  fixed: t.array(t.f32, 3),
  fixedI: t.array(t.i32, 2),
  bounded: t.vec(t.u32, 8),
  bools: t.array(t.bool, 3),
  f64s: t.vec(t.f64, 4),
  inner: t.struct({ x: t.f64, y: t.i32, tag: t.array(t.u32, 2) }),
  points: t.vec(t.struct({ x: t.f32, y: t.f32 }), 4),
  grid: t.array(t.array(t.i32, 2), 2),
  i8: t.i8,
  u8: t.u8,
  i16: t.i16,
  u16: t.u16,
  bytes: t.vec(t.u8, 8),
  i8s: t.array(t.i8, 3),
  shorts: t.vec(t.i16, 4),
  u16s: t.array(t.u16, 2),
});
const everythingValue = {
  f32: 1.5,
  f64: Math.PI,
  i32: -123456,
  u32: 0xfffffffe,
  ok: true,
  fixed: new Float32Array([1, -2.5, 3.25]),
  fixedI: new Int32Array([-1, 2 ** 31 - 1]),
  bounded: new Uint32Array([1, 2, 3]),
  bools: [true, false, true],
  f64s: new Float64Array([]),
  inner: { x: -0.125, y: -(2 ** 31), tag: new Uint32Array([7, 8]) },
  points: [
    { x: 1, y: 2 },
    { x: 0.5, y: -0.5 },
  ],
  grid: [new Int32Array([1, 2]), new Int32Array([3, 4])],
  i8: -128,
  u8: 255,
  i16: -32768,
  u16: 65535,
  bytes: new Uint8Array([0, 1, 127, 128, 255]),
  i8s: new Int8Array([-128, 0, 127]),
  shorts: new Int16Array([-32768, -1, 32767]),
  u16s: new Uint16Array([0, 65535]),
};

describe('schema-directed msgpack codec', () => {
  it('round trips every kind: scalars, fixed and bounded arrays, nested structs', () => {
    expect(decode(everything, encode(everything, everythingValue))).toEqual(everythingValue);
  });

  it('accepts number[] for numeric arrays and returns typed arrays', () => {
    const s = t.struct({ xs: t.vec(t.i32, 4) });
    const out = decode(s, encode(s, { xs: [1, -2, 3] })) as { xs: Int32Array };
    expect(out.xs).toBeInstanceOf(Int32Array);
    expect([...out.xs]).toEqual([1, -2, 3]);
  });

  it(
    'writes f32 as float32 and f64 as float64, ints in the smallest standard format, maps in ' + 'declaration order',
    () => {
      expect([...encode(t.f32, 1)]).toEqual([0xca, 0x3f, 0x80, 0, 0]);
      expect(encode(t.f64, 1)[0]).toBe(0xcb);
      expect([...encode(t.i32, 5)]).toEqual([5]);
      expect([...encode(t.i32, -1)]).toEqual([0xff]);
      expect([...encode(t.i32, -33)]).toEqual([0xd0, 0xdf]);
      expect([...encode(t.u32, 200)]).toEqual([0xcc, 200]);
      expect([...encode(t.u32, 0x10000)]).toEqual([0xce, 0, 1, 0, 0]);
      expect([...encode(t.bool, false)]).toEqual([0xc2]);
      const s = t.struct({ b: t.u32, a: t.u32 });
      expect([...encode(s, { a: 1, b: 2 })]).toEqual([0x82, 0xa1, 0x62, 2, 0xa1, 0x61, 1]);
      // Numeric arrays are little-endian bin.
      expect([...encode(t.array(t.u32, 1), [1])]).toEqual([0xc4, 4, 1, 0, 0, 0]);
    },
  );

  it(
    'small integer kinds: the smallest int format for the value, arrays as bin of 1- or 2-byte little-endian ' +
      'elements',
    () => {
      expect([...encode(t.u8, 255)]).toEqual([0xcc, 0xff]);
      expect([...encode(t.u8, 7)]).toEqual([7]);
      expect([...encode(t.i8, -128)]).toEqual([0xd0, 0x80]);
      expect([...encode(t.i8, -1)]).toEqual([0xff]);
      expect([...encode(t.i16, -32768)]).toEqual([0xd1, 0x80, 0x00]);
      expect([...encode(t.i16, 300)]).toEqual([0xcd, 0x01, 0x2c]);
      expect([...encode(t.u16, 65535)]).toEqual([0xcd, 0xff, 0xff]);
      // A byte array is a bin of its bytes, whether given as a Uint8Array (copied whole) or as numbers.
      expect([...encode(t.vec(t.u8, 4), new Uint8Array([1, 2, 255]))]).toEqual([0xc4, 3, 1, 2, 255]);
      expect([...encode(t.vec(t.u8, 4), [1, 2, 255])]).toEqual([0xc4, 3, 1, 2, 255]);
      const big = new Uint8Array(300).map((_, i) => i & 0xff);
      expect([...encode(t.vec(t.u8, 300), big)]).toEqual([0xc5, 0x01, 0x2c, ...big]);
      expect([...encode(t.array(t.i8, 2), [-1, 127])]).toEqual([0xc4, 2, 0xff, 0x7f]);
      expect([...encode(t.array(t.i16, 2), [-2, 258])]).toEqual([0xc4, 4, 0xfe, 0xff, 0x02, 0x01]);
      expect([...encode(t.array(t.u16, 1), new Uint16Array([0xabcd]))]).toEqual([0xc4, 2, 0xcd, 0xab]);
      // Decoded arrays are the kind's typed array.
      expect(decode(t.vec(t.u8, 4), encode(t.vec(t.u8, 4), [9]))).toBeInstanceOf(Uint8Array);
      expect(decode(t.vec(t.i8, 4), encode(t.vec(t.i8, 4), [9]))).toBeInstanceOf(Int8Array);
      expect(decode(t.vec(t.i16, 4), encode(t.vec(t.i16, 4), [9]))).toBeInstanceOf(Int16Array);
      expect(decode(t.vec(t.u16, 4), encode(t.vec(t.u16, 4), [9]))).toBeInstanceOf(Uint16Array);
    },
  );

  it('small integer kinds: values out of range or not integers are refused by the encoder and the decoder', () => {
    const w = new Writer(new Uint8Array(64));
    const bad: Array<[Schema, unknown]> = [
      [t.u8, 256],
      [t.u8, -1],
      [t.u8, 1.5],
      [t.u8, '1'],
      [t.i8, 128],
      [t.i8, -129],
      [t.i8, 0.5],
      [t.u16, 65536],
      [t.u16, -1],
      [t.i16, 32768],
      [t.i16, -32769],
      [t.i16, NaN],
      [t.vec(t.u8, 4), [1, 256]],
      [t.vec(t.u8, 4), [-1]],
      [t.array(t.i8, 1), [200]],
      [t.vec(t.u16, 2), [1.5]],
      [t.vec(t.i16, 2), [40000]],
      // Elements of a typed array of another kind are checked like numbers.
      [t.vec(t.u8, 4), new Int8Array([-1])],
      [t.vec(t.i16, 4), new Uint16Array([40000])],
    ];
    for (const [schema, value] of bad) {
      expect(() => compileEncoder(schema)(value, w.reset(0, 64)), `${JSON.stringify(value)}`).toThrow(
        expect.toSatisfy((e) => e === MISMATCH),
      );
    }
    for (const [schema, value] of bad.slice(0, 12)) {
      expect(() => decode(schema, mpEncode(value)), `${JSON.stringify(value)}`).toThrow(DecodeError);
    }
    expect(() => decode(t.struct({ b: t.u8 }), mpEncode({ b: 256 }))).toThrow(/"b".*expected a u8, got 256/);
    expect(() => decode(t.struct({ b: t.i16 }), mpEncode({ b: -40000 }))).toThrow(/"b".*expected an i16, got -40000/);
    // A msgpack array for a byte array: each element checked.
    expect(() => decode(t.vec(t.u8, 4), mpEncode([1, 256]))).toThrow(/expected a u8, got 256/);
    // A bin of an odd number of bytes is not an array of 2-byte elements.
    expect(() => decode(t.vec(t.u16, 4), new Uint8Array([0xc4, 3, 0, 0, 0]))).toThrow(/whole number of u16/);
  });

  it('f32 values are rounded the way a float32 slot rounds them', () => {
    expect(decode(t.f32, encode(t.f32, 0.1))).toBe(Math.fround(0.1));
  });

  it('refuses values that do not match (MISMATCH) and values that do not fit (OVERFLOW)', () => {
    const enc = compileEncoder(t.struct({ a: t.u32 }));
    const w = new Writer(new Uint8Array(64));
    for (const bad of [{ a: -1 }, { a: 1.5 }, { a: 2 ** 32 }, { a: '1' }, {}, { a: 1, b: 2 }, null, 5]) {
      expect(() => enc(bad, w.reset(0, 64))).toThrow(expect.toSatisfy((e) => e === MISMATCH));
    }
    const big = t.struct({ xs: t.vec(t.f64, 100) });
    expect(() => compileEncoder(big)({ xs: new Float64Array(100) }, w.reset(0, 64))).toThrow(
      expect.toSatisfy((e) => e === OVERFLOW),
    );
    expect(encodedSize(big, { xs: new Float64Array(100) })).toBe(1 + 3 + 3 + 800);
  });

  it('property: random schema + random value round trips exactly', () => {
    fc.assert(
      fc.property(
        schemaArb(4).chain((s) => fc.tuple(fc.constant(s), valueArb(s))),
        ([s, v]) => {
          expect(decode(s, encode(s, v))).toEqual(v);
        },
      ),
      { numRuns: 300, seed: 42 },
    );
  });
});

describe('interop with independent msgpack libraries', () => {
  it('@msgpack/msgpack and msgpackr (useRecords:false) decode our payload to the same values', () => {
    const bytes = encode(everything, everythingValue);
    expect(fromGeneric(everything, mpDecode(bytes))).toEqual(everythingValue);
    expect(fromGeneric(everything, unpackr.unpack(bytes))).toEqual(everythingValue);
  });

  it('property: both libraries decode any encoded value to what our decoder returns', () => {
    fc.assert(
      fc.property(
        structArb(3).chain((s) => fc.tuple(fc.constant(s), valueArb(s))),
        ([s, v]) => {
          const bytes = encode(s, v);
          expect(fromGeneric(s, mpDecode(bytes))).toEqual(v);
          expect(fromGeneric(s, unpackr.unpack(bytes))).toEqual(v);
        },
      ),
      { numRuns: 200, seed: 7 },
    );
  });

  it('payloads taken out of a ring slot decode with @msgpack/msgpack and msgpackr', () => {
    const slotSize = 512;
    const sab = new SharedArrayBuffer(ringBytes(4, slotSize));
    const ring = Ring.format(sab, 0, 4, slotSize);
    const writer = new SlotWriter();
    const slot = ring.slotAt(1);
    writer.write(
      ring,
      slot,
      { method: 3, flags: 1, corr: 9, keyLo: 42, keyHi: 0, sender: 0xffffffff, grain: 0 },
      everything,
      everythingValue,
      'Test',
      'm',
    );
    const length = ring.dv.getUint32(slot + 4, true);
    const payload = ring.u8.slice(slot + SLOT_HEADER_SIZE, slot + SLOT_HEADER_SIZE + length);
    expect(fromGeneric(everything, mpDecode(payload))).toEqual(everythingValue);
    expect(fromGeneric(everything, unpackr.unpack(payload))).toEqual(everythingValue);
    expect(new SlotReader().payload(ring, slot, everything)).toEqual(everythingValue);
  });

  it(
    'our decoder accepts what @msgpack/msgpack encodes (number[] arrays, typed arrays as bin, float64 ' + 'for f32)',
    () => {
      const plain = toPlain(everythingValue);
      expect(decode(everything, mpEncode(plain))).toEqual(everythingValue);
      // @msgpack/msgpack writes typed arrays as bin of their bytes (little-endian here).
      expect(decode(everything, mpEncode(everythingValue))).toEqual(everythingValue);
      // Any key order, float64 for an f32 field (rounded to float32), ints for floats.
      const s = t.struct({ a: t.f32, b: t.f64, c: t.i32 });
      expect(decode(s, mpEncode({ c: -7, b: 2, a: 0.1 }))).toEqual({ a: Math.fround(0.1), b: 2, c: -7 });
    },
  );

  it('property: our decoder accepts msgpackr (useRecords:false) and @msgpack/msgpack encodings of plain values', () => {
    fc.assert(
      fc.property(
        structArb(3).chain((s) => fc.tuple(fc.constant(s), valueArb(s))),
        ([s, v]) => {
          const plain = toPlain(v);
          // Both libraries write -0 as the integer 0 (their choice, legal msgpack): compare with -0 folded.
          expect(decode(s, mpEncode(plain))).toEqual(foldNegZero(v));
          expect(decode(s, packr.pack(plain))).toEqual(foldNegZero(v));
        },
      ),
      { numRuns: 200, seed: 11 },
    );
  });

  it('our decoder refuses what the schema does not allow, naming the field', () => {
    const s = t.struct({ a: t.u32, inner: t.struct({ n: t.i32 }), xs: t.array(t.f32, 2) });
    const good = { a: 1, inner: { n: 1 }, xs: [1, 2] };
    const cases: Array<[unknown, RegExp]> = [
      [{ ...good, a: -1 }, /"a".*u32/],
      [{ ...good, a: 1.5 }, /"a".*u32/],
      [{ ...good, inner: { n: 2 ** 31 } }, /"inner\.n".*i32/],
      [{ ...good, inner: { n: 'x' } }, /"inner\.n".*number/],
      [{ ...good, xs: [1, 2, 3] }, /"xs".*expected 2 elements/],
      [{ ...good, extra: 1 }, /expected 3 fields/],
      [{ a: 1, inner: { n: 1 } }, /expected 3 fields/],
      [{ ...good, inner: { m: 1 } }, /unknown field "m"/],
      [[1, 2, 3], /expected a map/],
      [{ ...good, xs: null }, /"xs"/],
    ];
    for (const [value, why] of cases) {
      expect(() => decode(s, mpEncode(value))).toThrow(DecodeError);
      expect(() => decode(s, mpEncode(value))).toThrow(why);
    }
    // Duplicate keys (legal msgpack, but ambiguous) and trailing bytes are refused.
    const dup = new Uint8Array([0x82, 0xa1, 0x61, 1, 0xa1, 0x61, 2]);
    expect(() => decode(t.struct({ a: t.u32, b: t.u32 }), dup)).toThrow(/appears twice/);
    expect(() => decode(t.u32, new Uint8Array([1, 2]))).toThrow(/trailing/);
    // A bin whose length is not a whole number of elements.
    expect(() => decode(t.vec(t.f32, 4), new Uint8Array([0xc4, 3, 0, 0, 0]))).toThrow(/whole number/);
  });
});

describe('malformed bytes never crash the decoder', () => {
  function decodeOrDecodeError(s: Schema, bytes: Uint8Array): void {
    try {
      decode(s, bytes);
    } catch (e) {
      if (!(e instanceof DecodeError)) throw new Error(`non-DecodeError thrown: ${String(e)}`, { cause: e });
    }
  }

  it('property: random bytes give a value or a DecodeError', () => {
    fc.assert(
      fc.property(schemaArb(3), fc.uint8Array({ maxLength: 64 }), (s, bytes) => decodeOrDecodeError(s, bytes)),
      { numRuns: 2000, seed: 5 },
    );
  });

  it('property: truncated and bit-flipped valid payloads give a value or a DecodeError', () => {
    fc.assert(
      fc.property(
        structArb(3).chain((s) =>
          fc.tuple(fc.constant(s), valueArb(s), fc.nat(), fc.nat(), fc.integer({ min: 1, max: 255 })),
        ),
        ([s, v, cut, at, xor]) => {
          const bytes = encode(s, v);
          decodeOrDecodeError(s, bytes.subarray(0, cut % (bytes.length + 1)));
          const flipped = bytes.slice();
          flipped[at % flipped.length] = (flipped[at % flipped.length] as number) ^ xor;
          decodeOrDecodeError(s, flipped);
        },
      ),
      { numRuns: 1000, seed: 9 },
    );
  });

  it('an array header is checked against the bytes left before anything is allocated for it', () => {
    // 5 bytes claiming 2^24 f64 elements: refused as truncated at the header, no 128 MiB array first.
    const claim = new Uint8Array([0xdd, 0x01, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03]);
    expect(() => decode(t.vec(t.f64, 2 ** 24), claim)).toThrow(
      /array of 16777216 elements needs at least 16777216 more bytes, 3 remain/,
    );
    // Elements of a struct take at least their keys: 4 elements of {abc: u8} need 4 * 6 bytes.
    const s = t.vec(t.struct({ abc: t.u8 }), 1000);
    expect(() => decode(s, new Uint8Array([0x94, ...new Array(20).fill(0)]))).toThrow(
      /needs at least 24 more bytes, 20 remain/,
    );
    // The bound is a lower bound: the smallest valid encodings still decode.
    expect(decode(s, encode(s, [{ abc: 1 }, { abc: 2 }]))).toEqual([{ abc: 1 }, { abc: 2 }]);
    expect(decode(t.array(t.f64, 3), new Uint8Array([0x93, 1, 2, 3]))).toEqual(new Float64Array([1, 2, 3]));
  });

  it('a slot length beyond the slot is a DecodeError, not a read past it', () => {
    const sab = new SharedArrayBuffer(ringBytes(2, 128));
    const ring = Ring.format(sab, 0, 2, 128);
    ring.dv.setUint32(ring.slotAt(0) + 4, 10_000, true);
    expect(() => new SlotReader().payload(ring, ring.slotAt(0), t.struct({}))).toThrow(DecodeError);
  });
});

describe('SlotWriter errors', () => {
  const sab = new SharedArrayBuffer(ringBytes(2, 128));
  const ring = Ring.format(sab, 0, 2, 128);
  const h = { method: 0, flags: 0, corr: 0, keyLo: 0, keyHi: 0, sender: 0, grain: 0 };

  it('a small integer out of range is a SchemaValidationError naming the field, the kind and its range', () => {
    const s = t.struct({ inner: t.struct({ b: t.u8, c: t.i16 }) });
    const err = (() => {
      try {
        new SlotWriter().write(ring, ring.slotAt(0), h, s, { inner: { b: 256, c: 0 } }, 'G', 'm');
      } catch (e) {
        return e as SchemaValidationError;
      }
      throw new Error('expected a SchemaValidationError');
    })();
    expect(err).toBeInstanceOf(SchemaValidationError);
    expect(err.path).toEqual(['inner', 'b']);
    expect(err.message).toContain('a u8 is an integer in 0..255');
    expect(() => new SlotWriter().write(ring, ring.slotAt(0), h, s, { inner: { b: 1, c: -32769 } }, 'G', 'm')).toThrow(
      /"inner\.c".*an i16 is an integer in -32768\.\.32767/,
    );
  });

  it('a schema violation is a SchemaValidationError with the zod path', () => {
    const s = t.struct({ inner: t.struct({ xs: t.vec(t.u32, 2) }) });
    let err: unknown;
    try {
      new SlotWriter().write(ring, ring.slotAt(0), h, s, { inner: { xs: [1, -1] } }, 'G', 'm');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SchemaValidationError);
    expect((err as SchemaValidationError).message).toMatch(/inner\.xs/);
    expect((err as SchemaValidationError).path.slice(0, 2)).toEqual(['inner', 'xs']);
  });

  it('an oversize payload is a PayloadTooLargeError with the needed size, and nothing is truncated', () => {
    const s = t.struct({ xs: t.vec(t.f64, 64) });
    const slot = ring.slotAt(0);
    ring.dv.setUint32(slot + 4, 0xdead, true);
    expect(() => new SlotWriter().write(ring, slot, h, s, { xs: new Float64Array(64) }, 'G', 'm')).toThrow(
      PayloadTooLargeError,
    );
    expect(() => new SlotWriter().write(ring, slot, h, s, { xs: new Float64Array(64) }, 'G', 'm')).toThrow(
      /needs 519 bytes but a slot holds 80/,
    );
    expect(ring.dv.getUint32(slot + 4, true)).toBe(0xdead); // header untouched: no partial message
  });
});
