/**
 * Column validation for system.tellMany: N messages given as columns (a key column and one column per
 * request field), each column checked once for kind, range and length before anything is sent, so a bad
 * column fails the whole call with a typed error naming the column and row, and nothing is half sent.
 */
import { SchemaValidationError } from './errors.ts';
import type { MethodDef } from './grain.ts';
import type { Schema } from './schema/index.ts';

/** A column of numbers: a typed array or a plain array. */
export type NumberColumn = Float64Array | Float32Array | Int32Array | Uint32Array | Int16Array | Uint16Array | Int8Array | Uint8Array | readonly number[];
/** Columns for one method: `key` plus one column per request field (numeric fields as number columns). */
export type Columns<Req, Key> = { readonly key: Key extends string ? readonly string[] : NumberColumn } & {
  readonly [F in keyof Req]: Req[F] extends number ? NumberColumn : readonly Req[F][];
};

/** askMany's replies: one column per reply field, numeric fields as Float64Array (every i32, u32 and f32 is exact there). */
export type ReplyColumns<Rep> = { readonly [F in keyof Rep]: Rep[F] extends number ? Float64Array : Rep[F][] };

const INT_RANGE = { i32: [-0x80000000, 0x7fffffff], u32: [0, 0xffffffff] } as const;

function numberOk(kind: string, v: unknown): boolean {
  if (typeof v !== 'number' || !Number.isFinite(v)) return false;
  if (kind === 'i32' || kind === 'u32') {
    const [lo, hi] = INT_RANGE[kind];
    return Number.isInteger(v) && v >= lo && v <= hi;
  }
  if (kind === 'f32') return Math.abs(v) <= 3.4028234663852886e38;
  return true;
}

/**
 * A typed array whose element type cannot hold a bad value of `kind` (an Int32Array for i32, a
 * Uint16Array for u32 or f64, …): such a column needs no per-row check. Float arrays still do (NaN, ∞).
 */
function alwaysValid(kind: string, col: unknown): boolean {
  const small = col instanceof Int16Array || col instanceof Int8Array || col instanceof Uint16Array || col instanceof Uint8Array;
  if (kind === 'i32') return small || col instanceof Int32Array;
  if (kind === 'u32') return col instanceof Uint32Array || col instanceof Uint16Array || col instanceof Uint8Array;
  if (kind === 'f64' || kind === 'f32') return small || col instanceof Int32Array || col instanceof Uint32Array || (kind === 'f64' && col instanceof Float32Array && allFinite(col));
  return false;
}

function allFinite(a: Float32Array | Float64Array): boolean {
  for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i]!)) return false;
  return true;
}

/** Integer typed arrays hold only safe integers: a key column of one needs no per-row check. */
function integerArray(col: unknown): boolean {
  return col instanceof Int32Array || col instanceof Uint32Array || col instanceof Int16Array || col instanceof Uint16Array || col instanceof Int8Array || col instanceof Uint8Array;
}

/** Checks every column; returns the row count. Throws SchemaValidationError naming column and row. */
export function validateColumns(where: string, method: MethodDef, stringKeys: boolean, columns: Record<string, unknown>): number {
  const req = method.request;
  const key = columns['key'] as ArrayLike<unknown> | undefined;
  if (!key || typeof key.length !== 'number') throw new SchemaValidationError(where, ['key'], 'tellMany needs a key column (an array of keys, one per message)');
  const n = key.length;
  for (const name of Object.keys(columns)) {
    if (name !== 'key' && !(name in req.fields)) throw new SchemaValidationError(where, [name], `no field "${name}" in the request schema (fields: ${req.fieldNames.join(', ') || 'none'})`);
  }
  for (let i = stringKeys || !integerArray(key) ? 0 : n; i < n; i++) {
    const k = key[i];
    const ok = stringKeys ? typeof k === 'string' && k.length > 0 : typeof k === 'number' && Number.isSafeInteger(k);
    if (!ok) throw new SchemaValidationError(where, ['key', i], `row ${i}: ${JSON.stringify(k)} is not a ${stringKeys ? 'non-empty string' : 'safe integer'} key`);
  }
  for (const name of req.fieldNames) {
    const col = columns[name] as ArrayLike<unknown> | undefined;
    if (!col || typeof col.length !== 'number') throw new SchemaValidationError(where, [name], `missing column "${name}" (one value per message)`);
    if (col.length !== n) throw new SchemaValidationError(where, [name], `column "${name}" has ${col.length} rows, the key column ${n}`);
    const field = req.fields[name] as Schema;
    if (field.kind === 'scalar' && field.scalar !== 'bool') {
      if (alwaysValid(field.scalar, col)) continue;
      for (let i = 0; i < n; i++) if (!numberOk(field.scalar, col[i])) throw new SchemaValidationError(where, [name, i], `row ${i}: ${String(col[i])} is not a valid ${field.scalar}`);
    } else {
      for (let i = 0; i < n; i++) {
        const r = field.zod.safeParse(col[i]);
        if (!r.success) throw new SchemaValidationError(where, [name, i, ...(r.error.issues[0]?.path ?? [])], `row ${i}: ${r.error.issues[0]?.message ?? 'invalid'}`);
      }
    }
  }
  return n;
}
