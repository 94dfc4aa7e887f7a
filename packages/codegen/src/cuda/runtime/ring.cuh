/*
 * Ringgrain CUDA runtime: ring plumbing shared by every unit (after the protocol structs). Partitioning,
 * memory-order primitives (PTX acquire/release) and the MPSC partition queue.
 */
/* Profiling stamps (RG_S_* ids in the constants): no-ops unless the including file defines RG_STAMP (test/gpu/ask-probe.cu). */
#ifdef RG_STAMP
#define RG_PROFILED 1
#else
#define RG_STAMP(id) ((void)0)
#endif
#ifndef RG_STAMP_TURN_END
#define RG_STAMP_TURN_END() ((void)0)
#endif
/* The protocol structs (generated from core protocol.ts's schemas) against the constants generated from the same layouts. */
static_assert(sizeof(rg_SlotHeader) == RG_HDR, "rg_SlotHeader: RG_HDR (core protocol.ts SLOT_HEADER_SIZE)");
static_assert(sizeof(rg_RingHeader) <= RG_RING_HDR, "rg_RingHeader: fits RG_RING_HDR (core protocol.ts RING_HEADER_SIZE)");
/* RG_WAVE_STATS (a diagnostic, see the persistent loop): a turn's phase stamps, per thread. */
#if defined(RG_WAVE_STATS) && defined(__CUDACC__)
#define RG_WS_MARKS 8
__shared__ long long rg_ws_mark[RG_THREADS_PER_BLOCK][RG_WS_MARKS];
#define RG_WS_MARK(i) (rg_ws_mark[threadIdx.x][i] = clock64())
#else
#define RG_WS_MARK(i) ((void)0)
#endif

/* Partition of a key: every key has exactly one consumer warp (turns and FIFO without locks). */
RG_HD static inline unsigned int rg_partition(long long key, unsigned int parts) {
  unsigned long long h = (unsigned long long)key * 0x9E3779B97F4A7C15ULL;
  return (unsigned int)((h >> 32) % parts);
}

/*
 * Scope of the queues' and overflow pools' loads, stores and atomics. A class whose lane groups span
 * several GPUs (cuda-backend `devices`) writes K2K messages into a peer GPU's queues through peer access:
 * its units are built with RG_PEER=1, which makes the rg_*_gpu accessors below and the K2K atomics
 * system-scope (a gpu-scope release on the sending GPU orders nothing for the receiving one). On one GPU
 * (the default) they are gpu-scope, and the text the compiler sees is the same as before the macro.
 * RG_PEER=2 (cuda-backend RINGGRAIN_PEER_SCOPE=producer, an A/B): only the K2K producer's side is system-scope.
 */
#if defined(RG_PEER) && RG_PEER == 1
#define RG_QSCOPE "sys"
#define RG_QATOMIC(op) op##_system
#else
#define RG_QSCOPE "gpu"
#define RG_QATOMIC(op) op
#endif
/* The K2K producer's side (claim and publish into a queue that may be on another GPU): system scope with RG_PEER
   1 and 2; RG_PEER=2 leaves everything else (the consumers, local to their GPU) at gpu scope (an A/B, k2k.cuh). */
#if defined(RG_PEER) && RG_PEER
#define RG_KSCOPE "sys"
#define RG_KATOMIC(op) op##_system
#else
#define RG_KSCOPE "gpu"
#define RG_KATOMIC(op) op
#endif

#if defined(__CUDACC__)
__device__ static inline unsigned int rg_ld_acq_sys(const unsigned int* p) {
  unsigned int v;
  asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ static inline unsigned int rg_ld_acq_gpu(const unsigned int* p) {
  unsigned int v;
  asm volatile("ld.acquire." RG_QSCOPE ".u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ static inline void rg_st_rel_sys(unsigned int* p, unsigned int v) {
  asm volatile("st.release.sys.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}
__device__ static inline void rg_st_rel_gpu(unsigned int* p, unsigned int v) {
  asm volatile("st.release." RG_QSCOPE ".u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}
__device__ static inline unsigned int rg_ld_vol(const unsigned int* p) { return *(const volatile unsigned int*)p; }
__device__ static inline unsigned long long rg_ld_acq_gpu_u64(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
/* atomicExch is relaxed; the overflow lists' tail needs acquire and release (rg_k2k_publish says why). */
__device__ static inline unsigned int rg_exch_acq_rel_gpu(unsigned int* p, unsigned int v) {
  unsigned int old;
  asm volatile("atom.acq_rel." RG_QSCOPE ".exch.b32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
/* 16 bytes in one relaxed load (gpu scope, so never a stale L1 copy). */
__device__ static inline uint4 rg_ld_rlx_gpu_v4(const void* p) {
  uint4 v;
  asm volatile("ld.relaxed.gpu.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
  return v;
}
__device__ static inline void rg_st_vol(unsigned int* p, unsigned int v) { *(volatile unsigned int*)p = v; }
/*
 * 16 bytes of a host slot whose seq some lane of the warp acquired before a __syncwarp (which orders that
 * acquire before these loads). A plain load: measured on the H100, ld.relaxed.sys.v4 cost about four
 * PCIe round trips where a plain 16-byte load costs one.
 */
#ifndef RG_HOST_V4
#define RG_HOST_V4(p) (*(const uint4*)(p))
#endif
/* MPSC partition queue (device memory): producers reserve head by CAS, never past a full ring. */
__device__ static bool rg_queue_claim(rg_RingHeader* q, unsigned int cap, unsigned int budget, unsigned int* idx) {
  unsigned int waits = 0;
  for (;;) {
    unsigned int h = rg_ld_vol(&q->head);
    unsigned int tl = rg_ld_acq_gpu(&q->tail);
    if (h - tl < cap) {
      if (RG_QATOMIC(atomicCAS)(&q->head, h, h + 1u) == h) { *idx = h; return true; }
    } else {
      if (waits++ >= budget) return false;
      __nanosleep(256);
    }
  }
}
__device__ static inline unsigned char* rg_queue_slot(rg_RingHeader* q, unsigned int cap, unsigned int slotSize, unsigned int idx) {
  return (unsigned char*)q + RG_RING_HDR + (unsigned long long)(idx & (cap - 1u)) * slotSize;
}
#endif
