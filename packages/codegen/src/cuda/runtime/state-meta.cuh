/* Ringgrain CUDA runtime: the actor meta (dirty marks, last turn), the free-slot ring's place, and the dirty gather kernel (state-meta.ts has the layouts). */
#if defined(__CUDACC__)
static_assert(sizeof(rg_StateMeta) == RG_STATE_META_BYTES, "rg_StateMeta: its size in state-meta.ts");
/* NVRTC has no __builtin_offsetof: there the offsets are covered by the nvcc build of the same unit. */
RG_OFFSET_ASSERT(rg_StateMeta, lastActive, 0u, "rg_StateMeta.lastActive first (the turn's one vector store; state-meta.ts)");
RG_OFFSET_ASSERT(rg_StateMeta, dirty, 8u, "rg_StateMeta.dirty at 8 (state-meta.ts)");
RG_OFFSET_ASSERT(rg_StateMeta, busy, 12u, "rg_StateMeta.busy at 12 (state-meta.ts)");
static_assert(sizeof(rg_GatherHeader) <= RG_GATHER_KEYS_AT, "rg_GatherHeader fits before the keys");
/* The meta array: after maxActors states, rounded up (state-meta.ts stateRegion). */
__device__ static inline rg_StateMeta* rg_meta_of(const unsigned char* states, unsigned int maxActors) {
  const unsigned long long at = ((unsigned long long)sizeof(RG_G(state)) * maxActors + RG_STATE_REGION_ALIGN - 1ull) & ~(RG_STATE_REGION_ALIGN - 1ull);
  return (rg_StateMeta*)(states + at);
}
/* Entries of the free-slot ring (state-meta.ts freeRingCapacity): a power of two ≥ maxActors. */
RG_HD static inline unsigned int rg_free_cap(unsigned int maxActors) {
  unsigned int c = 1u;
  while (c < maxActors) c *= 2u;
  return c;
}
/* The free-slot ring: after the meta array (stateRegion freeAt). */
__device__ static inline unsigned int* rg_free_ring(const unsigned char* states, unsigned int maxActors) {
  return (unsigned int*)(rg_meta_of(states, maxActors) + maxActors);
}
/* Bytes of the states region for maxActors (stateRegion): what a host allocates and zeroes for the states parameter. */
RG_HD static inline unsigned long long rg_states_region_bytes(unsigned int maxActors) {
  return (((unsigned long long)sizeof(RG_G(state)) * maxActors + RG_STATE_REGION_ALIGN - 1ull) & ~(RG_STATE_REGION_ALIGN - 1ull)) + (unsigned long long)sizeof(rg_StateMeta) * maxActors + 4ull * rg_free_cap(maxActors);
}
/* Activation: the slot's key, for the gather (published by the first turn's release fence with its mark). */
__device__ static inline void rg_meta_activate(const unsigned char* states, unsigned int maxActors, unsigned int slot, unsigned int lo, unsigned int hi) {
  rg_StateMeta* m = rg_meta_of(states, maxActors) + slot;
  m->keyLo = lo;
  m->keyHi = hi;
}
/*
 * Before the handler of a turn that may store into the state: busy = 1, fenced before the handler's
 * stores, so a gather that copied any of them sees busy (or the mark the turn's end sets) afterwards.
 */
__device__ static __forceinline__ void rg_meta_enter(const unsigned char* states, unsigned int maxActors, const RG_G(state)* s) {
  const unsigned long long slot = (unsigned long long)((const unsigned char*)s - states) / sizeof(RG_G(state));
  rg_StateMeta* m = rg_meta_of(states, maxActors) + slot;
  asm volatile("st.relaxed.gpu.u32 [%0], %1;" : : "l"(&m->busy), "r"(1u) : "memory");
  asm volatile("fence.acq_rel.gpu;" : : : "memory");
}
/*
 * After that handler: its stores (and the key), then {lastActive = now, dirty = 1, busy = 0} as one
 * 16-byte store. The release fence orders them before the mark, so a gather whose exchange reads this
 * mark copies them; one whose exchange came before the store finds the mark set again (next gather).
 */
__device__ static __forceinline__ void rg_meta_touch(const unsigned char* states, unsigned int maxActors, const RG_G(state)* s, double now) {
  const unsigned long long slot = (unsigned long long)((const unsigned char*)s - states) / sizeof(RG_G(state));
  rg_StateMeta* m = rg_meta_of(states, maxActors) + slot;
  const unsigned long long t = (unsigned long long)__double_as_longlong(now);
  asm volatile("fence.acq_rel.gpu;" : : : "memory");
  asm volatile("st.relaxed.gpu.v4.u32 [%0], {%1, %2, %3, %4};" : : "l"(m), "r"((unsigned int)t), "r"((unsigned int)(t >> 32)), "r"(1u), "r"(0u) : "memory");
}
/* After a turn whose handler cannot store into the state: only the clock of its last turn (the mark stays as it was). */
__device__ static __forceinline__ void rg_meta_seen(const unsigned char* states, unsigned int maxActors, const RG_G(state)* s, double now) {
  const unsigned long long slot = (unsigned long long)((const unsigned char*)s - states) / sizeof(RG_G(state));
  rg_StateMeta* m = rg_meta_of(states, maxActors) + slot;
  asm volatile("st.relaxed.gpu.f64 [%0], %1;" : : "l"(&m->lastActive), "d"(now) : "memory");
}
/* One state's bytes, in the widest unit its size allows (rows and slots are then aligned to it); L2 loads (ld.cg): another SM wrote them. */
template <unsigned int U> struct rg_gather_word;
template <> struct rg_gather_word<16u> { typedef uint4 T; };
template <> struct rg_gather_word<8u> { typedef unsigned long long T; };
template <> struct rg_gather_word<4u> { typedef unsigned int T; };
template <> struct rg_gather_word<1u> { typedef unsigned char T; };
__device__ static inline void rg_gather_copy(unsigned char* d, const unsigned char* s) {
  constexpr unsigned int n = (unsigned int)sizeof(RG_G(state));
  constexpr unsigned int U = n % 16u == 0u ? 16u : n % 8u == 0u ? 8u : n % 4u == 0u ? 4u : 1u;
  typedef rg_gather_word<U>::T W;
#pragma unroll 4
  for (unsigned int i = 0; i < n / U; i++) ((W*)d)[i] = __ldcg((const W*)s + i);
}
/*
 * readDirty's device half, per slot in use: a set mark is exchanged to 0 and, unless a turn of the actor
 * is running, a row reserved (a warp takes its rows with one atomicAdd) and the key and state copied in.
 * The row is kept (flag 1) only if no turn overlapped the copy: busy still clear and no new mark after
 * it. Otherwise, or when a turn was running, the mark is set again (the next gather takes the actor) and
 * a reserved row is flagged 0 and counted in dropped (the host leaves it out). Runs beside the
 * persistent kernel, on the SMs it leaves free.
 */
extern "C" __global__ void __launch_bounds__(RG_GATHER_THREADS) RG_G(gather_dirty)(RG_GATHER_PARAMS) {
  unsigned int used = rg_ld_vol(&((const rg_DeviceGlobals*)globals)->stateNext);
  if (used > maxActors) used = maxActors;
  rg_StateMeta* meta = rg_meta_of(states, maxActors);
  rg_GatherHeader* head = (rg_GatherHeader*)out;
  unsigned long long* keys = (unsigned long long*)(out + RG_GATHER_KEYS_AT);
  const unsigned long long statesAt = (RG_GATHER_KEYS_AT + 8ull * maxActors + RG_STATE_REGION_ALIGN - 1ull) & ~(RG_STATE_REGION_ALIGN - 1ull);
  unsigned char* rows = out + statesAt;
  unsigned char* flags = out + ((statesAt + (unsigned long long)sizeof(RG_G(state)) * maxActors + RG_STATE_REGION_ALIGN - 1ull) & ~(RG_STATE_REGION_ALIGN - 1ull));
  const unsigned int lane = threadIdx.x & 31u;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  /* the loop test is on the warp's first slot, so whole warps iterate together (the ballot needs every lane) */
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i - lane < used; i += stride) {
    bool take = false;
    if (i < used && rg_ld_vol(&meta[i].dirty) != 0u && atomicExch(&meta[i].dirty, 0u) != 0u) {
      /* acquire: the writes the turn released before the mark this exchange read are seen below */
      asm volatile("fence.acq_rel.gpu;" : : : "memory");
      take = rg_ld_vol(&meta[i].busy) == 0u;
      if (!take) atomicExch(&meta[i].dirty, 1u); /* a turn runs: it is the next gather's */
    }
    const unsigned int ball = __ballot_sync(RG_FULL, take);
    if (ball == 0u) continue;
    unsigned int at = 0u;
    if (lane == 0u) at = atomicAdd(&head->count, (unsigned int)__popc(ball));
    at = __shfl_sync(RG_FULL, at, 0) + (unsigned int)__popc(ball & ((1u << lane) - 1u));
    if (take) {
      keys[at] = ((unsigned long long)__ldcg(&meta[i].keyHi) << 32) | __ldcg(&meta[i].keyLo);
      rg_gather_copy(rows + (unsigned long long)at * sizeof(RG_G(state)), states + i * sizeof(RG_G(state)));
      asm volatile("fence.acq_rel.gpu;" : : : "memory");
      const bool kept = rg_ld_vol(&meta[i].busy) == 0u && rg_ld_vol(&meta[i].dirty) == 0u;
      flags[at] = kept ? 1u : 0u;
      if (!kept) {
        atomicExch(&meta[i].dirty, 1u);
        atomicAdd(&head->dropped, 1u);
      }
    }
  }
}
#endif
