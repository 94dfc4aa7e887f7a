/**
 * Math functions and constants translated to C. Each entry names its JS behaviour's C implementation:
 * the CUDA math library (documented ulp bounds in the CUDA C Programming Guide, appendix "Mathematical
 * Functions") or an rg_* helper from the prelude where C differs from JS (min/max NaN and -0 rules,
 * round's halves, pow's NaN cases, sign, fround, imul, clz32).
 */
export interface Intrinsic {
  readonly arity: number | 'variadic';
  /** C call template over double arguments ($0, $1...), or a function name applied to them. */
  readonly c: string;
  /** Argument kind: JS numbers as doubles, or ToInt32/ToUint32 for the integer intrinsics. */
  readonly args: 'f64' | 'i32' | 'u32';
  readonly result: 'f64' | 'i32';
}

const f1 = (c: string): Intrinsic => ({ arity: 1, c, args: 'f64', result: 'f64' });
const f2 = (c: string): Intrinsic => ({ arity: 2, c, args: 'f64', result: 'f64' });

export const MATH_FUNCTIONS: Readonly<Record<string, Intrinsic>> = {
  abs: f1('fabs'),
  sqrt: f1('sqrt'),
  cbrt: f1('cbrt'),
  floor: f1('floor'),
  ceil: f1('ceil'),
  trunc: f1('trunc'),
  round: f1('rg_round'),
  sign: f1('rg_sign'),
  fround: f1('rg_fround'),
  exp: f1('exp'),
  expm1: f1('expm1'),
  log: f1('log'),
  log2: f1('log2'),
  log10: f1('log10'),
  log1p: f1('log1p'),
  sin: f1('sin'),
  cos: f1('cos'),
  tan: f1('tan'),
  asin: f1('asin'),
  acos: f1('acos'),
  atan: f1('atan'),
  sinh: f1('sinh'),
  cosh: f1('cosh'),
  tanh: f1('tanh'),
  asinh: f1('asinh'),
  acosh: f1('acosh'),
  atanh: f1('atanh'),
  atan2: f2('atan2'),
  pow: f2('rg_pow'),
  hypot: f2('hypot'),
  min: { arity: 'variadic', c: 'rg_min', args: 'f64', result: 'f64' },
  max: { arity: 'variadic', c: 'rg_max', args: 'f64', result: 'f64' },
  imul: { arity: 2, c: 'rg_imul', args: 'i32', result: 'i32' },
  clz32: { arity: 1, c: 'rg_clz32', args: 'u32', result: 'i32' },
};

export const MATH_CONSTANTS: Readonly<Record<string, number>> = {
  PI: Math.PI,
  E: Math.E,
  LN2: Math.LN2,
  LN10: Math.LN10,
  LOG2E: Math.LOG2E,
  LOG10E: Math.LOG10E,
  SQRT2: Math.SQRT2,
  SQRT1_2: Math.SQRT1_2,
};
