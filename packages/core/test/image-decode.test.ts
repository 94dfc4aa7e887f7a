/**
 * The consumer's fixed-image reader (image-decode.ts) must read a fixed image into exactly what the
 * general decoder returns, and decline (undefined) every other payload, which then meets the general
 * decoder's checks: other encodings of the same values, other field orders, other lengths, a bad bool.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  Grain,
  HOST_SENDER,
  Reader,
  SLOT,
  SLOT_HEADER_SIZE,
  SlotWriter,
  decodeExact,
  fixedReader,
  t,
  type GrainDef,
} from '../src/entries/internal.ts';
import { compileRowWriter } from '../src/row-writer.ts';
import { KIND_FIELDS, kindValues } from './kind-fields.ts';

class Kinds extends Grain({
  name: 'Kinds',
  module: import.meta.url,
  state: t.struct({ n: t.u32 }),
  methods: {
    put: { request: KIND_FIELDS },
    none: { request: t.struct({}) },
    vec: { request: t.struct({ xs: t.vec(t.f64, 4) }) },
  },
}) {
  put(): void {}
  none(): void {}
  vec(): void {}
}
const def = Kinds.grain as GrainDef;
const put = def.methodByName.get('put')!;
const SLOT_SIZE = 128;

function target() {
  const buffer = new ArrayBuffer(SLOT_SIZE);
  return {
    buffer,
    u8: new Uint8Array(buffer),
    i32: new Int32Array(buffer),
    dv: new DataView(buffer),
    slotSize: SLOT_SIZE,
    payloadCapacity: SLOT_SIZE - SLOT_HEADER_SIZE,
  };
}

function image(p: Record<string, unknown>) {
  const tg = target();
  const cols = Object.fromEntries(put.request.fieldNames.map((f) => [f, [p[f]]]));
  compileRowWriter(put, 0, [1], cols, tg.payloadCapacity)!(tg.i32, tg.dv, 0, 0, 0);
  return tg;
}

const general = (tg: ReturnType<typeof target>) =>
  decodeExact(
    put.request,
    new Reader(tg.u8).reset(SLOT_HEADER_SIZE, SLOT_HEADER_SIZE + tg.dv.getUint32(SLOT.length, true)),
  );
const fixed = (tg: ReturnType<typeof target>) =>
  fixedReader(put)!(tg.u8, tg.dv, SLOT_HEADER_SIZE, tg.dv.getUint32(SLOT.length, true));

const row = fc.record(kindValues(false));

describe('fixed-image reader (image-decode.ts)', () => {
  it(
    'property: reads any fixed image into what the general decoder returns (NaN, -0 and every range edge ' +
      'included)',
    () => {
      const edges = [
        { a: Number.NaN, b: -0, c: -0x80000000, d: 0xffffffff, e: false, f: -128, g: 255, h: -32768, k: 65535 },
        { a: -0, b: Number.POSITIVE_INFINITY, c: 0x7fffffff, d: 0, e: true, f: 127, g: 0, h: 32767, k: 0 },
      ];
      for (const p of edges) expect(fixed(image(p))).toEqual(general(image(p)));
      fc.assert(
        fc.property(row, (p) => {
          const tg = image(p);
          const got = fixed(tg);
          expect(got).toEqual(general(tg));
          expect(Object.keys(got as object)).toEqual(put.request.fieldNames);
        }),
        { numRuns: 300 },
      );
    },
  );

  it('declines other encodings of the same message, other field orders, other lengths and a bad bool byte', () => {
    const p = { a: 1, b: 2, c: 3, d: 4, e: true, f: 5, g: 6, h: 7, k: 8 };
    // The general encoder writes the shortest ints: a valid payload, not the image.
    const short = target();
    new SlotWriter().write(
      short,
      0,
      { method: put.id, flags: 0, corr: 0, keyLo: 1, keyHi: 0, sender: HOST_SENDER, grain: 0 },
      put.request,
      p,
      'Kinds',
      'put',
    );
    expect(fixed(short)).toBeUndefined();
    expect(general(short)).toEqual(p);
    const tg = image(p);
    const len = tg.dv.getUint32(SLOT.length, true);
    expect(fixedReader(put)!(tg.u8, tg.dv, SLOT_HEADER_SIZE, len - 1)).toBeUndefined();
    expect(fixedReader(put)!(tg.u8, tg.dv, SLOT_HEADER_SIZE, len + 1)).toBeUndefined();
    // A field name changed ("a" -> "z"): declined, and the general decoder names it.
    const renamed = image(p);
    renamed.u8[SLOT_HEADER_SIZE + 2] = 'z'.charCodeAt(0);
    expect(fixed(renamed)).toBeUndefined();
    expect(() => general(renamed)).toThrow(/unknown field "z"/);
    // The bool's tag byte neither 0xc2 nor 0xc3.
    const badBool = image(p);
    const at =
      SLOT_HEADER_SIZE +
      [...badBool.u8.subarray(SLOT_HEADER_SIZE)].findIndex(
        (b, i, a) => a[i - 1] === 'e'.charCodeAt(0) && a[i - 2] === 0xa1 && b === 0xc3,
      );
    badBool.u8[at] = 0xc1;
    expect(fixed(badBool)).toBeUndefined();
    expect(() => general(badBool)).toThrow();
    // A type tag changed (f64 -> f32 tag): declined.
    const tag = image(p);
    tag.u8[SLOT_HEADER_SIZE + 3] = 0xca;
    expect(fixed(tag)).toBeUndefined();
  });

  it('reads an empty request; none for a request with a non-scalar field', () => {
    const none = def.methodByName.get('none')!;
    const u8 = new Uint8Array([0x80]);
    expect(fixedReader(none)!(u8, new DataView(u8.buffer), 0, 1)).toEqual({});
    expect(fixedReader(def.methodByName.get('vec')!)).toBeNull();
  });
});
