/**
 * The fixed C runtime every unit starts with: portability macros, JS number semantics, and the
 * byte-wise msgpack reader/writer the generated codecs call. Everything here is `RG_HD`
 * (`__host__ __device__` under nvcc), so the host harness compiles it with g++ unchanged.
 * No system headers under NVRTC; unaligned data is only ever read byte by byte.
 */
import { TURN_ERRORS } from './abi.ts';
import { kindAssertsC, kindChecksC, kindNumberC } from './kind-arith.ts';
import { kindReadersC, kindWritersC } from './kind-codecs.ts';
/** `#define RG_E_<NAME> <code>` for every turn error of abi.ts: one source for TS and C. */
const turnErrorDefines = Object.entries(TURN_ERRORS)
  .map(([name, code]) => `#define RG_E_${name} ${code}`)
  .join('\n');

export const PRELUDE = String.raw`#if defined(__CUDACC__)
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
/* ToInt32 / ToUint32 of ECMA-262: NaN and infinities give 0, otherwise truncate modulo 2^32. */
RG_HD static inline int rg_toi32(double x) {
  if (!rg_finite(x)) return 0;
  if (x > -2147483649.0 && x < 2147483648.0) return (int)x;
  double m = fmod(trunc(x), 4294967296.0);
  if (m < 0) m += 4294967296.0;
  return (int)(unsigned int)m;
}
RG_HD static inline unsigned int rg_tou32(double x) { return (unsigned int)rg_toi32(x); }
/* Per scalar kind (codegen kind-arith.ts): C types as laid out, integer ranges, narrowing stores. */
${kindAssertsC()}
${kindNumberC()}
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

/* ---- turn context and typed turn errors ----------------------------------------------------- */
#define RG_OK 0
#define RG_FORWARDED 1
/* Turn errors, generated from abi.ts TURN_ERRORS (RG_E_<name>); RG_E_THROW: the text is in rg_turn.msg. */
${turnErrorDefines}

/*
 * Warp cooperation (device.ts rg_coop_*): while lane 0 runs a turn alone on its worker warp, the other
 * 31 lanes wait for bulk work it posts (copies of numeric arrays, element-parallel loops). Null where no
 * warp helps: lane-parallel turns, K2K senders, and every host build.
 */
struct rg_coop;
#if defined(__CUDACC__)
__device__ static void rg_coop_copy(rg_coop* co, unsigned char* d, const unsigned char* s, unsigned int n, bool sys);
#endif
/* Bytes below which a copy stays on lane 0: posting to the warp costs two warp barriers. */
#ifndef RG_COOP_MIN_BYTES
#define RG_COOP_MIN_BYTES 256u
#endif
/* Copies n bytes with the warp's help when one waits (true), else leaves the copy to the caller (false). */
RG_HD static inline bool rg_bulk(rg_coop* co, unsigned char* d, const unsigned char* s, unsigned int n) {
#if defined(__CUDA_ARCH__)
  if (co && n >= RG_COOP_MIN_BYTES) { rg_coop_copy(co, d, s, n, false); return true; }
#endif
  (void)co; (void)d; (void)s; (void)n;
  return false;
}

struct rg_turn {
  long long key;
  double now;
  unsigned int iters;
  unsigned int budget;
  int err;
  unsigned int method;
  unsigned int flags;
  unsigned int corr;
  unsigned int sender;
  unsigned int grain;
  unsigned int sent;
  unsigned int sendBudget;
  const void* routes;
  unsigned int nroutes;
  /* The message of a handler's throw new Error('...') (RG_E_THROW): a string literal of the unit. */
  const char* msg;
  rg_coop* co;
#if defined(RG_TIMERS) && RG_TIMERS
  /* timers.ts: the actor's timer row (0 in a host build), its owner's armed figure, the kernel's start
     generation, and the text of a timer error (a TimerArgumentError with its number) */
  unsigned char* tmRow;
  int* tmArmed;
  unsigned int* tmGen;
  char* tmText;
#endif
};
RG_HD static inline const char* rg_err_text(int e) {
  switch (e) {
    case RG_E_TURN_BUDGET: return "TURN_BUDGET: a loop ran past the turn's iteration budget (turnBudget)";
    case RG_E_INDEX_RANGE: return "INDEX_RANGE: array index out of range or not an integer";
    case RG_E_QUEUE_FULL: return "QUEUE_FULL: the target grain's device queue stayed full; the message was not sent";
    case RG_E_POOL_EXHAUSTED: return "POOL_EXHAUSTED: the target grain's queue was full and every node of its K2K overflow pool was taken; the message was not sent (raise CudaBackend's overflowBytes)";
    case RG_E_NO_ROUTE: return "NO_ROUTE: the target grain class has no kernel on this device";
    case RG_E_INVALID_KEY: return "INVALID_KEY: a ctx.send/ctx.forward key must be a safe integer";
    case RG_E_PAYLOAD_TOO_LARGE: return "PAYLOAD_TOO_LARGE: a K2K message does not fit the target's slot";
    case RG_E_REPLY_MISMATCH: return "reply does not match its schema: an integer field got a value out of range or not an integer";
    case RG_E_NO_REPLY: return "reply does not match its schema: the handler returned no reply";
    default: return "internal error";
  }
}
/* The reply text of a failed turn: the thrown Error's message, as the CPU backend sends e.message, or the typed error's text. */
RG_HD static inline const char* rg_turn_error(const rg_turn* t, int rc) {
  return rc == RG_E_THROW && t->msg ? t->msg : rg_err_text(rc);
}
/* Array index: JS reads undefined out of range; the translation aborts the turn instead (INDEX_RANGE). */
RG_HD static inline unsigned int rg_idx(rg_turn* t, double i, unsigned int n) {
  if (i >= 0.0 && i < (double)n && i == trunc(i)) return (unsigned int)i;
  if (!t->err) t->err = RG_E_INDEX_RANGE;
  return 0;
}
RG_HD static inline unsigned int rg_idxi(rg_turn* t, int i, unsigned int n) {
  if (i >= 0 && (unsigned int)i < n) return (unsigned int)i;
  if (!t->err) t->err = RG_E_INDEX_RANGE;
  return 0;
}
RG_HD static inline unsigned int rg_idxu(rg_turn* t, unsigned int i, unsigned int n) {
  if (i < n) return i;
  if (!t->err) t->err = RG_E_INDEX_RANGE;
  return 0;
}
/* A reply or K2K payload field of an integer kind: an integer in the kind's range, or REPLY_MISMATCH. */
${kindChecksC()}
/* Word-wise where aligned: a byte loop over a local struct is one local-memory store per byte. */
RG_HD static inline void rg_zero(void* p, unsigned int n) {
  unsigned char* b = (unsigned char*)p;
  unsigned int i = 0;
  if (((unsigned long long)b & 7u) == 0u) for (; i + 8u <= n; i += 8u) *(unsigned long long*)(b + i) = 0ull;
  for (; i < n; i++) b[i] = 0;
}
RG_HD static inline void rg_copy(void* d, const void* s, unsigned int n) {
  unsigned char* a = (unsigned char*)d;
  const unsigned char* b = (const unsigned char*)s;
  unsigned int i = 0;
  if ((((unsigned long long)a | (unsigned long long)b) & 7u) == 0u) for (; i + 8u <= n; i += 8u) *(unsigned long long*)(a + i) = *(const unsigned long long*)(b + i);
  for (; i < n; i++) a[i] = b[i];
}
/* A struct/array/vec copy inside a turn: with the warp's help when the turn is alone on its warp. */
RG_HD static inline void rg_copy_t(rg_turn* t, void* d, const void* s, unsigned int n) {
  if (!rg_bulk(t->co, (unsigned char*)d, (const unsigned char*)s, n)) rg_copy(d, s, n);
}
RG_HD static inline unsigned int rg_minu(unsigned int a, unsigned int b) { return a < b ? a : b; }

/* ---- msgpack reader: byte-wise, bounds-checked against the slot's length --------------------- */
struct rg_rd { const unsigned char* p; unsigned int pos; unsigned int end; rg_coop* co; };
RG_HD static inline bool rg_take(rg_rd* r, unsigned int n, unsigned int* at) {
  if (n > r->end - r->pos) return false;
  *at = r->pos;
  r->pos += n;
  return true;
}
RG_HD static inline unsigned int rg_be16(const unsigned char* p) { return ((unsigned int)p[0] << 8) | p[1]; }
RG_HD static inline unsigned int rg_le16(const unsigned char* p) { return ((unsigned int)p[1] << 8) | p[0]; }
RG_HD static inline unsigned int rg_be32(const unsigned char* p) { return ((unsigned int)p[0] << 24) | ((unsigned int)p[1] << 16) | ((unsigned int)p[2] << 8) | p[3]; }
RG_HD static inline unsigned long long rg_be64(const unsigned char* p) { return ((unsigned long long)rg_be32(p) << 32) | rg_be32(p + 4); }
RG_HD static inline unsigned int rg_le32(const unsigned char* p) { return ((unsigned int)p[3] << 24) | ((unsigned int)p[2] << 16) | ((unsigned int)p[1] << 8) | p[0]; }
RG_HD static inline unsigned long long rg_le64(const unsigned char* p) { return ((unsigned long long)rg_le32(p + 4) << 32) | rg_le32(p); }
/* Any msgpack number (every int width, float32, float64) as the JS decoder reads it. */
RG_HD static bool rg_rd_num(rg_rd* r, double* out) {
  unsigned int at;
  if (!rg_take(r, 1, &at)) return false;
  unsigned int t = r->p[at];
  if (t < 0x80) { *out = (double)t; return true; }
  if (t >= 0xe0) { *out = (double)((int)t - 256); return true; }
  switch (t) {
    case 0xca: if (!rg_take(r, 4, &at)) return false; *out = (double)rg_u2f(rg_be32(r->p + at)); return true;
    case 0xcb: if (!rg_take(r, 8, &at)) return false; *out = rg_u2d(rg_be64(r->p + at)); return true;
    case 0xcc: if (!rg_take(r, 1, &at)) return false; *out = (double)r->p[at]; return true;
    case 0xcd: if (!rg_take(r, 2, &at)) return false; *out = (double)rg_be16(r->p + at); return true;
    case 0xce: if (!rg_take(r, 4, &at)) return false; *out = (double)rg_be32(r->p + at); return true;
    case 0xcf: if (!rg_take(r, 8, &at)) return false; *out = (double)rg_be64(r->p + at); return true;
    case 0xd0: if (!rg_take(r, 1, &at)) return false; *out = (double)(signed char)r->p[at]; return true;
    case 0xd1: if (!rg_take(r, 2, &at)) return false; *out = (double)(short)rg_be16(r->p + at); return true;
    case 0xd2: if (!rg_take(r, 4, &at)) return false; *out = (double)(int)rg_be32(r->p + at); return true;
    case 0xd3: if (!rg_take(r, 8, &at)) return false; *out = (double)(long long)rg_be64(r->p + at); return true;
    default: return false;
  }
}
RG_HD static bool rg_rd_arrhdr(rg_rd* r, unsigned int* n) {
  unsigned int at;
  if (!rg_take(r, 1, &at)) return false;
  unsigned int t = r->p[at];
  if ((t & 0xf0) == 0x90) { *n = t & 0x0f; return true; }
  if (t == 0xdc) { if (!rg_take(r, 2, &at)) return false; *n = rg_be16(r->p + at); return true; }
  if (t == 0xdd) { if (!rg_take(r, 4, &at)) return false; *n = rg_be32(r->p + at); return true; }
  return false;
}
RG_HD static bool rg_rd_maphdr(rg_rd* r, unsigned int* n) {
  unsigned int at;
  if (!rg_take(r, 1, &at)) return false;
  unsigned int t = r->p[at];
  if ((t & 0xf0) == 0x80) { *n = t & 0x0f; return true; }
  if (t == 0xde) { if (!rg_take(r, 2, &at)) return false; *n = rg_be16(r->p + at); return true; }
  if (t == 0xdf) { if (!rg_take(r, 4, &at)) return false; *n = rg_be32(r->p + at); return true; }
  return false;
}
/* Map keys: fixstr or str8, as the host decoder accepts. */
RG_HD static bool rg_rd_key(rg_rd* r, unsigned int* at, unsigned int* len) {
  unsigned int p;
  if (!rg_take(r, 1, &p)) return false;
  unsigned int t = r->p[p];
  if ((t & 0xe0) == 0xa0) *len = t & 0x1f;
  else if (t == 0xd9) { if (!rg_take(r, 1, &p)) return false; *len = r->p[p]; }
  else return false;
  return rg_take(r, *len, at);
}
RG_HD static inline bool rg_keyeq(const rg_rd* r, unsigned int at, unsigned int len, const char* k, unsigned int klen) {
  if (len != klen) return false;
  for (unsigned int i = 0; i < len; i++) if (r->p[at + i] != (unsigned char)k[i]) return false;
  return true;
}
RG_HD static bool rg_rd_binhdr(rg_rd* r, unsigned int* len) {
  unsigned int at, t = r->p[r->pos];
  r->pos++;
  if (t == 0xc4) { if (!rg_take(r, 1, &at)) return false; *len = r->p[at]; return true; }
  if (t == 0xc5) { if (!rg_take(r, 2, &at)) return false; *len = rg_be16(r->p + at); return true; }
  if (!rg_take(r, 4, &at)) return false;
  *len = rg_be32(r->p + at);
  return true;
}
/* Numeric arrays: bin (little-endian elements) or a msgpack array of numbers; min..max elements. */
#define RG_RD_NUMARR(NAME, T, BYTES, ELEM, FROMLE)                                                  \
  RG_HD static bool NAME(rg_rd* r, T* out, unsigned int min, unsigned int max, unsigned int* count) { \
    if (r->pos >= r->end) return false;                                                             \
    unsigned int t = r->p[r->pos], n, at;                                                           \
    if (t == 0xc4 || t == 0xc5 || t == 0xc6) {                                                      \
      unsigned int len;                                                                             \
      if (!rg_rd_binhdr(r, &len) || len % BYTES != 0) return false;                                 \
      n = len / BYTES;                                                                              \
      if (n < min || n > max || !rg_take(r, len, &at)) return false;                                \
      if (!rg_bulk(r->co, (unsigned char*)out, r->p + at, len)) /* the device is little-endian */   \
        for (unsigned int i = 0; i < n; i++) out[i] = FROMLE(r->p + at + i * BYTES);                \
    } else {                                                                                        \
      if (!rg_rd_arrhdr(r, &n) || n < min || n > max) return false;                                 \
      for (unsigned int i = 0; i < n; i++) if (!ELEM(r, &out[i])) return false;                     \
    }                                                                                               \
    *count = n;                                                                                     \
    return true;                                                                                    \
  }
/* Per scalar kind (codegen kind-codecs.ts): rg_rd_<kind>, and rg_rd_a<kind> for numeric arrays. */
${kindReadersC()}

/* ---- msgpack writer: what the host encoder writes, byte for byte. p == 0 only measures. ------- */
struct rg_wr { unsigned char* p; unsigned int pos; unsigned int cap; rg_coop* co; };
RG_HD static inline bool rg_need(rg_wr* w, unsigned int n, unsigned int* at) {
  if (n > w->cap - w->pos) return false;
  *at = w->pos;
  w->pos += n;
  return true;
}
RG_HD static inline void rg_put(rg_wr* w, unsigned int at, unsigned int v) { if (w->p) w->p[at] = (unsigned char)v; }
RG_HD static inline void rg_put_be16(rg_wr* w, unsigned int at, unsigned int v) { rg_put(w, at, v >> 8); rg_put(w, at + 1, v); }
RG_HD static inline void rg_put_be32(rg_wr* w, unsigned int at, unsigned int v) { rg_put(w, at, v >> 24); rg_put(w, at + 1, v >> 16); rg_put(w, at + 2, v >> 8); rg_put(w, at + 3, v); }
RG_HD static inline void rg_put_le16(rg_wr* w, unsigned int at, unsigned int v) { rg_put(w, at, v); rg_put(w, at + 1, v >> 8); }
RG_HD static inline void rg_put_le32(rg_wr* w, unsigned int at, unsigned int v) { rg_put(w, at, v); rg_put(w, at + 1, v >> 8); rg_put(w, at + 2, v >> 16); rg_put(w, at + 3, v >> 24); }
RG_HD static bool rg_wr_byte(rg_wr* w, unsigned int b) { unsigned int at; if (!rg_need(w, 1, &at)) return false; rg_put(w, at, b); return true; }
RG_HD static bool rg_wr_int(rg_wr* w, long long v) {
  unsigned int at;
  if (v >= 0) {
    if (v < 0x80) return rg_wr_byte(w, (unsigned int)v);
    if (v < 0x100) { if (!rg_need(w, 2, &at)) return false; rg_put(w, at, 0xcc); rg_put(w, at + 1, (unsigned int)v); return true; }
    if (v < 0x10000) { if (!rg_need(w, 3, &at)) return false; rg_put(w, at, 0xcd); rg_put_be16(w, at + 1, (unsigned int)v); return true; }
    if (!rg_need(w, 5, &at)) return false;
    rg_put(w, at, 0xce); rg_put_be32(w, at + 1, (unsigned int)v); return true;
  }
  if (v >= -32) return rg_wr_byte(w, (unsigned int)(v & 0xff));
  if (v >= -128) { if (!rg_need(w, 2, &at)) return false; rg_put(w, at, 0xd0); rg_put(w, at + 1, (unsigned int)(v & 0xff)); return true; }
  if (v >= -32768) { if (!rg_need(w, 3, &at)) return false; rg_put(w, at, 0xd1); rg_put_be16(w, at + 1, (unsigned int)(v & 0xffff)); return true; }
  if (!rg_need(w, 5, &at)) return false;
  rg_put(w, at, 0xd2); rg_put_be32(w, at + 1, (unsigned int)v); return true;
}
RG_HD static bool rg_wr_float32(rg_wr* w, float v) { unsigned int at; if (!rg_need(w, 5, &at)) return false; rg_put(w, at, 0xca); rg_put_be32(w, at + 1, rg_f2u(v)); return true; }
RG_HD static bool rg_wr_float64(rg_wr* w, double v) {
  unsigned int at;
  if (!rg_need(w, 9, &at)) return false;
  unsigned long long u = rg_d2u(v);
  rg_put(w, at, 0xcb); rg_put_be32(w, at + 1, (unsigned int)(u >> 32)); rg_put_be32(w, at + 5, (unsigned int)u);
  return true;
}
RG_HD static bool rg_wr_maphdr(rg_wr* w, unsigned int n) {
  unsigned int at;
  if (n < 16) return rg_wr_byte(w, 0x80 | n);
  if (!rg_need(w, 3, &at)) return false;
  rg_put(w, at, 0xde); rg_put_be16(w, at + 1, n); return true;
}
RG_HD static bool rg_wr_arrhdr(rg_wr* w, unsigned int n) {
  unsigned int at;
  if (n < 16) return rg_wr_byte(w, 0x90 | n);
  if (n < 0x10000) { if (!rg_need(w, 3, &at)) return false; rg_put(w, at, 0xdc); rg_put_be16(w, at + 1, n); return true; }
  if (!rg_need(w, 5, &at)) return false;
  rg_put(w, at, 0xdd); rg_put_be32(w, at + 1, n); return true;
}
RG_HD static bool rg_wr_binhdr(rg_wr* w, unsigned int n) {
  unsigned int at;
  if (n < 0x100) { if (!rg_need(w, 2, &at)) return false; rg_put(w, at, 0xc4); rg_put(w, at + 1, n); return true; }
  if (n < 0x10000) { if (!rg_need(w, 3, &at)) return false; rg_put(w, at, 0xc5); rg_put_be16(w, at + 1, n); return true; }
  if (!rg_need(w, 5, &at)) return false;
  rg_put(w, at, 0xc6); rg_put_be32(w, at + 1, n); return true;
}
/* A str (fixstr / str8 / str16 / str32), used for map keys and error texts. */
RG_HD static bool rg_wr_str(rg_wr* w, const char* s, unsigned int n) {
  unsigned int at;
  if (n < 32) { if (!rg_wr_byte(w, 0xa0 | n)) return false; }
  else if (n < 0x100) { if (!rg_need(w, 2, &at)) return false; rg_put(w, at, 0xd9); rg_put(w, at + 1, n); }
  else if (n < 0x10000) { if (!rg_need(w, 3, &at)) return false; rg_put(w, at, 0xda); rg_put_be16(w, at + 1, n); }
  else { if (!rg_need(w, 5, &at)) return false; rg_put(w, at, 0xdb); rg_put_be32(w, at + 1, n); }
  if (!rg_need(w, n, &at)) return false;
  for (unsigned int i = 0; i < n; i++) rg_put(w, at + i, (unsigned char)s[i]);
  return true;
}
RG_HD static inline unsigned int rg_strlen(const char* s) { unsigned int n = 0; while (s[n]) n++; return n; }
/* Per scalar kind (codegen kind-codecs.ts): rg_wr_<kind>, and rg_wr_a<kind> for numeric arrays. */
${kindWritersC()}
`;
