import { layoutOf, type Layout } from './layout.ts';
import { kindSpec, type ScalarKind, type ScalarValue } from './kinds.ts';
import {
  typedView,
  isNumericScalar,
  type NumericKind,
  type Schema,
  type StructSchema,
  type TypedArrayOf,
  type ScalarSchema,
  type ArraySchema,
  type VecSchema,
} from './types.ts';

/**
 * Live views of binary state: a handler's `state.balance += 1` writes straight into the state table
 * (a SharedArrayBuffer on CPU), with the same layout and the same store conversions the GPU applies (f32
 * rounds, integer kinds wrap, see kinds.ts).
 */
export type StateView<S> =
  S extends ScalarSchema<infer K>
    ? ScalarValue<K>
    : S extends ArraySchema<infer E>
      ? ArrayView<E>
      : S extends VecSchema<infer E>
        ? { length: number; readonly items: ArrayView<E> }
        : S extends StructSchema<infer F>
          ? { -readonly [K in keyof F]: StateView<F[K]> }
          : never;

type ArrayView<E> =
  E extends ScalarSchema<infer K> ? (K extends NumericKind ? TypedArrayOf<K> : Uint8Array) : StateView<E>[];

function arrayView(element: Schema, el: Layout, count: number, buffer: ArrayBufferLike, base: number): unknown {
  if (isNumericScalar(element)) return typedView(element.scalar, buffer, base, count);
  if (element.kind === 'scalar') return new Uint8Array(buffer, base, count);
  const out: unknown[] = [];
  for (let i = 0; i < count; i++) out.push(viewAt(element, buffer, base + i * el.size));
  return out;
}

/** On a struct view's prototype: the struct schema it views (not enumerable). */
export const VIEW_SCHEMA: unique symbol = Symbol('ringgrain.viewSchema');

/** Creates the view of `schema` at `base`. Struct views define accessors on the object itself. */
export function viewAt(schema: Schema, buffer: ArrayBufferLike, base: number): unknown {
  const layout = layoutOf(schema);
  switch (schema.kind) {
    case 'scalar':
      throw new TypeError('a scalar has no view; read it through its parent struct');
    case 'array':
      return arrayView(schema.element, layout.element as Layout, schema.length, buffer, base);
    case 'vec': {
      const dv = new DataView(buffer);
      const items = arrayView(
        schema.element,
        layout.element as Layout,
        schema.maxLength,
        buffer,
        base + (layout.fields?.[1]?.offset ?? 0),
      );
      return Object.defineProperties(
        {},
        {
          length: {
            get: () => dv.getUint32(base, true),
            set: (v: number) => dv.setUint32(base, v, true),
            enumerable: true,
          },
          items: { value: items, enumerable: true },
        },
      );
    }
    case 'struct': {
      const View = structViewClass(schema);
      return new View(buffer, base);
    }
  }
}

// A view's own slots are named with a `$`, which no schema field name has (t.struct takes identifiers of
// letters, digits and `_`): a field may be named anything else (`base`, `buffer`, `dv`, `kids` included),
// and an own slot of a field's name would shadow the field's accessor. Named, not symbol-keyed, slots:
// V8 reads `this[key]` about twice as slowly in a handler's field accesses (5.8 against 10.5 ns measured
// for three field updates).
interface StructViewInstance {
  $dv: DataView;
  $buffer: ArrayBufferLike;
  $base: number;
  $kids: unknown[];
}
type StructViewClass = new (buffer: ArrayBufferLike, base: number) => StructViewInstance;
const viewClasses = new WeakMap<object, StructViewClass>();

// One class per struct schema with accessors on its prototype: views of a million actors share them.
function structViewClass(schema: StructSchema): StructViewClass {
  const hit = viewClasses.get(schema);
  if (hit) return hit;
  const layout = layoutOf(schema);
  class View implements StructViewInstance {
    $dv: DataView;
    $buffer: ArrayBufferLike;
    $base: number;
    $kids: unknown[];
    constructor(buffer: ArrayBufferLike, base: number) {
      this.$dv = new DataView(buffer);
      this.$buffer = buffer;
      this.$base = base;
      this.$kids = [];
    }
  }
  // The fields are accessors on the prototype; no field is named like a slot above.
  const props: PropertyDescriptorMap = {};
  (layout.fields ?? []).forEach((f, i) => {
    const fs = schema.fields[f.name] as Schema;
    const off = f.offset;
    if (fs.kind === 'scalar') {
      props[f.name] = { ...FIELD[fs.scalar](off), enumerable: true };
    } else {
      props[f.name] = {
        get(this: StructViewInstance) {
          return (this.$kids[i] ??= viewAt(fs, this.$buffer, this.$base + off));
        },
        enumerable: true,
      };
    }
  });
  // Which schema the view is of: the encoder then takes it as exactly the schema's fields (a handler may
  // return a state struct in a reply or a K2K payload, as the CUDA translation copies it).
  props[VIEW_SCHEMA as unknown as string] = { value: schema, enumerable: false };
  Object.defineProperties(View.prototype, props);
  viewClasses.set(schema, View);
  return View;
}

type Accessor = { get(this: StructViewInstance): unknown; set(this: StructViewInstance, v: unknown): void };

/**
 * A struct field's accessors per kind: the same conversions as KINDS' get/set, written out per kind
 * because accessors built around KINDS' functions share one call site across kinds (measured ~20%
 * slower field access in handlers).
 */
const FIELD: { readonly [K in ScalarKind]: (off: number) => Accessor } = {
  f32: (off) => ({
    get() {
      return this.$dv.getFloat32(this.$base + off, true);
    },
    set(v) {
      this.$dv.setFloat32(this.$base + off, v as number, true);
    },
  }),
  f64: (off) => ({
    get() {
      return this.$dv.getFloat64(this.$base + off, true);
    },
    set(v) {
      this.$dv.setFloat64(this.$base + off, v as number, true);
    },
  }),
  i8: (off) => ({
    get() {
      return this.$dv.getInt8(this.$base + off);
    },
    set(v) {
      this.$dv.setInt8(this.$base + off, v as number);
    },
  }),
  u8: (off) => ({
    get() {
      return this.$dv.getUint8(this.$base + off);
    },
    set(v) {
      this.$dv.setUint8(this.$base + off, v as number);
    },
  }),
  i16: (off) => ({
    get() {
      return this.$dv.getInt16(this.$base + off, true);
    },
    set(v) {
      this.$dv.setInt16(this.$base + off, v as number, true);
    },
  }),
  u16: (off) => ({
    get() {
      return this.$dv.getUint16(this.$base + off, true);
    },
    set(v) {
      this.$dv.setUint16(this.$base + off, v as number, true);
    },
  }),
  i32: (off) => ({
    get() {
      return this.$dv.getInt32(this.$base + off, true);
    },
    set(v) {
      this.$dv.setInt32(this.$base + off, v as number, true);
    },
  }),
  u32: (off) => ({
    get() {
      return this.$dv.getUint32(this.$base + off, true);
    },
    set(v) {
      this.$dv.setUint32(this.$base + off, v as number, true);
    },
  }),
  bool: (off) => ({
    get() {
      return this.$dv.getUint8(this.$base + off) !== 0;
    },
    set(v) {
      this.$dv.setUint8(this.$base + off, v ? 1 : 0);
    },
  }),
};

/** Plain JS copy of a view (for snapshots, assertions and `system.inspect`). */
export function snapshot(schema: Schema, buffer: ArrayBufferLike, base: number): unknown {
  const layout = layoutOf(schema);
  const dv = new DataView(buffer);
  switch (schema.kind) {
    case 'scalar':
      return kindSpec(schema.scalar).get(dv, base);
    case 'array':
    case 'vec': {
      const count = schema.kind === 'array' ? schema.length : dv.getUint32(base, true);
      const start = schema.kind === 'array' ? base : base + (layout.fields?.[1]?.offset ?? 0);
      const el = layout.element as Layout;
      if (isNumericScalar(schema.element))
        return typedView(schema.element.scalar, buffer.slice(start, start + count * el.size), 0, count);
      const out: unknown[] = [];
      for (let i = 0; i < count; i++) out.push(snapshot(schema.element, buffer, start + i * el.size));
      return out;
    }
    case 'struct': {
      const out: Record<string, unknown> = {};
      for (const f of layout.fields ?? [])
        out[f.name] = snapshot(schema.fields[f.name] as Schema, buffer, base + f.offset);
      return out;
    }
  }
}
