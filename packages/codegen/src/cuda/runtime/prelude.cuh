/*
 * Ringgrain CUDA runtime: portability. The fixed C every unit starts with (after the generated constants):
 * RG_HD (__host__ __device__ under nvcc, so the host harness compiles it with g++ unchanged), the offset
 * asserts, and RG_G(name), the grain class's own names (rg_<grain>_<name>, RG_GRAIN from the generated unit).
 * No system headers under NVRTC; unaligned data is only ever read byte by byte.
 */
#define RG_PASTE3_(a, b, c) a##b##c
#define RG_PASTE3(a, b, c) RG_PASTE3_(a, b, c)
#define RG_G(name) RG_PASTE3(rg_, RG_GRAIN, _##name)
#if defined(__CUDACC__)
#define RG_HD __host__ __device__
/* The prelude is shared by every unit; a unit uses only some of it. */
#pragma nv_diag_suppress 177
#else
#define RG_HD
#endif
#if !defined(__CUDACC_RTC__)
#include <math.h>
#endif
#define RG_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* Field offsets are asserted where __builtin_offsetof exists (nvcc, g++); NVRTC has none, so there the
   size and alignment asserts remain and the offsets are covered by the nvcc build of the same unit. */
#if defined(__CUDACC_RTC__)
#define RG_OFFSET_ASSERT(T, f, off, msg)
#else
#define RG_OFFSET_ASSERT(T, f, off, msg) static_assert(__builtin_offsetof(T, f) == (off), msg)
#endif

/* ---- JS number semantics ------------------------------------------------------------------ */
/* Double arithmetic without contraction into fused multiply-add, as in JS. */
#if defined(__CUDA_ARCH__)
#define RG_ADD(a, b) __dadd_rn((a), (b))
#define RG_SUB(a, b) __dsub_rn((a), (b))
#define RG_MUL(a, b) __dmul_rn((a), (b))
#define RG_DIV(a, b) __ddiv_rn((a), (b))
#else
#define RG_ADD(a, b) ((a) + (b))
#define RG_SUB(a, b) ((a) - (b))
#define RG_MUL(a, b) ((a) * (b))
#define RG_DIV(a, b) ((a) / (b))
#endif
union rg_u32f { unsigned int u; float f; };
union rg_u64d { unsigned long long u; double d; };
RG_HD static inline float rg_u2f(unsigned int u) { rg_u32f x; x.u = u; return x.f; }
RG_HD static inline unsigned int rg_f2u(float f) { rg_u32f x; x.f = f; return x.u; }
RG_HD static inline double rg_u2d(unsigned long long u) { rg_u64d x; x.u = u; return x.d; }
RG_HD static inline unsigned long long rg_d2u(double d) { rg_u64d x; x.d = d; return x.u; }
RG_HD static inline double rg_nan() { return rg_u2d(0x7ff8000000000000ULL); }
RG_HD static inline double rg_inf() { return rg_u2d(0x7ff0000000000000ULL); }
RG_HD static inline bool rg_finite(double x) { return x - x == 0.0; }
RG_HD static inline bool rg_signbit(double x) { return (rg_d2u(x) >> 63) != 0; }
/*
 * ToInt32 / ToUint32 of ECMA-262: NaN and infinities give 0, otherwise truncate modulo 2^32. Past the int range
 * without fmod: below 2^63 a 64-bit truncation is exact and its low 32 bits are the value modulo 2^32; from 2^63
 * on, x is m * 2^e (m the 53-bit significand, e >= 11), whose low 32 bits are those of m << e (0 from e = 32).
 * NVVM inlined fmod's loop at every call (a u32 store, each bitwise operator): a quarter of SIR Person's turn.
 */
RG_HD static inline int rg_toi32(double x) {
  if (!rg_finite(x)) return 0;
  if (x > -2147483649.0 && x < 2147483648.0) return (int)x;
  if (x > -9223372036854775808.0 && x < 9223372036854775808.0) return (int)(unsigned int)(long long)x;
  const unsigned long long b = rg_d2u(x);
  const int e = (int)((b >> 52) & 0x7ffu) - 1075;
  const unsigned int lo = e >= 32 ? 0u : (unsigned int)(((b & 0xfffffffffffffULL) | 0x10000000000000ULL) << e);
  return (int)((b >> 63) != 0 ? 0u - lo : lo);
}
RG_HD static inline unsigned int rg_tou32(double x) { return (unsigned int)rg_toi32(x); }
/* Per scalar kind (codegen kind-arith.ts): C types as laid out, integer ranges, narrowing stores. */
