import { copyBytes } from './copy.ts';
import { DecodeError, ReplyTargetError } from '../errors.ts';
import { KINDS, intRange, kindNoun, type NumericKind, type ScalarKind } from './kinds.ts';
import { isNumericScalar, type Schema, type StructSchema } from './types.ts';

/**
 * Schema-directed msgpack decoder. It reads exactly the bytes of one slot payload, accepts every
 * standard encoding of a value (any int width, float32 or float64, bin or array for numeric arrays,
 * map keys in any order) and rejects the rest with a DecodeError naming the field: hostile bytes in a
 * ring are refused, never half-applied.
 */
export class Reader {
  u8: Uint8Array;
  dv: DataView;
  pos = 0;
  end = 0;
  /**
   * Caller-owned typed arrays for the top-level struct's numeric array fields (an ask's `into`): the
   * struct decoder takes it, and hands each field's array to that field's decoder as `target`.
   */
  into: Readonly<Record<string, unknown>> | undefined = undefined;
  target: unknown = undefined;
  constructor(u8: Uint8Array) {
    this.u8 = u8;
    this.dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  }
  reset(pos: number, end: number): this {
    this.pos = pos;
    this.end = end;
    return this;
  }
}

export type Decoder = (r: Reader, path: string) => unknown;

function fail(path: string, why: string): never {
  throw new DecodeError(`malformed payload at "${path || '(root)'}": ${why}`);
}

function take(r: Reader, n: number, path: string): number {
  const p = r.pos;
  if (p + n > r.end) fail(path, `truncated: needs ${n} more bytes at offset ${p}`);
  r.pos = p + n;
  return p;
}

/** Reads any msgpack number (int or float); returns NaN-free JS number or fails. */
function readNumber(r: Reader, path: string): number {
  const t = r.u8[take(r, 1, path)] as number;
  if (t < 0x80) return t;
  if (t >= 0xe0) return t - 0x100;
  switch (t) {
    case 0xca:
      return r.dv.getFloat32(take(r, 4, path));
    case 0xcb:
      return r.dv.getFloat64(take(r, 8, path));
    case 0xcc:
      return r.u8[take(r, 1, path)] as number;
    case 0xcd:
      return r.dv.getUint16(take(r, 2, path));
    case 0xce:
      return r.dv.getUint32(take(r, 4, path));
    case 0xcf: {
      const p = take(r, 8, path);
      return r.dv.getUint32(p) * 0x100000000 + r.dv.getUint32(p + 4);
    }
    case 0xd0:
      return r.dv.getInt8(take(r, 1, path));
    case 0xd1:
      return r.dv.getInt16(take(r, 2, path));
    case 0xd2:
      return r.dv.getInt32(take(r, 4, path));
    case 0xd3: {
      const p = take(r, 8, path);
      return r.dv.getInt32(p) * 0x100000000 + r.dv.getUint32(p + 4);
    }
    default:
      return fail(path, `expected a number, found type byte 0x${t.toString(16)}`);
  }
}

function readArrayHeader(r: Reader, path: string): number {
  const t = r.u8[take(r, 1, path)] as number;
  if ((t & 0xf0) === 0x90) return t & 0x0f;
  if (t === 0xdc) return r.dv.getUint16(take(r, 2, path));
  if (t === 0xdd) return r.dv.getUint32(take(r, 4, path));
  return fail(path, `expected an array, found type byte 0x${t.toString(16)}`);
}

/**
 * The fewest bytes any accepted encoding of a `schema` value takes (a number as a positive fixint, a
 * vec empty, a struct's keys as fixstr), so an array header's count is checked against the bytes left
 * before anything is allocated for it: 5 bytes claiming 2^24 f64 elements must not allocate 128 MiB.
 */
function minEncodedSize(schema: Schema): number {
  switch (schema.kind) {
    case 'scalar':
      return 1;
    case 'vec':
      return 1;
    case 'array':
      return Math.min(
        1 + schema.length * minEncodedSize(schema.element),
        isNumericScalar(schema.element) ? 2 + schema.length * KINDS[schema.element.scalar].size : Infinity,
      );
    case 'struct': {
      let n = 1;
      for (const name of schema.fieldNames)
        n += 1 + new TextEncoder().encode(name).length + minEncodedSize(schema.fields[name] as Schema);
      return n;
    }
  }
}

/** Fails unless the bytes left can hold `n` elements of at least `minEach` bytes each. */
function checkRoom(r: Reader, n: number, minEach: number, path: string): void {
  if (n * minEach > r.end - r.pos)
    fail(
      path,
      `truncated: an array of ${n} elements needs at least ${n * minEach} more bytes, ${r.end - r.pos} remain`,
    );
}

function scalarDecoder(kind: ScalarKind): Decoder {
  const wire = KINDS[kind].msgpack.scalar;
  switch (wire) {
    case 'float32':
      return (r, path) => Math.fround(readNumber(r, path));
    case 'float64':
      return (r, path) => readNumber(r, path);
    case 'int': {
      const range = intRange(kind);
      if (!range) throw new Error(`kinds table: ${kind} is encoded as an int but has no integer range`);
      const { min, max } = range;
      return (r, path) => {
        const v = readNumber(r, path);
        if (!Number.isInteger(v) || v < min || v > max) fail(path, `expected ${kindNoun(kind)}, got ${v}`);
        return v;
      };
    }
    case 'bool':
      return (r, path) => {
        const t = r.u8[take(r, 1, path)];
        if (t === 0xc2) return false;
        if (t === 0xc3) return true;
        return fail(path, `expected a bool, found type byte 0x${(t as number).toString(16)}`);
      };
    default: {
      const never: never = wire;
      return never;
    }
  }
}

function numericArrayDecoder(kind: NumericKind, min: number, max: number): Decoder {
  const Ctor = KINDS[kind].array;
  const bytes = KINDS[kind].size;
  const el = scalarDecoder(kind);
  return (r, path) => {
    const t = r.u8[r.pos];
    let n: number;
    if (t === 0xc4 || t === 0xc5 || t === 0xc6) {
      r.pos++;
      const len =
        t === 0xc4
          ? (r.u8[take(r, 1, path)] as number)
          : t === 0xc5
            ? r.dv.getUint16(take(r, 2, path))
            : r.dv.getUint32(take(r, 4, path));
      if (len % bytes !== 0) fail(path, `bin of ${len} bytes is not a whole number of ${kind} elements`);
      n = len / bytes;
      if (n < min || n > max) fail(path, lengthWhy(n, min, max));
      const p = take(r, len, path);
      const out: NumArray = intoTarget(r, Ctor, n, path) ?? new Ctor(n);
      // Copy rather than view: the slot is reused, and its offset need not be aligned.
      copyBytes(new Uint8Array(out.buffer, out.byteOffset, len), 0, r.u8, p, len);
      return out;
    }
    n = readArrayHeader(r, path);
    if (n < min || n > max) fail(path, lengthWhy(n, min, max));
    checkRoom(r, n, 1, path);
    const out: NumArray = intoTarget(r, Ctor, n, path) ?? new Ctor(n);
    for (let i = 0; i < n; i++) out[i] = el(r, path) as number;
    return out;
  };
}

/** What intoTarget needs of a typed array. */
interface NumArray {
  readonly length: number;
  [i: number]: number;
  readonly buffer: ArrayBufferLike;
  readonly byteOffset: number;
  subarray(begin: number, end: number): NumArray;
}

/**
 * The caller's array for this field (Reader.target), as a view of its first n elements; undefined when
 * none was given. Its kind was checked when the ask was sent; one too short fails the reply.
 */
function intoTarget(
  r: Reader,
  Ctor: abstract new (n: number) => NumArray,
  n: number,
  path: string,
): NumArray | undefined {
  const t = r.target;
  if (t === undefined) return undefined;
  r.target = undefined;
  if (!(t instanceof Ctor)) throw new ReplyTargetError(path, `into.${path} is not a ${Ctor.name}`);
  if (t.length < n)
    throw new ReplyTargetError(path, `the reply's ${path} has ${n} elements, into.${path} holds ${t.length}`);
  return t.length === n ? t : t.subarray(0, n);
}

function lengthWhy(n: number, min: number, max: number): string {
  return min === max ? `expected ${max} elements, got ${n}` : `expected at most ${max} elements, got ${n}`;
}

/** Where a struct's fields go as they are decoded: an object, or row `row` of columns. */
type FieldSink<T> = (target: T, idx: number, name: string, value: unknown, row: number) => void;

/**
 * The struct map reader both sinks share: exact field count, keys in any order, no duplicates, no
 * unknown or missing field; each value decoded (and checked) by its field's decoder.
 */
function structFields<T>(
  s: StructSchema,
  put: FieldSink<T>,
): (r: Reader, path: string, target: T, row: number) => void {
  const names = s.fieldNames;
  const decs = names.map((n) => compileDecoder(s.fields[n] as Schema));
  const keyBytes = names.map((n) => new TextEncoder().encode(n));
  const count = names.length;
  return (r, path, target, row) => {
    const into = r.into;
    r.into = undefined;
    const t = r.u8[take(r, 1, path)] as number;
    let n: number;
    if ((t & 0xf0) === 0x80) n = t & 0x0f;
    else if (t === 0xde) n = r.dv.getUint16(take(r, 2, path));
    else if (t === 0xdf) n = r.dv.getUint32(take(r, 4, path));
    else return fail(path, `expected a map, found type byte 0x${t.toString(16)}`);
    if (n !== count) fail(path, `expected ${count} fields (${names.join(', ')}), got ${n}`);
    let seen = 0;
    const seenMany = count > 31 ? new Uint8Array(count) : undefined;
    for (let i = 0; i < n; i++) {
      const kt = r.u8[take(r, 1, path)] as number;
      let klen: number;
      if ((kt & 0xe0) === 0xa0) klen = kt & 0x1f;
      else if (kt === 0xd9) klen = r.u8[take(r, 1, path)] as number;
      else return fail(path, `expected a string key, found type byte 0x${kt.toString(16)}`);
      const kp = take(r, klen, path);
      // Encoders write fields in schema order: try field i first.
      let idx = -1;
      for (let q = 0; q < count; q++) {
        const j = (i + q) % count;
        const kb = keyBytes[j] as Uint8Array;
        if (kb.length !== klen) continue;
        let same = true;
        for (let b = 0; b < klen; b++) {
          if (kb[b] !== r.u8[kp + b]) {
            same = false;
            break;
          }
        }
        if (same) {
          idx = j;
          break;
        }
      }
      if (idx < 0) fail(path, `unknown field "${new TextDecoder().decode(r.u8.subarray(kp, kp + klen))}"`);
      if (seenMany) {
        if (seenMany[idx]) fail(path, `field "${names[idx]}" appears twice`);
        seenMany[idx] = 1;
      } else {
        if (seen & (1 << idx)) fail(path, `field "${names[idx]}" appears twice`);
        seen |= 1 << idx;
      }
      const name = names[idx] as string;
      if (into !== undefined) r.target = into[name];
      put(target, idx, name, (decs[idx] as Decoder)(r, path ? `${path}.${name}` : name), row);
      r.target = undefined;
    }
    // n === count and no field twice: every field was there.
  };
}

function structDecoder(s: StructSchema): Decoder {
  const fields = structFields<Record<string, unknown>>(s, (o, _idx, name, v) => {
    o[name] = v;
  });
  return (r, path) => {
    const out: Record<string, unknown> = {};
    fields(r, path, out, 0);
    return out;
  };
}

/** Writable columns, one per struct field in schema order (askMany's replies). */
export type Columns = Array<{ [row: number]: unknown }>;

const columnDecoders = new WeakMap<StructSchema, (r: Reader, row: number, cols: Columns) => void>();

/**
 * Decodes exactly [pos, end) as one struct into row `row` of `cols` (cols[i]: field i's column), with
 * the same checks and errors as compileDecoder: no object per row where the rows land in columns.
 */
export function decodeIntoColumns(s: StructSchema, r: Reader, row: number, cols: Columns): void {
  let dec = columnDecoders.get(s);
  if (!dec) {
    const fields = structFields<Columns>(s, (c, idx, _name, v, at) => {
      (c[idx] as { [row: number]: unknown })[at] = v;
    });
    dec = (rd, at, c) => fields(rd, '', c, at);
    columnDecoders.set(s, dec);
  }
  dec(r, row, cols);
  if (r.pos !== r.end) fail('', `${r.end - r.pos} trailing bytes after the value`);
}

const compiled = new WeakMap<object, Decoder>();

export function compileDecoder(schema: Schema): Decoder {
  const hit = compiled.get(schema);
  if (hit) return hit;
  let dec: Decoder;
  switch (schema.kind) {
    case 'scalar':
      dec = scalarDecoder(schema.scalar);
      break;
    case 'array':
    case 'vec': {
      const min = schema.kind === 'array' ? schema.length : 0;
      const max = schema.kind === 'array' ? schema.length : schema.maxLength;
      if (isNumericScalar(schema.element)) {
        dec = numericArrayDecoder(schema.element.scalar, min, max);
      } else {
        const el = compileDecoder(schema.element);
        const minEach = minEncodedSize(schema.element);
        dec = (r, path) => {
          const n = readArrayHeader(r, path);
          if (n < min || n > max) fail(path, lengthWhy(n, min, max));
          checkRoom(r, n, minEach, path);
          const out = new Array<unknown>(n);
          for (let i = 0; i < n; i++) out[i] = el(r, `${path}[${i}]`);
          return out;
        };
      }
      break;
    }
    case 'struct':
      dec = structDecoder(schema);
      break;
  }
  compiled.set(schema, dec);
  return dec;
}

/** Decodes exactly [pos, end): trailing bytes are malformed input too. */
export function decodeExact(schema: Schema, r: Reader): unknown {
  const v = compileDecoder(schema)(r, '');
  if (r.pos !== r.end) fail('', `${r.end - r.pos} trailing bytes after the value`);
  return v;
}
