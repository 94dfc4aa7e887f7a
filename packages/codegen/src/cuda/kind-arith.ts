import { KINDS, intRange, type NumericKind, type ScalarKind } from '@ringgrain/core/backend';
import { C_SCALAR } from './ctypes.ts';

/**
 * JS number semantics per numeric kind, as the translation applies them. A handler computes on JS
 * numbers (doubles); a field's kind matters only where its value is read (the C type widens exactly to
 * double), converted for a bitwise operator or an index (ToInt32/ToUint32), stored (the conversion of
 * the kind's typed array or DataView setter: f32 rounds, integers wrap), or put in a reply or K2K
 * payload (an integer kind must get an integer in range, as the host encoder demands).
 */
export interface KindArith {
  /**
   * How the C value converts: 'int' — every value is a C int after integer promotion, so ToInt32 is
   * the value itself and comparisons among such values are exact in C; 'unsigned' (u32); or a float type.
   */
  readonly held: 'double' | 'float' | 'int' | 'unsigned';
  /**
   * A store into a kind narrower than 32 bits: the C function from the ToInt32 of the value to the kind
   * (ToInt8, ToUint8, ToInt16, ToUint16 of ECMA-262: wrap modulo 2^bits), and its definition. null where
   * ToInt32/ToUint32 (i32, u32) or the float conversion is the store itself.
   */
  readonly wrap: null | { readonly fn: string; readonly c: string };
}

export const ARITH: { readonly [K in NumericKind]: KindArith } = {
  f32: { held: 'float', wrap: null },
  f64: { held: 'double', wrap: null },
  // Sign from the low bits by arithmetic, not by an out-of-range conversion (implementation-defined in C++17).
  i8: {
    held: 'int',
    wrap: {
      fn: 'rg_wrap_i8',
      c:
        'RG_HD static inline signed char rg_wrap_i8(int x) { ' +
        'int b = x & 0xff; return (signed char)(b - ((b & 0x80) << 1)); }',
    },
  },
  u8: {
    held: 'int',
    wrap: {
      fn: 'rg_wrap_u8',
      c: 'RG_HD static inline unsigned char rg_wrap_u8(int x) { return (unsigned char)(x & 0xff); }',
    },
  },
  i16: {
    held: 'int',
    wrap: {
      fn: 'rg_wrap_i16',
      c:
        'RG_HD static inline short rg_wrap_i16(int x) { ' +
        'int b = x & 0xffff; return (short)(b - ((b & 0x8000) << 1)); }',
    },
  },
  u16: {
    held: 'int',
    wrap: {
      fn: 'rg_wrap_u16',
      c: 'RG_HD static inline unsigned short rg_wrap_u16(int x) { return (unsigned short)(x & 0xffff); }',
    },
  },
  i32: { held: 'int', wrap: null },
  u32: { held: 'unsigned', wrap: null },
};

/** Whether every value of kind `a` is a value of kind `b` (a store or an encode needs no conversion). */
export function fitsIn(a: NumericKind, b: NumericKind): boolean {
  if (a === b) return true;
  const ra = intRange(a);
  const rb = intRange(b);
  return ra !== undefined && rb !== undefined && ra.min >= rb.min && ra.max <= rb.max;
}

const cDouble = (v: number): string => `${v}.0`;

function integerKinds(): Array<{ k: NumericKind; min: number; max: number }> {
  const out: Array<{ k: NumericKind; min: number; max: number }> = [];
  for (const k of Object.keys(ARITH) as NumericKind[]) {
    const r = intRange(k);
    if (r) out.push({ k, ...r });
  }
  return out;
}

/** Static checks that each C scalar type is the size and alignment layoutOf gives its kind. */
export function kindAssertsC(): string {
  return (Object.keys(C_SCALAR) as ScalarKind[])
    .map(
      (k) =>
        `static_assert(sizeof(${C_SCALAR[k]}) == ${KINDS[k].size} && alignof(${C_SCALAR[k]}) == ` +
        `${KINDS[k].align}, "${k}: ${C_SCALAR[k]} differs from layoutOf");`,
    )
    .join('\n');
}

/** Prelude: rg_is_<k> (an integer of the kind's range, as the host decoder checks) and the narrowing stores. */
export function kindNumberC(): string {
  const is = integerKinds().map(
    ({ k, min, max }) =>
      `RG_HD static inline bool rg_is_${k}(double x) { return x == trunc(x) && x >= ${cDouble(min)} && ` +
      `x <= ${cDouble(max)}; }`,
  );
  const wraps = Object.values(ARITH).flatMap((a) => (a.wrap ? [a.wrap.c] : []));
  return [...is, ...wraps].join('\n');
}

/**
 * Prelude: rg_chk_<k>, a reply or K2K payload field of an integer kind. Out of range it only marks `*mis`:
 * the host encoder refuses the value after every field was evaluated (and, for a K2K send, after the key
 * was checked), so the fill raises REPLY_MISMATCH at its end unless an evaluation failed first.
 */
export function kindChecksC(): string {
  return integerKinds()
    .map(({ k }) => {
      const t = C_SCALAR[k];
      return (
        `RG_HD static inline ${t} rg_chk_${k}(bool* mis, double v) {\n  if (rg_is_${k}(v)) return (${t})v;\n` +
        `  *mis = true;\n  return 0;\n}`
      );
    })
    .join('\n');
}
