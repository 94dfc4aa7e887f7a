import { z } from 'zod';

/**
 * THE table of scalar kinds. What depends on a scalar's kind in core (layout, validation, msgpack
 * encoding and decoding, state views, tellMany's rows and columns) reads its row here; the mapped type
 * makes a missing row a compile error. The other per-kind tables (view.ts FIELD, and codegen's C type,
 * device codec and arithmetic tables) are listed in docs/architecture.md, "Where to add things".
 */

/** The typed array of each numeric kind: message arrays decode to it, state arrays are views of it. */
export interface TypedArrays {
  f32: Float32Array;
  f64: Float64Array;
  i8: Int8Array;
  u8: Uint8Array;
  i16: Int16Array;
  u16: Uint16Array;
  i32: Int32Array;
  u32: Uint32Array;
}
export type NumericKind = keyof TypedArrays;
export type ScalarKind = NumericKind | 'bool';
export type TypedArrayOf<K extends NumericKind> = TypedArrays[K];
/** The JS value of a scalar of kind K. */
export type ScalarValue<K extends ScalarKind> = K extends 'bool' ? boolean : number;

export interface TypedArrayCtorOf<K extends NumericKind> {
  new (length: number): TypedArrays[K];
  new (buffer: ArrayBufferLike, byteOffset?: number, length?: number): TypedArrays[K];
  readonly BYTES_PER_ELEMENT: number;
  readonly name: string;
  from(xs: ArrayLike<number>): TypedArrays[K];
}

/** What values a kind holds: IEEE floats of a width, integers of a closed range, or booleans. */
export type Repr =
  | { readonly class: 'float'; readonly bits: 32 | 64 }
  | { readonly class: 'int'; readonly min: number; readonly max: number }
  | { readonly class: 'bool' };

/** Writes row `i` of a column into the slot at `slot`. */
export type RowPatch = (dv: DataView, slot: number, i: number) => void;

export interface KindSpec<K extends ScalarKind> {
  /** Bytes in the binary layout (C natural size). */
  readonly size: 1 | 2 | 4 | 8;
  /** Alignment in the binary layout (C natural alignment). */
  readonly align: 1 | 2 | 4 | 8;
  readonly repr: Repr;
  /** Validates a user value of this kind (a typed error with its path when it fails). */
  readonly zod: z.ZodType<ScalarValue<K>>;
  /** Arrays of a numeric kind are this typed array; arrays of bool are boolean[] (Uint8Array views in state). */
  readonly array: K extends NumericKind ? TypedArrayCtorOf<K> : undefined;
  /**
   * Little-endian access at a byte offset: state fields and `bin` array elements. A store converts as the
   * typed array does: f32 rounds to nearest, integers wrap (ToInt8/ToUint8/…/ToUint32), bool is 0/1.
   */
  readonly get: (dv: DataView, at: number) => ScalarValue<K>;
  readonly set: (dv: DataView, at: number, v: ScalarValue<K>) => void;
  readonly msgpack: {
    /**
     * A scalar on the wire: float32/float64 as declared, integers in the smallest int format, bool.
     * (Arrays of a kind with a typed array are `bin` of its little-endian elements; of bool, msgpack arrays.)
     */
    readonly scalar: 'float32' | 'float64' | 'int' | 'bool';
    /**
     * A fixed-width encoding (tellMany's row template): type byte `tag`, `width` bytes in all. `patch`
     * makes the writer of a column's row `i` into a slot whose value's tag is at `slot + at` (the bytes
     * after the tag; bool rewrites the tag). One closure per kind, so each row write is monomorphic.
     */
    readonly fixed: {
      readonly tag: number;
      readonly width: number;
      readonly patch: (at: number, col: ArrayLike<unknown>) => RowPatch;
      /**
       * The same write for generated code (row-codegen.ts): the big-endian DataView setter of the value
       * after the tag, or 'tag' where the value is the tag byte itself (bool: 0xc3 true, 0xc2 false).
       */
      readonly op:
        | 'setFloat32'
        | 'setFloat64'
        | 'setInt8'
        | 'setUint8'
        | 'setInt16'
        | 'setUint16'
        | 'setInt32'
        | 'setUint32'
        | 'tag';
    };
  };
}

/** "an i8", "a u8": the kind named in messages. */
export function kindNoun(kind: ScalarKind): string {
  return `${/^[if]/.test(kind) ? 'an' : 'a'} ${kind}`;
}

function intZod(kind: ScalarKind, min: number, max: number): z.ZodType<number> {
  const what = `${kindNoun(kind)} is an integer in ${min}..${max}`;
  return z
    .number()
    .int({ message: `expected an integer: ${what}` })
    .min(min, { message: `too small: ${what}` })
    .max(max, { message: `too large: ${what}` });
}

const int = (min: number, max: number): Repr => ({ class: 'int', min, max });

export const KINDS: { readonly [K in ScalarKind]: KindSpec<K> } = {
  f32: {
    size: 4,
    align: 4,
    repr: { class: 'float', bits: 32 },
    zod: z.number(),
    array: Float32Array,
    get: (dv, at) => dv.getFloat32(at, true),
    set: (dv, at, v) => dv.setFloat32(at, v, true),
    msgpack: {
      scalar: 'float32',
      fixed: {
        op: 'setFloat32',
        tag: 0xca,
        width: 5,
        patch: (at, col) => (dv, slot, i) => dv.setFloat32(slot + at + 1, col[i] as number),
      },
    },
  },
  f64: {
    size: 8,
    align: 8,
    repr: { class: 'float', bits: 64 },
    zod: z.number(),
    array: Float64Array,
    get: (dv, at) => dv.getFloat64(at, true),
    set: (dv, at, v) => dv.setFloat64(at, v, true),
    msgpack: {
      scalar: 'float64',
      fixed: {
        op: 'setFloat64',
        tag: 0xcb,
        width: 9,
        patch: (at, col) => (dv, slot, i) => dv.setFloat64(slot + at + 1, col[i] as number),
      },
    },
  },
  i8: {
    size: 1,
    align: 1,
    repr: int(-0x80, 0x7f),
    zod: intZod('i8', -0x80, 0x7f),
    array: Int8Array,
    get: (dv, at) => dv.getInt8(at),
    set: (dv, at, v) => dv.setInt8(at, v),
    msgpack: {
      scalar: 'int',
      fixed: {
        op: 'setInt8',
        tag: 0xd0,
        width: 2,
        patch: (at, col) => (dv, slot, i) => dv.setInt8(slot + at + 1, col[i] as number),
      },
    },
  },
  u8: {
    size: 1,
    align: 1,
    repr: int(0, 0xff),
    zod: intZod('u8', 0, 0xff),
    array: Uint8Array,
    get: (dv, at) => dv.getUint8(at),
    set: (dv, at, v) => dv.setUint8(at, v),
    msgpack: {
      scalar: 'int',
      fixed: {
        op: 'setUint8',
        tag: 0xcc,
        width: 2,
        patch: (at, col) => (dv, slot, i) => dv.setUint8(slot + at + 1, col[i] as number),
      },
    },
  },
  i16: {
    size: 2,
    align: 2,
    repr: int(-0x8000, 0x7fff),
    zod: intZod('i16', -0x8000, 0x7fff),
    array: Int16Array,
    get: (dv, at) => dv.getInt16(at, true),
    set: (dv, at, v) => dv.setInt16(at, v, true),
    msgpack: {
      scalar: 'int',
      fixed: {
        op: 'setInt16',
        tag: 0xd1,
        width: 3,
        patch: (at, col) => (dv, slot, i) => dv.setInt16(slot + at + 1, col[i] as number),
      },
    },
  },
  u16: {
    size: 2,
    align: 2,
    repr: int(0, 0xffff),
    zod: intZod('u16', 0, 0xffff),
    array: Uint16Array,
    get: (dv, at) => dv.getUint16(at, true),
    set: (dv, at, v) => dv.setUint16(at, v, true),
    msgpack: {
      scalar: 'int',
      fixed: {
        op: 'setUint16',
        tag: 0xcd,
        width: 3,
        patch: (at, col) => (dv, slot, i) => dv.setUint16(slot + at + 1, col[i] as number),
      },
    },
  },
  i32: {
    size: 4,
    align: 4,
    repr: int(-0x80000000, 0x7fffffff),
    zod: intZod('i32', -0x80000000, 0x7fffffff),
    array: Int32Array,
    get: (dv, at) => dv.getInt32(at, true),
    set: (dv, at, v) => dv.setInt32(at, v, true),
    msgpack: {
      scalar: 'int',
      fixed: {
        op: 'setInt32',
        tag: 0xd2,
        width: 5,
        patch: (at, col) => (dv, slot, i) => dv.setInt32(slot + at + 1, col[i] as number),
      },
    },
  },
  u32: {
    size: 4,
    align: 4,
    repr: int(0, 0xffffffff),
    zod: intZod('u32', 0, 0xffffffff),
    array: Uint32Array,
    get: (dv, at) => dv.getUint32(at, true),
    set: (dv, at, v) => dv.setUint32(at, v, true),
    msgpack: {
      scalar: 'int',
      fixed: {
        op: 'setUint32',
        tag: 0xce,
        width: 5,
        patch: (at, col) => (dv, slot, i) => dv.setUint32(slot + at + 1, col[i] as number),
      },
    },
  },
  bool: {
    size: 1,
    align: 1,
    repr: { class: 'bool' },
    zod: z.boolean(),
    array: undefined,
    get: (dv, at) => dv.getUint8(at) !== 0,
    set: (dv, at, v) => dv.setUint8(at, v ? 1 : 0),
    msgpack: {
      scalar: 'bool',
      fixed: {
        op: 'tag',
        tag: 0xc2,
        width: 1,
        patch: (at, col) => (dv, slot, i) => dv.setUint8(slot + at, col[i] ? 0xc3 : 0xc2),
      },
    },
  },
};

/** Every scalar kind, in the table's order. */
export const SCALAR_KINDS = Object.keys(KINDS) as ScalarKind[];

/** Numeric kinds are the ones with a typed array. */
export function isNumericKind(k: ScalarKind): k is NumericKind {
  return KINDS[k].array !== undefined;
}
export const NUMERIC_KINDS = SCALAR_KINDS.filter(isNumericKind);

/** The row of `kind`, typed loosely for code that handles every kind alike. */
export function kindSpec(kind: ScalarKind): KindSpec<ScalarKind> {
  return KINDS[kind] as unknown as KindSpec<ScalarKind>;
}

/** The integer range of an integer kind, or undefined for floats and bool. */
export function intRange(kind: ScalarKind): { readonly min: number; readonly max: number } | undefined {
  const r = KINDS[kind].repr;
  return r.class === 'int' ? r : undefined;
}

/** The check of a value the encoder accepts for `kind`: floats any number, integers in range, bool a boolean. */
export function scalarGuard(kind: ScalarKind): (v: unknown) => boolean {
  const r = KINDS[kind].repr;
  switch (r.class) {
    case 'float':
      return (v) => typeof v === 'number';
    case 'int': {
      const { min, max } = r;
      return (v) => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
    }
    case 'bool':
      return (v) => typeof v === 'boolean';
    default: {
      const never: never = r;
      return never;
    }
  }
}
