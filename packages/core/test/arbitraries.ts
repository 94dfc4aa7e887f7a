import fc from 'fast-check';
import { KINDS, isNumericScalar, t, type ScalarKind, type Schema, type StructSchema } from '../src/entries/internal.ts';

/** Random schemas (every kind, nested) and values that conform to them, for property tests. */

const scalars = [t.f32, t.f64, t.i8, t.u8, t.i16, t.u16, t.i32, t.u32, t.bool] as const;

const ident = fc
  .tuple(
    fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz_ABCXYZ'),
    fc.string({ unit: fc.constantFrom(...'abcxyz_0129'), maxLength: 12 }),
  )
  .map(([a, b]) => a + b);

export function schemaArb(maxDepth = 3): fc.Arbitrary<Schema> {
  const { schema } = fc.letrec<{ schema: Schema; struct: Schema }>((tie) => ({
    schema: fc.oneof(
      { depthSize: 'small', withCrossShrink: true, maxDepth },
      fc.constantFrom<Schema>(...scalars),
      fc.tuple(tie('schema'), fc.integer({ min: 1, max: 6 })).map(([e, n]) => t.array(e, n) as Schema),
      fc.tuple(tie('schema'), fc.integer({ min: 1, max: 6 })).map(([e, n]) => t.vec(e, n) as Schema),
      tie('struct'),
    ),
    struct: fc
      .uniqueArray(fc.tuple(ident, tie('schema')), { selector: ([n]) => n, maxLength: 5 })
      .map((entries) => t.struct(Object.fromEntries(entries)) as Schema),
  }));
  return schema;
}

export function structArb(maxDepth = 3): fc.Arbitrary<StructSchema> {
  return fc
    .uniqueArray(fc.tuple(ident, schemaArb(maxDepth)), { selector: ([n]) => n, minLength: 1, maxLength: 6 })
    .map((entries) => t.struct(Object.fromEntries(entries)));
}

/** Values of every kind, with each integer kind's boundaries and the msgpack format boundaries drawn often. */
function scalarValue(kind: ScalarKind): fc.Arbitrary<number | boolean> {
  const r = KINDS[kind].repr;
  switch (r.class) {
    case 'float':
      return r.bits === 32 ? fc.float({ noNaN: true }) : fc.double({ noNaN: true });
    case 'int': {
      const edges = [
        r.min,
        r.max,
        0,
        -1,
        -32,
        -33,
        127,
        128,
        255,
        256,
        32767,
        32768,
        65535,
        65536,
        r.min + 1,
        r.max - 1,
      ].filter((v) => v >= r.min && v <= r.max);
      return fc.oneof(fc.integer({ min: r.min, max: r.max }), fc.constantFrom(...edges));
    }
    case 'bool':
      return fc.boolean();
  }
}

/**
 * A value conforming to `schema`, in the shape our decoder returns: numeric arrays as typed arrays,
 * f32 values exactly representable as float32.
 */
export function valueArb(schema: Schema): fc.Arbitrary<unknown> {
  switch (schema.kind) {
    case 'scalar':
      return scalarValue(schema.scalar);
    case 'array':
    case 'vec': {
      const min = schema.kind === 'array' ? schema.length : 0;
      const max = schema.kind === 'array' ? schema.length : schema.maxLength;
      const items = fc.array(valueArb(schema.element), { minLength: min, maxLength: max });
      if (isNumericScalar(schema.element)) {
        const Ctor = KINDS[schema.element.scalar].array;
        return items.map((xs) => Ctor.from(xs as number[]));
      }
      return items;
    }
    case 'struct': {
      const rec: Record<string, fc.Arbitrary<unknown>> = {};
      for (const n of schema.fieldNames) rec[n] = valueArb(schema.fields[n] as Schema);
      return fc.record(rec);
    }
  }
}

/** Converts a value to plain JS (typed arrays → number[]) for libraries that would encode them as bin/ext. */
export function toPlain(v: unknown): unknown {
  if (ArrayBuffer.isView(v)) return Array.from(v as unknown as ArrayLike<number>);
  if (Array.isArray(v)) return v.map(toPlain);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, toPlain(x)]));
  return v;
}

/**
 * What a generic msgpack decoder gives back for our bytes, brought to our decoder's shape using the
 * schema: `bin` (Uint8Array, little-endian elements) → the typed array; f32 stays a float32 value.
 */
export function fromGeneric(schema: Schema, v: unknown): unknown {
  switch (schema.kind) {
    case 'scalar':
      return v;
    case 'array':
    case 'vec':
      if (isNumericScalar(schema.element)) {
        if (!(v instanceof Uint8Array))
          throw new Error(`expected bin (Uint8Array) for a numeric array, got ${Object.prototype.toString.call(v)}`);
        const Ctor = KINDS[schema.element.scalar].array;
        const copy = v.slice();
        return new Ctor(copy.buffer, 0, copy.byteLength / Ctor.BYTES_PER_ELEMENT);
      }
      return (v as unknown[]).map((x) => fromGeneric(schema.element, x));
    case 'struct': {
      const o = v as Record<string, unknown>;
      return Object.fromEntries(Object.keys(o).map((k) => [k, fromGeneric(schema.fields[k] as Schema, o[k])]));
    }
  }
}
