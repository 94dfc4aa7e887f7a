import { copyBytes } from './copy.ts';
import { KINDS, intRange, kindSpec, scalarGuard, type NumericKind, type ScalarKind } from './kinds.ts';
import { describeSchema, isNumericScalar, type Schema, type StructSchema } from './types.ts';
import { VIEW_SCHEMA } from './view.ts';

/**
 * Schema-directed msgpack encoder writing straight into a ring slot: floats as the schema says
 * (f32 → float32, f64 → float64), integers in the smallest standard int format, numeric arrays as
 * little-endian `bin`, structs as maps keyed by field name in declaration order. Only types from the
 * msgpack spec: no extensions, no records. Any msgpack library can decode the result.
 */
export class Writer {
  u8: Uint8Array;
  dv: DataView;
  pos = 0;
  end = 0;
  constructor(u8: Uint8Array) {
    this.u8 = u8;
    this.dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  }
  /** Point the writer at [pos, end) of its buffer. */
  reset(pos: number, end: number): this {
    this.pos = pos;
    this.end = end;
    return this;
  }
}

/** Thrown (as a sentinel, never to users) when the value does not fit or does not match. */
export const OVERFLOW = Symbol('ringgrain.overflow');
export const MISMATCH = Symbol('ringgrain.mismatch');

export type Encoder = (v: unknown, w: Writer) => void;

function need(w: Writer, n: number): number {
  const p = w.pos;
  if (p + n > w.end) throw OVERFLOW;
  w.pos = p + n;
  return p;
}

function writeInt(w: Writer, v: number): void {
  if (v >= 0) {
    if (v < 0x80) w.u8[need(w, 1)] = v;
    else if (v < 0x100) {
      const p = need(w, 2);
      w.u8[p] = 0xcc;
      w.u8[p + 1] = v;
    } else if (v < 0x10000) {
      const p = need(w, 3);
      w.u8[p] = 0xcd;
      w.dv.setUint16(p + 1, v);
    } else {
      const p = need(w, 5);
      w.u8[p] = 0xce;
      w.dv.setUint32(p + 1, v);
    }
  } else if (v >= -32) {
    w.u8[need(w, 1)] = v & 0xff;
  } else if (v >= -128) {
    const p = need(w, 2);
    w.u8[p] = 0xd0;
    w.dv.setInt8(p + 1, v);
  } else if (v >= -32768) {
    const p = need(w, 3);
    w.u8[p] = 0xd1;
    w.dv.setInt16(p + 1, v);
  } else {
    const p = need(w, 5);
    w.u8[p] = 0xd2;
    w.dv.setInt32(p + 1, v);
  }
}

function writeArrayHeader(w: Writer, n: number): void {
  if (n < 16) w.u8[need(w, 1)] = 0x90 | n;
  else if (n < 0x10000) {
    const p = need(w, 3);
    w.u8[p] = 0xdc;
    w.dv.setUint16(p + 1, n);
  } else {
    const p = need(w, 5);
    w.u8[p] = 0xdd;
    w.dv.setUint32(p + 1, n);
  }
}

function writeBinHeader(w: Writer, n: number): void {
  if (n < 0x100) {
    const p = need(w, 2);
    w.u8[p] = 0xc4;
    w.u8[p + 1] = n;
  } else if (n < 0x10000) {
    const p = need(w, 3);
    w.u8[p] = 0xc5;
    w.dv.setUint16(p + 1, n);
  } else {
    const p = need(w, 5);
    w.u8[p] = 0xc6;
    w.dv.setUint32(p + 1, n);
  }
}

function scalarEncoder(kind: ScalarKind): Encoder {
  const wire = KINDS[kind].msgpack.scalar;
  switch (wire) {
    case 'float32':
      return (v, w) => {
        if (typeof v !== 'number') throw MISMATCH;
        const p = need(w, 5);
        w.u8[p] = 0xca;
        w.dv.setFloat32(p + 1, v);
      };
    case 'float64':
      return (v, w) => {
        if (typeof v !== 'number') throw MISMATCH;
        const p = need(w, 9);
        w.u8[p] = 0xcb;
        w.dv.setFloat64(p + 1, v);
      };
    case 'int': {
      const range = intRange(kind);
      if (!range) throw new Error(`kinds table: ${kind} is encoded as an int but has no integer range`);
      const { min, max } = range;
      return (v, w) => {
        if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw MISMATCH;
        writeInt(w, v);
      };
    }
    case 'bool':
      return (v, w) => {
        if (typeof v !== 'boolean') throw MISMATCH;
        w.u8[need(w, 1)] = v ? 0xc3 : 0xc2;
      };
    default: {
      const never: never = wire;
      return never;
    }
  }
}

/** Bytes from which copying a typed array's memory beats storing its elements one by one. */
const COPY_FROM = 64;

/** Numeric arrays as `bin` of little-endian elements (this host is little-endian, as the decoder assumes). */
function numericArrayEncoder(kind: NumericKind, min: number, max: number): Encoder {
  const spec = kindSpec(kind);
  const bytes = spec.size;
  const Ctor = KINDS[kind].array;
  const set = spec.set;
  const ok = scalarGuard(kind);
  return (v, w) => {
    const arr = v as ArrayLike<number> | null;
    if (arr === null || typeof arr !== 'object' || typeof arr.length !== 'number') throw MISMATCH;
    const n = arr.length;
    if (n < min || n > max) throw MISMATCH;
    writeBinHeader(w, n * bytes);
    const p = need(w, n * bytes);
    const dv = w.dv;
    // A typed array of the kind holds only valid elements: no per-element check.
    if (arr instanceof Ctor) {
      if (n * bytes >= COPY_FROM)
        copyBytes(w.u8, p, new Uint8Array(arr.buffer, arr.byteOffset, n * bytes), 0, n * bytes);
      else for (let i = 0; i < n; i++) set(dv, p + i * bytes, arr[i] as number);
      return;
    }
    for (let i = 0; i < n; i++) {
      const x = arr[i];
      if (!ok(x)) throw MISMATCH;
      set(dv, p + i * bytes, x as number);
    }
  };
}

/** A struct field name as msgpack fixstr bytes (field names are ≤ 31 bytes by construction). */
export function keyBytes(name: string): Uint8Array {
  const bytes = new TextEncoder().encode(name);
  const out = new Uint8Array(bytes.length + 1);
  out[0] = 0xa0 | bytes.length; // fixstr: field names are ≤ 31 bytes by construction
  out.set(bytes, 1);
  return out;
}

/** describeSchema per struct schema, computed once. */
const descriptions = new WeakMap<object, string>();
function descriptionOf(s: StructSchema): string {
  let d = descriptions.get(s);
  if (d === undefined) descriptions.set(s, (d = describeSchema(s)));
  return d;
}

/**
 * Whether a live state view of `tag` is a value of `s`: the same schema, or one declared the same way (a reply
 * field written `t.struct({ x: t.f32 })` again for a state field declared so). The code generator accepts
 * those by the same test (describeSchema), so both backends take the view.
 */
function viewOf(tag: StructSchema | undefined, s: StructSchema): boolean {
  return tag === s || (tag !== undefined && descriptionOf(tag) === descriptionOf(s));
}

function structEncoder(s: StructSchema): Encoder {
  const names = s.fieldNames;
  const keys = names.map(keyBytes);
  const encs = names.map((n) => compileEncoder(s.fields[n] as Schema));
  const count = names.length;
  return (v, w) => {
    if (v === null || typeof v !== 'object') throw MISMATCH;
    const obj = v as Record<string, unknown>;
    // A live state view of this struct has exactly its fields (its own slots are internals).
    if (!viewOf((obj as { [VIEW_SCHEMA]?: StructSchema })[VIEW_SCHEMA], s)) {
      let present = 0;
      for (const k in obj) {
        if (obj[k] !== undefined) present++;
      }
      if (present !== count) throw MISMATCH; // extra or missing keys: let zod name them
    }
    if (count < 16) w.u8[need(w, 1)] = 0x80 | count;
    else {
      const p = need(w, 3);
      w.u8[p] = 0xde;
      w.dv.setUint16(p + 1, count);
    }
    for (let i = 0; i < count; i++) {
      const key = keys[i] as Uint8Array;
      w.u8.set(key, need(w, key.length));
      (encs[i] as Encoder)(obj[names[i] as string], w);
    }
  };
}

const compiled = new WeakMap<object, Encoder>();

export function compileEncoder(schema: Schema): Encoder {
  const hit = compiled.get(schema);
  if (hit) return hit;
  let enc: Encoder;
  switch (schema.kind) {
    case 'scalar':
      enc = scalarEncoder(schema.scalar);
      break;
    case 'array':
    case 'vec': {
      const min = schema.kind === 'array' ? schema.length : 0;
      const max = schema.kind === 'array' ? schema.length : schema.maxLength;
      if (isNumericScalar(schema.element)) {
        enc = numericArrayEncoder(schema.element.scalar, min, max);
      } else {
        const el = compileEncoder(schema.element);
        const bools = schema.element.kind === 'scalar' && schema.element.scalar === 'bool';
        enc = (v, w) => {
          // A state bool array is a Uint8Array view (0 / 1, as the GPU stores it): its elements as booleans.
          if (bools && v instanceof Uint8Array) {
            if (v.length < min || v.length > max) throw MISMATCH;
            writeArrayHeader(w, v.length);
            for (let i = 0; i < v.length; i++) w.u8[need(w, 1)] = v[i] !== 0 ? 0xc3 : 0xc2;
            return;
          }
          if (!Array.isArray(v) || v.length < min || v.length > max) throw MISMATCH;
          writeArrayHeader(w, v.length);
          for (let i = 0; i < v.length; i++) el(v[i], w);
        };
      }
      break;
    }
    case 'struct':
      enc = structEncoder(schema);
      break;
  }
  compiled.set(schema, enc);
  return enc;
}

/** Bytes `value` takes when encoded; used to say how big a slot must be when it does not fit. */
export function encodedSize(schema: Schema, value: unknown): number {
  let size = 1 << 16;
  for (;;) {
    const w = new Writer(new Uint8Array(size));
    try {
      compileEncoder(schema)(value, w.reset(0, size));
      return w.pos;
    } catch (e) {
      if (e !== OVERFLOW) throw e;
      size *= 4;
    }
  }
}
