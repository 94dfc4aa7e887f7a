/**
 * The generated row loop (row-codegen.ts) must write exactly the bytes of the closure row writer
 * (row-writer.ts), which test/row-writer.test.ts checks against the general encoder: for every field
 * kind, edge values, typed and plain columns, tells and asks; and its chunked claims must keep the
 * ring's FIFO across the u32 index wrap and stop, in order, at a full lane.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  Grain,
  RING,
  Ring,
  RingConsumer,
  RingProducer,
  SLOT,
  SLOT_HEADER_SIZE,
  SlotFlag,
  laneOfKey,
  ringBytes,
  t,
  type GrainDef,
} from '../src/entries/internal.ts';
import { compileRowWriter } from '../src/row-writer.ts';
import { compileRowLoop } from '../src/row-codegen.ts';
import { KIND_FIELDS, kindValues } from './kind-fields.ts';

class Kinds extends Grain({
  name: 'Kinds',
  module: import.meta.url,
  state: t.struct({ n: t.u32 }),
  methods: {
    put: { request: KIND_FIELDS },
    one: { request: t.struct({ v: t.f64 }) },
    none: { request: t.struct({}) },
  },
}) {
  put(): void {}
  one(): void {}
  none(): void {}
}
const def = Kinds.grain as GrainDef;
const put = def.methodByName.get('put')!;
const one = def.methodByName.get('one')!;
const SLOT_SIZE = 128;

function ringOf(capacity: number, start = 0): Ring {
  const ring = Ring.format(new SharedArrayBuffer(ringBytes(capacity, SLOT_SIZE)), 0, capacity, SLOT_SIZE);
  ring.words[RING.head] = start | 0;
  ring.words[RING.tail] = start | 0;
  return ring;
}

const EDGE = {
  a: [0, -0, 1.5, -1e308, 1e308, Number.MIN_VALUE, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER],
  b: [0, -0, 1.5, 3.4028234663852886e38, -3.4028234663852886e38, 1e-45, 0.1],
  c: [0, -1, 1, -0x80000000, 0x7fffffff, 127, 128, -32, -33],
  d: [0, 1, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0xffffffff],
  e: [true, false],
  f: [0, -1, -128, 127, -32, -33],
  g: [0, 1, 127, 128, 255],
  h: [0, -1, -0x8000, 0x7fff, -129, 255],
  k: [0, 1, 0xff, 0x100, 0xffff],
} as const;
const KEYS = [
  0,
  1,
  -1,
  0x7fffffff,
  -0x80000000,
  2 ** 32,
  -(2 ** 32) - 5,
  2 ** 40 + 3,
  Number.MAX_SAFE_INTEGER,
  Number.MIN_SAFE_INTEGER,
];

/** Rows covering every edge value of every field (the longest list cycled, the others wrap). */
function edgeRows(n: number) {
  const cols: Record<string, unknown[]> = {};
  for (const [f, vs] of Object.entries(EDGE)) cols[f] = Array.from({ length: n }, (_, i) => vs[i % vs.length]);
  return { key: Array.from({ length: n }, (_, i) => KEYS[i % KEYS.length]!), cols };
}

/** Typed columns where the kind has a typed array (bool stays a plain array). */
function typed(cols: Record<string, unknown[]>): Record<string, ArrayLike<unknown>> {
  const T: Record<string, new (xs: number[]) => ArrayLike<number>> = {
    a: Float64Array as never,
    b: Float32Array as never,
    c: Int32Array as never,
    d: Uint32Array as never,
    f: Int8Array as never,
    g: Uint8Array as never,
    h: Int16Array as never,
    k: Uint16Array as never,
  };
  const out: Record<string, ArrayLike<unknown>> = {};
  for (const [f, vs] of Object.entries(cols)) out[f] = T[f] ? new T[f]!(vs as number[]) : vs;
  return out;
}

/** Slot bytes of rows [0, n) written by the closure writer (plus seq), the reference. */
function reference(
  key: ArrayLike<number>,
  cols: Record<string, ArrayLike<unknown>>,
  n: number,
  ask: boolean,
  corrBase: number,
): Uint8Array[] {
  const ring = ringOf(1024);
  const p = new RingProducer(ring);
  const write = compileRowWriter(put, 7, key, cols, ring.payloadCapacity)!;
  const out: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    const slot = p.claim();
    write(ring.i32, ring.dv, slot, i, 98765.25);
    if (ask) {
      ring.dv.setUint32(slot + SLOT.flags, SlotFlag.ASK, true);
      ring.dv.setUint32(slot + SLOT.corr, corrBase + i, true);
    }
    p.publishSeq(slot);
    out.push(ring.u8.slice(slot, slot + SLOT_SIZE));
  }
  return out;
}

function generated(
  key: ArrayLike<number>,
  cols: Record<string, ArrayLike<unknown>>,
  n: number,
  ask: boolean,
  corrBase: number,
): Uint8Array[] {
  const ring = ringOf(1024);
  const p = new RingProducer(ring);
  const loop = compileRowLoop(put, 7, key, cols, ring.payloadCapacity, ask)!;
  expect(
    loop(
      [p],
      key,
      put.request.fieldNames.map((f) => cols[f]!),
      0,
      n,
      98765.25,
      corrBase,
    ),
  ).toBe(n);
  return Array.from({ length: n }, (_, i) => ring.u8.slice(ring.slotAt(i), ring.slotAt(i) + SLOT_SIZE));
}

describe('generated tellMany row loop (row-codegen.ts)', () => {
  it(
    'writes the closure writer’s bytes for every field kind and edge value: plain and typed columns, int and ' +
      'wide keys, tells and asks',
    () => {
      const n = 90;
      const { key, cols } = edgeRows(n);
      for (const ask of [false, true]) {
        expect(generated(key, cols, n, ask, 0xfffffff0)).toEqual(reference(key, cols, n, ask, 0xfffffff0));
        const tc = typed(cols);
        expect(generated(key, tc, n, ask, 5)).toEqual(reference(key, tc, n, ask, 5));
        const ik = Int32Array.from(key, (k) => k | 0);
        expect(generated(ik, tc, n, ask, 5)).toEqual(reference(ik, tc, n, ask, 5));
      }
    },
  );

  it('property: any valid row is written byte for byte as the closure writer writes it', () => {
    const row = fc.record({
      key: fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
      ...kindValues(true),
    });
    fc.assert(
      fc.property(fc.array(row, { minLength: 1, maxLength: 20 }), fc.boolean(), (rows, ask) => {
        const key = rows.map((r) => r.key);
        const cols: Record<string, unknown[]> = {};
        for (const f of put.request.fieldNames) cols[f] = rows.map((r) => r[f as keyof typeof r]);
        expect(generated(key, cols, rows.length, ask, 1)).toEqual(reference(key, cols, rows.length, ask, 1));
      }),
      { numRuns: 200 },
    );
  });

  it('one generated loop per shape: the same method with other column types or for asks gets its own', () => {
    const cap = 100;
    const a = compileRowLoop(one, 1, [1], { v: [1] }, cap, false);
    expect(compileRowLoop(one, 1, [2, 3], { v: [4, 5] }, cap, false)).toBe(a);
    expect(compileRowLoop(one, 1, [1], { v: new Float64Array(1) }, cap, false)).not.toBe(a);
    expect(compileRowLoop(one, 1, [1], { v: [1] }, cap, true)).not.toBe(a);
    expect(compileRowLoop(one, 2, [1], { v: [1] }, cap, false)).not.toBe(a);
    expect(compileRowLoop(def.methodByName.get('none')!, 1, [1], {}, cap, false)).toBeDefined();
    // An image larger than the slot's payload: no fast path.
    expect(compileRowLoop(put, 1, [1], {}, 20, false)).toBeUndefined();
  });

  it('chunked claims keep FIFO across the u32 index wrap, stop at a full ring and go on where they stopped', () => {
    for (const start of [0, 0xfffffff3, 0x7ffffffa]) {
      const ring = ringOf(8, start);
      const p = new RingProducer(ring);
      const c = new RingConsumer(ring);
      const n = 100;
      const key = Array.from({ length: n }, (_, i) => i);
      const v = Array.from({ length: n }, (_, i) => i * 1.5);
      const loop = compileRowLoop(one, 0, key, { v }, ring.payloadCapacity, false)!;
      const got: number[] = [];
      let next = 0;
      let rounds = 0;
      while (got.length < n) {
        const before = next;
        next = loop([p], key, [v], next, n, 1, 0);
        // Never more than the free slots; head published for observers once per call.
        expect(next - before).toBeLessThanOrEqual(8);
        expect(ring.depth()).toBe(next - got.length);
        // Take a varying number of messages (1..5), as a consumer would between host sweeps.
        for (let k = 0; k < 1 + (rounds % 5); k++) {
          const slot = c.peek();
          if (slot < 0) break;
          expect(ring.dv.getUint32(slot + SLOT.keyLo, true)).toBe(got.length);
          // Payload: map header, fixstr "v" (2 bytes), the float64 tag, then the value (big-endian).
          got.push(ring.dv.getFloat64(slot + SLOT_HEADER_SIZE + 4, false));
          c.release();
        }
        rounds++;
      }
      expect(got).toEqual(v);
      expect(c.peek()).toBe(-1);
    }
  });

  it('with several lanes, rows go to laneOfKey’s lane (wide and negative keys, plain and Int32Array columns)', () => {
    for (const lanes of [2, 3, 4, 7]) {
      const wide = Array.from({ length: 300 }, (_, i) =>
        i % 3 === 0 ? -i * 7919 : i % 3 === 1 ? i * 2 ** 33 + i : -(2 ** 40) - i,
      );
      const small = Int32Array.from({ length: 300 }, (_, i) => (i * 2654435761) | 0);
      for (const key of [wide, small] as ArrayLike<number>[]) {
        const rings = Array.from({ length: lanes }, () => ringOf(512));
        const producers = rings.map((r) => new RingProducer(r));
        const v = Array.from({ length: key.length }, (_, i) => i);
        const loop = compileRowLoop(one, 0, key, { v }, rings[0]!.payloadCapacity, false)!;
        expect(loop(producers, key, [v], 0, key.length, 1, 0)).toBe(key.length);
        for (const [l, r] of rings.entries()) {
          const c = new RingConsumer(r);
          const got: number[] = [];
          for (let s = c.peek(); s >= 0; s = c.peek()) {
            got.push(r.dv.getFloat64(s + SLOT_HEADER_SIZE + 4, false));
            c.release();
          }
          expect(got).toEqual(v.filter((i) => laneOfKey(key[i]!, lanes) === l));
        }
      }
    }
  });

  it('with several lanes, a full lane stops the loop at that row, rows before it published', () => {
    const rings = [ringOf(4), ringOf(4), ringOf(4)];
    const producers = rings.map((r) => new RingProducer(r));
    const n = 40;
    const key = Array.from({ length: n }, (_, i) => 100 + i);
    const v = key.map((k) => k / 2);
    const loop = compileRowLoop(one, 0, key, { v }, rings[0]!.payloadCapacity, false)!;
    const stop = loop(producers, key, [v], 0, n, 1, 0);
    // The first row whose lane already held 4 messages.
    const per = [0, 0, 0];
    let want = n;
    for (let i = 0; i < n; i++) {
      const l = laneOfKey(key[i]!, 3);
      if (per[l] === 4) {
        want = i;
        break;
      }
      per[l]!++;
    }
    expect(stop).toBe(want);
    for (const [l, r] of rings.entries()) {
      expect(r.depth()).toBe(per[l]);
      const c = new RingConsumer(r);
      const keys: number[] = [];
      for (let s = c.peek(); s >= 0; s = c.peek()) {
        keys.push(r.dv.getUint32(s + SLOT.keyLo, true));
        c.release();
      }
      expect(keys).toEqual(key.slice(0, stop).filter((k) => laneOfKey(k, 3) === l));
    }
  });
});
