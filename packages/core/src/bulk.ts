/**
 * Column validation for system.tellMany: N messages given as columns (a key column and one column per
 * request field), each column checked once for kind, range and length before anything is sent, so a bad
 * column fails the whole call with a typed error naming the column and row, and nothing is half sent.
 */
import { SchemaValidationError, showValue } from './errors.ts';
import type { MethodDef } from './grain.ts';
import type { Schema } from './schema/index.ts';
import { KINDS, NUMERIC_KINDS, isNumericKind, kindNoun, type NumericKind } from './schema/kinds.ts';

/** A column of numbers: a typed array or a plain array. */
export type NumberColumn =
  | Float64Array
  | Float32Array
  | Int32Array
  | Uint32Array
  | Int16Array
  | Uint16Array
  | Int8Array
  | Uint8Array
  | readonly number[];
/** Columns for one method: `key` plus one column per request field (numeric fields as number columns). */
export type Columns<Req, Key> = { readonly key: Key extends string ? readonly string[] : NumberColumn } & {
  readonly [F in keyof Req]: Req[F] extends number ? NumberColumn : readonly Req[F][];
};

/**
 * askMany's replies: one column per reply field, numeric fields as Float64Array (every integer kind and f32 is exact
 * there).
 */
export type ReplyColumns<Rep> = { readonly [F in keyof Rep]: Rep[F] extends number ? Float64Array : Rep[F][] };

const F32_MAX = 3.4028234663852886e38;

function numberOk(kind: NumericKind, v: unknown): boolean {
  if (typeof v !== 'number' || !Number.isFinite(v)) return false;
  const r = KINDS[kind].repr;
  switch (r.class) {
    case 'int':
      return Number.isInteger(v) && v >= r.min && v <= r.max;
    case 'float':
      return r.bits === 64 || Math.abs(v) <= F32_MAX;
    case 'bool':
      return false;
    default: {
      const never: never = r;
      return never;
    }
  }
}

/** The numeric kind whose typed array `col` is, if it is one. */
function columnKind(col: unknown): NumericKind | undefined {
  for (const k of NUMERIC_KINDS) if (col instanceof KINDS[k].array) return k;
  return undefined;
}

/**
 * A typed array whose element type cannot hold a bad value of `kind` (an Int32Array for i32, a
 * Uint16Array for u32 or f64, …): such a column needs no per-row check. Float arrays still do (NaN, ∞).
 */
function alwaysValid(kind: NumericKind, col: unknown): boolean {
  const from = columnKind(col);
  if (from === undefined) return false;
  const want = KINDS[kind].repr;
  const have = KINDS[from].repr;
  if (have.class === 'int')
    return want.class === 'float' || (want.class === 'int' && have.min >= want.min && have.max <= want.max);
  // Float elements: a float column of at most the field's width, if every element is finite.
  return (
    have.class === 'float' &&
    want.class === 'float' &&
    have.bits <= want.bits &&
    allFinite(col as Float32Array | Float64Array)
  );
}

function allFinite(a: Float32Array | Float64Array): boolean {
  for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i]!)) return false;
  return true;
}

/** Integer typed arrays hold only safe integers: a key column of one needs no per-row check. */
function integerArray(col: unknown): boolean {
  const k = columnKind(col);
  return k !== undefined && KINDS[k].repr.class === 'int';
}

/** Checks every column; returns the row count. Throws SchemaValidationError naming column and row. */
export function validateColumns(
  where: string,
  method: MethodDef,
  stringKeys: boolean,
  columns: Record<string, unknown>,
  stored = false,
): number {
  const req = method.request;
  const key = columns['key'] as ArrayLike<unknown> | undefined;
  if (!key || typeof key.length !== 'number')
    throw new SchemaValidationError(where, ['key'], 'tellMany needs a key column (an array of keys, one per message)');
  const n = key.length;
  for (const name of Object.keys(columns)) {
    if (name !== 'key' && !(name in req.fields))
      throw new SchemaValidationError(
        where,
        [name],
        `no field "${name}" in the request schema (fields: ${req.fieldNames.join(', ') || 'none'})`,
      );
  }
  for (let i = stringKeys || !integerArray(key) ? 0 : n; i < n; i++) {
    const k = key[i];
    // The same keys as a ref takes (system.ts checkKey): '' too, unless the class has storage.
    const ok = stringKeys
      ? typeof k === 'string' && (k.length > 0 || !stored) && k.isWellFormed()
      : typeof k === 'number' && Number.isSafeInteger(k);
    if (!ok)
      throw new SchemaValidationError(
        where,
        ['key', i],
        `row ${i}: ${showValue(k)} is not ` +
          `a ${
            stringKeys
              ? stored
                ? 'non-empty well-formed string (the class has storage)'
                : 'well-formed string (no lone surrogate)'
              : 'safe integer'
          } key`,
      );
  }
  for (const name of req.fieldNames) {
    const col = columns[name] as ArrayLike<unknown> | undefined;
    if (!col || typeof col.length !== 'number')
      throw new SchemaValidationError(where, [name], `missing column "${name}" (one value per message)`);
    if (col.length !== n)
      throw new SchemaValidationError(where, [name], `column "${name}" has ${col.length} rows, the key column ${n}`);
    const field = req.fields[name] as Schema;
    if (field.kind === 'scalar' && isNumericKind(field.scalar)) {
      const kind = field.scalar;
      if (alwaysValid(kind, col)) continue;
      for (let i = 0; i < n; i++)
        if (!numberOk(kind, col[i]))
          throw new SchemaValidationError(where, [name, i], `row ${i}: ${String(col[i])} is not ${kindNoun(kind)}`);
    } else {
      for (let i = 0; i < n; i++) {
        const r = field.zod.safeParse(col[i]);
        if (!r.success)
          throw new SchemaValidationError(
            where,
            [name, i, ...(r.error.issues[0]?.path ?? [])],
            `row ${i}: ${r.error.issues[0]?.message ?? 'invalid'}`,
          );
      }
    }
  }
  return n;
}
