import type { ArraySchema, GrainDef, NumericKind, Schema, StructSchema, VecSchema } from '@ringgrain/core';
import type { Loc } from './ast.ts';
import { CodegenError } from './errors.ts';
import { siteAt, type ParseSite } from './parse.ts';

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
      return s.scalar === 'bool' ? BOOL : { k: 'num', n: s.scalar };
    case 'struct':
      return { k: 'struct', s, origin };
    case 'array':
      return { k: 'array', s, origin };
    case 'vec':
      return { k: 'vec', s, origin };
  }
}

function needNum(site: ParseSite, loc: Loc, v: Val, what: string): NumericKind {
  if (v.t.k !== 'num') typeError(site, loc, what, `${what} needs a number, got ${describeVT(v.t)}`, v.t.k === 'bool' ? 'convert explicitly: (b ? 1 : 0)' : 'read a numeric field');
  return v.t.n;
}

/** The value as a C double (JS number). */
export function asDouble(site: ParseSite, loc: Loc, v: Val, what = 'arithmetic'): string {
  const n = needNum(site, loc, v, what);
  if (n === 'f64') return v.c;
  if (v.lit !== undefined) return fmtDouble(v.lit);
  return `(double)${v.c}`;
}

/** ECMAScript ToInt32. */
export function asI32(site: ParseSite, loc: Loc, v: Val, what = 'bitwise operator'): string {
  const n = needNum(site, loc, v, what);
  if (n === 'i32') return v.c;
  if (n === 'u32') return `(int)${v.c}`;
  return `rg_toi32(${asDouble(site, loc, v)})`;
}

/** ECMAScript ToUint32. */
export function asU32(site: ParseSite, loc: Loc, v: Val, what = 'bitwise operator'): string {
  const n = needNum(site, loc, v, what);
  if (n === 'u32') return v.c;
  if (n === 'i32') return v.lit !== undefined && v.lit >= 0 ? `${v.lit}u` : `(unsigned int)${v.c}`;
  return `rg_tou32(${asDouble(site, loc, v)})`;
}

export function needBool(site: ParseSite, loc: Loc, v: Val, what: string): string {
  if (v.t.k !== 'bool') {
    typeError(site, loc, what, `${what} needs a boolean, got ${describeVT(v.t)}`, 'compare explicitly, e.g. x !== 0 (JS truthiness is not translated)');
  }
  return v.c;
}

/**
 * Conversion on a store into a view, as the JS DataView/typed array does it: f32 rounds to nearest,
 * i32/u32 wrap (ToInt32/ToUint32), bool needs a boolean.
 */
export function storeAs(site: ParseSite, loc: Loc, kind: NumericKind | 'bool', v: Val): string {
  switch (kind) {
    case 'bool':
      return needBool(site, loc, v, 'boolean field');
    case 'f64':
      return asDouble(site, loc, v, 'f64 field');
    case 'f32':
      return v.t.k === 'num' && v.t.n === 'f32' ? v.c : `(float)${paren(asDouble(site, loc, v, 'f32 field'))}`;
    case 'i32':
      return asI32(site, loc, v, 'i32 field');
    case 'u32':
      return asU32(site, loc, v, 'u32 field');
  }
}

/**
 * Conversion into an outgoing message (reply or K2K payload), as the host encoder checks it: i32/u32
 * fields must hold integers in range (else the turn fails like the host's schema mismatch).
 */
export function encodeAs(site: ParseSite, loc: Loc, kind: NumericKind | 'bool', v: Val): { c: string; mayFail: boolean } {
  if (kind === 'i32' || kind === 'u32') {
    const n = needNum(site, loc, v, `${kind} field`);
    if (n === kind) return { c: v.c, mayFail: false };
    if (v.lit !== undefined && (kind === 'i32' || v.lit >= 0)) return { c: kind === 'u32' ? `${v.lit}u` : v.c, mayFail: false };
    return { c: `rg_chk_${kind}(t, ${asDouble(site, loc, v)})`, mayFail: true };
  }
  return { c: storeAs(site, loc, kind, v), mayFail: false };
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
