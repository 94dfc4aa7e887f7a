/* Ringgrain CUDA runtime: JS number semantics, continued (after the generated per-kind arithmetic, kind-arith.ts). */
RG_HD static inline double rg_min(double a, double b) {
  if (a != a || b != b) return rg_nan();
  if (a == b) return rg_signbit(a) ? a : b;
  return a < b ? a : b;
}
RG_HD static inline double rg_max(double a, double b) {
  if (a != a || b != b) return rg_nan();
  if (a == b) return rg_signbit(a) ? b : a;
  return a > b ? a : b;
}
/* Math.round: halves round toward +Infinity; -0.5 <= x < 0 gives -0. */
RG_HD static inline double rg_round(double x) {
  if (!rg_finite(x)) return x;
  double r = floor(x);
  if (x - r >= 0.5) r += 1.0;
  if (r == 0.0 && (x < 0.0 || rg_signbit(x))) return -0.0;
  return r;
}
/* Math.pow differs from C pow: NaN exponents and (+-1) ** (+-Infinity) give NaN. */
RG_HD static inline double rg_pow(double x, double y) {
  if (y != y) return rg_nan();
  if ((x == 1.0 || x == -1.0) && !rg_finite(y)) return rg_nan();
  return pow(x, y);
}
RG_HD static inline double rg_sign(double x) { return x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : x; }
RG_HD static inline double rg_fround(double x) { return (double)(float)x; }
RG_HD static inline int rg_imul(int a, int b) { return (int)((unsigned int)a * (unsigned int)b); }
RG_HD static inline int rg_clz32(unsigned int x) {
#if defined(__CUDA_ARCH__)
  return __clz((int)x);
#else
  return x == 0 ? 32 : __builtin_clz(x);
#endif
}
/* Keys of ctx.send/forward: JS requires a safe integer. */
RG_HD static inline bool rg_key_of(double k, long long* out) {
  if (!(k == trunc(k)) || k > 9007199254740991.0 || k < -9007199254740991.0) return false;
  *out = (long long)k;
  return true;
}

