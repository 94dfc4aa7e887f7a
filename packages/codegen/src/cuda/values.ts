import {
  intRange,
  isNumericKind,
  type ArraySchema,
  type GrainDef,
  type NumericKind,
  type ScalarKind,
  type Schema,
  type StructSchema,
  type VecSchema,
} from '@ringgrain/core/backend';
import type { Loc } from '../front/ast.ts';
import { CodegenError } from '../front/errors.ts';
import { ARITH, fitsIn } from './kind-arith.ts';
import { siteAt, type ParseSite } from '../front/parse.ts';

/** Where a view lives: the actor's state (a live view in JS) or the decoded message (typed arrays). */
export type Origin = 'state' | 'msg' | 'reply';

/** Static types of translated expressions. Numbers carry the C type they are held in. */
export type VT =
  | { readonly k: 'num'; readonly n: NumericKind }
  | { readonly k: 'bool' }
  | { readonly k: 'struct'; readonly s: StructSchema; readonly origin: Origin }
  | { readonly k: 'array'; readonly s: ArraySchema; readonly origin: Origin }
  | { readonly k: 'vec'; readonly s: VecSchema; readonly origin: Origin }
  /** `state.v.items`: the vec's storage, maxLength elements. */
  | { readonly k: 'items'; readonly s: VecSchema; readonly origin: Origin }
  | { readonly k: 'ctx' }
  | { readonly k: 'math' }
  | { readonly k: 'grain'; readonly def: GrainDef; readonly id: number }
  | { readonly k: 'void' };

/** A lowered expression: C text (always safe to embed: parenthesised or atomic) and its type. */
export interface Val {
  readonly c: string;
  readonly t: VT;
  /** Assignable in JS (a let local, a state/message field or element, a state vec's length). */
  readonly lv?: boolean;
  /** An integer literal's value, for folding and static bounds checks. */
  readonly lit?: number;
}

export const F64: VT = { k: 'num', n: 'f64' };
export const I32: VT = { k: 'num', n: 'i32' };
export const U32: VT = { k: 'num', n: 'u32' };
export const BOOL: VT = { k: 'bool' };

export function typeError(site: ParseSite, loc: Loc, construct: string, detail: string, hint: string): never {
  throw new CodegenError('CODEGEN_TYPE', construct, detail, siteAt(site, loc), hint);
}

export function describeVT(t: VT): string {
  switch (t.k) {
    case 'num':
      return `number (${t.n})`;
    case 'bool':
      return 'boolean';
    case 'struct':
      return `a ${t.origin} struct`;
    case 'array':
    case 'items':
      return `a ${t.origin} array`;
    case 'vec':
      return `a ${t.origin} vec`;
    case 'ctx':
      return 'ctx';
    case 'math':
      return 'Math';
    case 'grain':
      return `grain class ${t.def.name}`;
    case 'void':
      return 'void';
  }
}

export function schemaType(s: Schema, origin: Origin): VT {
  switch (s.kind) {
    case 'scalar':
      return isNumericKind(s.scalar) ? { k: 'num', n: s.scalar } : BOOL;
    case 'struct':
      return { k: 'struct', s, origin };
    case 'array':
      return { k: 'array', s, origin };
    case 'vec':
      return { k: 'vec', s, origin };
  }
}

function needNum(site: ParseSite, loc: Loc, v: Val, what: string): NumericKind {
  if (v.t.k !== 'num')
    typeError(
      site,
      loc,
      what,
      `${what} needs a number, got ${describeVT(v.t)}`,
      v.t.k === 'bool' ? 'convert explicitly: (b ? 1 : 0)' : 'read a numeric field',
    );
  return v.t.n;
}

/** The value as a C double (JS number). */
export function asDouble(site: ParseSite, loc: Loc, v: Val, what = 'arithmetic'): string {
  const n = needNum(site, loc, v, what);
  if (ARITH[n].held === 'double') return v.c;
  if (v.lit !== undefined) return fmtDouble(v.lit);
  return `(double)${v.c}`;
}

/** Whether the value is a C int after integer promotion with no change (kinds held as 'int'). */
export function heldAsInt(v: Val): boolean {
  return v.t.k === 'num' && ARITH[v.t.n].held === 'int';
}

/** ECMAScript ToInt32. */
export function asI32(site: ParseSite, loc: Loc, v: Val, what = 'bitwise operator'): string {
  const n = needNum(site, loc, v, what);
  const held = ARITH[n].held;
  switch (held) {
    case 'int':
      return v.c;
    case 'unsigned':
      return `(int)${v.c}`;
    case 'float':
    case 'double':
      return `rg_toi32(${asDouble(site, loc, v)})`;
    default: {
      const never: never = held;
      return never;
    }
  }
}

/** ECMAScript ToUint32. */
export function asU32(site: ParseSite, loc: Loc, v: Val, what = 'bitwise operator'): string {
  const n = needNum(site, loc, v, what);
  const held = ARITH[n].held;
  switch (held) {
    case 'unsigned':
      return v.c;
    case 'int':
      return v.lit !== undefined && v.lit >= 0 ? `${v.lit}u` : `(unsigned int)${v.c}`;
    case 'float':
    case 'double':
      return `rg_tou32(${asDouble(site, loc, v)})`;
    default: {
      const never: never = held;
      return never;
    }
  }
}

export function needBool(site: ParseSite, loc: Loc, v: Val, what: string): string {
  if (v.t.k !== 'bool') {
    typeError(
      site,
      loc,
      what,
      `${what} needs a boolean, got ${describeVT(v.t)}`,
      'compare explicitly, e.g. x !== 0 (JS truthiness is not translated)',
    );
  }
  return v.c;
}

/**
 * Conversion on a store into a view, as the JS DataView/typed array does it: f32 rounds to nearest,
 * integer kinds wrap (ToInt32/ToUint32, then modulo 2^bits for narrower kinds), bool needs a boolean.
 */
export function storeAs(site: ParseSite, loc: Loc, kind: ScalarKind, v: Val): string {
  if (!isNumericKind(kind)) return needBool(site, loc, v, 'boolean field');
  const what = `${kind} field`;
  const { held, wrap } = ARITH[kind];
  switch (held) {
    case 'double':
      return asDouble(site, loc, v, what);
    case 'float':
      return v.t.k === 'num' && v.t.n === kind ? v.c : `(float)${paren(asDouble(site, loc, v, what))}`;
    case 'unsigned':
      return asU32(site, loc, v, what);
    case 'int': {
      if (!wrap) return asI32(site, loc, v, what);
      const n = needNum(site, loc, v, what);
      // A value of a kind within this one's range stores unchanged.
      if (fitsIn(n, kind)) return v.c;
      const r = intRange(kind);
      if (v.lit !== undefined && r && v.lit >= r.min && v.lit <= r.max) return v.c;
      return `${wrap.fn}(${asI32(site, loc, v, what)})`;
    }
    default: {
      const never: never = held;
      return never;
    }
  }
}

/**
 * Conversion into an outgoing message (reply or K2K payload), as the host encoder checks it: integer
 * fields must hold integers in range (else the turn fails like the host's schema mismatch).
 */
export function encodeAs(site: ParseSite, loc: Loc, kind: ScalarKind, v: Val): { c: string; mayFail: boolean } {
  const r = intRange(kind);
  if (!isNumericKind(kind) || !r) return { c: storeAs(site, loc, kind, v), mayFail: false };
  const n = needNum(site, loc, v, `${kind} field`);
  if (fitsIn(n, kind)) return { c: v.c, mayFail: false };
  if (v.lit !== undefined && v.lit >= r.min && v.lit <= r.max)
    return { c: ARITH[kind].held === 'unsigned' ? `${v.lit}u` : v.c, mayFail: false };
  return { c: `rg_chk_${kind}(&rg_mis, ${asDouble(site, loc, v)})`, mayFail: true };
}

export function paren(c: string): string {
  return /^[A-Za-z0-9_.>\-]*$/.test(c) && !c.startsWith('-') ? c : `(${c})`;
}

/** A JS number as a C double literal that reads back to the same value. */
export function fmtDouble(v: number): string {
  if (Number.isNaN(v)) return 'rg_nan()';
  if (v === Infinity) return 'rg_inf()';
  if (v === -Infinity) return '(-rg_inf())';
  if (Object.is(v, -0)) return '(-0.0)';
  const s = String(v);
  const c = /[.e]/.test(s) ? s : `${s}.0`;
  return v < 0 ? `(${c})` : c;
}
