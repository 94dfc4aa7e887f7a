/* Host versions of the runtime's inline-PTX helpers (residency-loops.ts hostUnit puts each where its device version
   was): sequentially consistent host atomics. One section per function, each after a line naming it. */
/* @rg_ld_acq_sys */
static inline unsigned int rg_ld_acq_sys(const unsigned int* p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
/* @rg_ld_acq_gpu */
static inline unsigned int rg_ld_acq_gpu(const unsigned int* p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
/* @rg_st_rel_sys */
static inline void rg_st_rel_sys(unsigned int* p, unsigned int v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
/* @rg_st_rel_gpu */
static inline void rg_st_rel_gpu(unsigned int* p, unsigned int v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
/* @rg_ld_acq_gpu_u64 */
static inline unsigned long long rg_ld_acq_gpu_u64(const unsigned long long* p) {
  return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}
/* @rg_exch_acq_rel_gpu */
static inline unsigned int rg_exch_acq_rel_gpu(unsigned int* p, unsigned int v) {
  return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
/* @rg_xchg_acq_gpu */
static inline unsigned int rg_xchg_acq_gpu(unsigned int* p, unsigned int v) {
  return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
/* @rg_ld_rlx_gpu_v4 */
static inline uint4 rg_ld_rlx_gpu_v4(const void* p) {
  const unsigned int* q = (const unsigned int*)p;
  return {__atomic_load_n(q, __ATOMIC_SEQ_CST), __atomic_load_n(q + 1, __ATOMIC_SEQ_CST),
          __atomic_load_n(q + 2, __ATOMIC_SEQ_CST), __atomic_load_n(q + 3, __ATOMIC_SEQ_CST)};
}
/* @rg_meta_enter */
static inline void rg_meta_enter(const unsigned char* states, unsigned int maxActors, const RG_G(state)* s) {
  rg_StateMeta* m = rg_meta_of(states, maxActors) + (unsigned long long)((const unsigned char*)s - states) / sizeof(*s);
  __atomic_store_n(&m->busy, 1u, __ATOMIC_SEQ_CST);
}
/* @rg_meta_touch */
static inline void rg_meta_touch(const unsigned char* states, unsigned int maxActors, const RG_G(state)* s, double now) {
  rg_StateMeta* m = rg_meta_of(states, maxActors) + (unsigned long long)((const unsigned char*)s - states) / sizeof(*s);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  m->lastActive = now;
  __atomic_store_n(&m->dirty, 1u, __ATOMIC_SEQ_CST);
  __atomic_store_n(&m->busy, 0u, __ATOMIC_SEQ_CST);
}
/* @rg_meta_seen */
static inline void rg_meta_seen(const unsigned char* states, unsigned int maxActors, const RG_G(state)* s, double now) {
  rg_StateMeta* m = rg_meta_of(states, maxActors) + (unsigned long long)((const unsigned char*)s - states) / sizeof(*s);
  m->lastActive = now;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
