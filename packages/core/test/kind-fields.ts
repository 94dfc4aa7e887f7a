/**
 * The request of every numeric and bool field kind, and arbitraries of valid values for each field: the
 * shared fixture of the row writer, generated row loop, fixed-image writer, fixed-image reader and column
 * image tests.
 */
import fc from 'fast-check';
import { Grain, t, type GrainDef } from '../src/entries/internal.ts';

/** One field of each kind: f64, f32, i32, u32, bool, i8, u8, i16, u16. */
export const KIND_FIELDS = t.struct({
  a: t.f64,
  b: t.f32,
  c: t.i32,
  d: t.u32,
  e: t.bool,
  f: t.i8,
  g: t.u8,
  h: t.i16,
  k: t.u16,
});

/** Arbitraries of KIND_FIELDS' values; `finite` leaves NaN and ±Infinity out of the floats. */
export function kindValues(finite: boolean) {
  const float = finite ? { noNaN: true, noDefaultInfinity: true } : {};
  return {
    a: fc.double(float),
    b: fc.float(float).map(Math.fround),
    c: fc.integer({ min: -0x80000000, max: 0x7fffffff }),
    d: fc.integer({ min: 0, max: 0xffffffff }),
    e: fc.boolean(),
    f: fc.integer({ min: -0x80, max: 0x7f }),
    g: fc.integer({ min: 0, max: 0xff }),
    h: fc.integer({ min: -0x8000, max: 0x7fff }),
    k: fc.integer({ min: 0, max: 0xffff }),
  };
}

/** A grain with KIND_FIELDS as `put`, and `nested`, whose request is not all scalars. */
export class Mixed extends Grain({
  name: 'Mixed',
  module: import.meta.url,
  state: t.struct({ n: t.u32 }),
  methods: {
    put: { request: KIND_FIELDS },
    nested: { request: t.struct({ p: t.struct({ x: t.f64 }) }) },
  },
}) {
  put(): void {}
  nested(): void {}
}
export const MIXED = Mixed.grain as GrainDef;
