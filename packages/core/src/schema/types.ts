import { z } from 'zod';
import { SchemaDefinitionError } from '../errors.ts';
import {
  KINDS,
  isNumericKind,
  type NumericKind,
  type ScalarKind,
  type ScalarValue,
  type TypedArrayOf,
} from './kinds.ts';

export type { NumericKind, ScalarKind, ScalarValue, TypedArrayOf } from './kinds.ts';

/**
 * Schemas are plain values: the code generator walks them, the layout function sizes them, and their
 * `zod` member validates user payloads. The TS type rides along as a phantom parameter.
 */
interface SchemaBase<Out, In> {
  readonly zod: z.ZodType<Out, In>;
  /** Phantom members for type inference only; never read at run time. */
  readonly _out?: Out;
  readonly _in?: In;
}

export interface ScalarSchema<K extends ScalarKind = ScalarKind> extends SchemaBase<ScalarValue<K>, ScalarValue<K>> {
  readonly kind: 'scalar';
  readonly scalar: K;
}

/** Arrays of numbers are typed arrays in JS and msgpack `bin` on the wire (little-endian). */
type ArrayOut<E extends Schema> =
  E extends ScalarSchema<infer K> ? (K extends NumericKind ? TypedArrayOf<K> : boolean[]) : Infer<E>[];
type ArrayIn<E extends Schema> =
  E extends ScalarSchema<infer K>
    ? K extends NumericKind
      ? TypedArrayOf<K> | readonly number[]
      : readonly boolean[]
    : readonly Input<E>[];

/** Fixed-length array: exactly `length` elements. */
export interface ArraySchema<E extends Schema = Schema> extends SchemaBase<ArrayOut<E>, ArrayIn<E>> {
  readonly kind: 'array';
  readonly element: E;
  readonly length: number;
}

/** Bounded array: 0..maxLength elements; the binary layout stores a u32 length then maxLength slots. */
export interface VecSchema<E extends Schema = Schema> extends SchemaBase<ArrayOut<E>, ArrayIn<E>> {
  readonly kind: 'vec';
  readonly element: E;
  readonly maxLength: number;
}

export type Fields = Readonly<Record<string, Schema>>;

export interface StructSchema<F extends Fields = Fields>
  extends SchemaBase<{ [K in keyof F]: Infer<F[K]> }, { [K in keyof F]: Input<F[K]> }> {
  readonly kind: 'struct';
  readonly fields: F;
  /** Field names in declaration order: the order of the binary layout and of msgpack maps. */
  readonly fieldNames: readonly string[];
}

export type Schema = ScalarSchema | ArraySchema<any> | VecSchema<any> | StructSchema<any>;

export type Infer<S> = S extends { readonly _out?: infer O } ? O : never;
export type Input<S> = S extends { readonly _in?: infer I } ? I : never;

function scalar<K extends ScalarKind>(kind: K): ScalarSchema<K> {
  return Object.freeze({ kind: 'scalar', scalar: kind, zod: KINDS[kind].zod }) as ScalarSchema<K>;
}

export const f32 = scalar('f32');
export const f64 = scalar('f64');
export const i8 = scalar('i8');
export const u8 = scalar('u8');
export const i16 = scalar('i16');
export const u16 = scalar('u16');
export const i32 = scalar('i32');
export const u32 = scalar('u32');
export const bool = scalar('bool');

export function isNumericScalar(s: Schema): s is ScalarSchema<NumericKind> {
  return s.kind === 'scalar' && isNumericKind(s.scalar);
}

function arrayZod(element: Schema, min: number, max: number): z.ZodType<any, any> {
  const lengthCheck = (n: number): boolean => n >= min && n <= max;
  const lengthMsg = min === max ? `expected exactly ${max} elements` : `expected at most ${max} elements`;
  if (isNumericScalar(element)) {
    const Ctor = KINDS[element.scalar].array;
    const typed = z.custom<unknown>((v) => v instanceof Ctor, { message: `expected ${Ctor.name} or number[]` });
    return z
      .union([typed, z.array(element.zod)])
      .refine((v) => lengthCheck((v as ArrayLike<number>).length), { message: lengthMsg });
  }
  return z.array(element.zod).min(min, { message: lengthMsg }).max(max, { message: lengthMsg });
}

function checkLength(what: string, n: number): void {
  if (!Number.isInteger(n) || n < 1 || n > 1 << 24) {
    throw new SchemaDefinitionError(`${what} must be an integer in 1..16777216, got ${n}`);
  }
}

export function array<E extends Schema>(element: E, length: number): ArraySchema<E> {
  checkLength('array length', length);
  return Object.freeze({
    kind: 'array',
    element,
    length,
    zod: arrayZod(element, length, length),
  }) as unknown as ArraySchema<E>;
}

export function vec<E extends Schema>(element: E, maxLength: number): VecSchema<E> {
  checkLength('vec maxLength', maxLength);
  return Object.freeze({
    kind: 'vec',
    element,
    maxLength,
    zod: arrayZod(element, 0, maxLength),
  }) as unknown as VecSchema<E>;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function struct<F extends Fields>(fields: F): StructSchema<F> {
  const fieldNames = Object.keys(fields);
  for (const name of fieldNames) {
    // Field names become C identifiers and msgpack map keys (fixstr keeps decoding simple).
    if (!IDENT.test(name) || name.length > 31) {
      throw new SchemaDefinitionError(`field name "${name}" must be an identifier of at most 31 characters`);
    }
  }
  const shape: Record<string, z.ZodType<any, any>> = {};
  for (const name of fieldNames) shape[name] = (fields[name] as Schema).zod;
  return Object.freeze({
    kind: 'struct',
    fields,
    fieldNames,
    zod: z.strictObject(shape),
  }) as unknown as StructSchema<F>;
}

/** A short, stable description of a schema, used to compare reply types across a forward chain. */
export function describeSchema(s: Schema): string {
  switch (s.kind) {
    case 'scalar':
      return s.scalar;
    case 'array':
      return `${describeSchema(s.element)}[${s.length}]`;
    case 'vec':
      return `${describeSchema(s.element)}[..${s.maxLength}]`;
    case 'struct':
      return `{${s.fieldNames.map((n) => `${n}:${describeSchema(s.fields[n] as Schema)}`).join(',')}}`;
  }
}

/** A typed array of `kind` viewing `buffer` (no copy). */
export function typedView<K extends NumericKind>(
  kind: K,
  buffer: ArrayBufferLike,
  byteOffset: number,
  length: number,
): TypedArrayOf<K> {
  return new KINDS[kind].array(buffer, byteOffset, length) as TypedArrayOf<K>;
}
