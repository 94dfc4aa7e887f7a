/*
 * The CUDA device as the residency-loops harness emulates it on the host (residency-loops.test.ts): a lane is a
 * std::thread, a warp 32 of them meeting at a counting barrier (so __syncwarp may be reached from different places,
 * as on sm_70 and later), shuffles, ballots and matches exchange through the warp's words between two barriers.
 * Memory is sequentially consistent (every atomic, acquire and release a seq_cst host atomic): what this finds is a
 * fault of the loops' logic, not of the GPU's weaker ordering. The unit is compiled with __CUDACC__ defined and its
 * few PTX helpers replaced (residency-loops.ts hostUnit).
 */
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#define __device__
#define __host__
#define __global__
#define __noinline__ __attribute__((noinline))
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
#define __restrict__
struct uint4 { unsigned int x, y, z, w; };
static inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
struct rg_dim3 { unsigned int x, y, z; };
static thread_local rg_dim3 threadIdx = {0, 0, 0};
static thread_local rg_dim3 blockIdx = {0, 0, 0};
static rg_dim3 blockDim = {1024, 1, 1};
static rg_dim3 gridDim = {1, 1, 1};
struct rg_h_warp {
  std::mutex m;
  std::condition_variable cv;
  unsigned int n = 0, gen = 0;
  unsigned long long x[32];
  void wait() {
    std::unique_lock<std::mutex> l(m);
    const unsigned int g = gen;
    if (++n == 32u) { n = 0; gen++; cv.notify_all(); return; }
    cv.wait(l, [&] { return gen != g; });
  }
};
static rg_h_warp* rg_h_warps;
static thread_local unsigned int rg_h_w = 0;
/* Whether this thread is a worker warp's lane (its mode word is loaded by the whole warp at once). */
static thread_local bool rg_h_worker = false;
static inline unsigned int rg_h_lane() { return threadIdx.x & 31u; }
static inline void __syncwarp(unsigned int = 0xffffffffu) { rg_h_warps[rg_h_w].wait(); }
template <class T> static T rg_h_xchg(T v, unsigned int from) {
  rg_h_warp& w = rg_h_warps[rg_h_w];
  memcpy(&w.x[rg_h_lane()], &v, sizeof v);
  w.wait();
  T r;
  memcpy(&r, &w.x[from & 31u], sizeof r);
  w.wait();
  return r;
}
template <class T> static T __shfl_sync(unsigned int, T v, unsigned int src) { return rg_h_xchg(v, src); }
template <class T> static T __shfl_sync(unsigned int, T v, int src) { return rg_h_xchg(v, (unsigned)src); }
template <class T> static T __shfl_xor_sync(unsigned int, T v, unsigned int o) { return rg_h_xchg(v, rg_h_lane() ^ o); }
static unsigned int __ballot_sync(unsigned int, bool p) {
  rg_h_warp& w = rg_h_warps[rg_h_w];
  w.x[rg_h_lane()] = p ? 1u : 0u;
  w.wait();
  unsigned int b = 0;
  for (unsigned i = 0; i < 32; i++) if (w.x[i]) b |= 1u << i;
  w.wait();
  return b;
}
static bool __all_sync(unsigned int m, bool p) { return __ballot_sync(m, p) == 0xffffffffu; }
static bool __any_sync(unsigned int m, bool p) { return __ballot_sync(m, p) != 0u; }
template <class T> static unsigned int __match_any_sync(unsigned int, T v) {
  rg_h_warp& w = rg_h_warps[rg_h_w];
  unsigned long long x = 0;
  memcpy(&x, &v, sizeof v);
  w.x[rg_h_lane()] = x;
  w.wait();
  unsigned int b = 0;
  for (unsigned i = 0; i < 32; i++) if (w.x[i] == x) b |= 1u << i;
  w.wait();
  return b;
}
static inline int __ffs(unsigned int x) { return __builtin_ffs((int)x); }
static inline int __popc(unsigned int x) { return __builtin_popcount(x); }
static inline unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int s) {
  return (unsigned int)((((unsigned long long)hi << 32) | lo) >> (s & 31u));
}
static inline void __nanosleep(unsigned int) { std::this_thread::yield(); }
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline long long clock64() { return (long long)std::chrono::steady_clock::now().time_since_epoch().count(); }
static inline long long __double_as_longlong(double d) { long long v; memcpy(&v, &d, 8); return v; }
static inline double __longlong_as_double(long long v) { double d; memcpy(&d, &v, 8); return d; }
template <class T> static T __ldcg(const T* p) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  T v;
  memcpy(&v, (const void*)p, sizeof v);
  return v;
}
static inline bool __isGlobal(const void*) { return true; }
#define RG_H_SC __ATOMIC_SEQ_CST
#define RG_H_ATOMICS(T) \
  static T atomicAdd(T* p, T v) { return __atomic_fetch_add(p, v, RG_H_SC); } \
  static T atomicSub(T* p, T v) { return __atomic_fetch_sub(p, v, RG_H_SC); } \
  static T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, RG_H_SC); } \
  static T atomicCAS(T* p, T c, T v) { __atomic_compare_exchange_n(p, &c, v, false, RG_H_SC, RG_H_SC); return c; } \
  static T atomicMax(T* p, T v) { \
    T o = __atomic_load_n(p, RG_H_SC); \
    while (o < v && !__atomic_compare_exchange_n(p, &o, v, false, RG_H_SC, RG_H_SC)) {} \
    return o; \
  } \
  static T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, RG_H_SC); } \
  static T atomicAnd(T* p, T v) { return __atomic_fetch_and(p, v, RG_H_SC); }
RG_H_ATOMICS(unsigned int)
RG_H_ATOMICS(unsigned long long)
RG_H_ATOMICS(int)
#define atomicAdd_system atomicAdd
#define atomicCAS_system atomicCAS
#define atomicExch_system atomicExch
#define atomicMax_system atomicMax
#define atomicSub_system atomicSub
/*
 * A load all 32 lanes of a converged warp execute together returns one value on the GPU (one request for the
 * warp); a worker steers its warp-wide steps by its mode word loaded so. Here lanes are threads loading at
 * different moments, so a worker's lanes take lane 0's load of that word (the worker loads it with every lane).
 */
static const unsigned int* rg_h_mode_word = 0;
static inline unsigned int rg_h_ld_vol(const unsigned int* p) {
  const unsigned int v = __atomic_load_n(p, RG_H_SC);
  return p == rg_h_mode_word && rg_h_worker ? rg_h_xchg(v, 0u) : v;
}
