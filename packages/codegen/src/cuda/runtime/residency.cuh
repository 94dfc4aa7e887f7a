/*
 * Ringgrain CUDA runtime: actor residency (residency.ts; codegen README "Persistent state on CUDA"): the host's
 * requests, relayed by the control warp and serviced by every worker for the actors it owns. Deactivation and
 * making room are in residency-evict.cuh, loading on first message and installs in residency-load.cuh (included
 * below, in this order: the loading side makes room and drops through the deactivation side).
 */
#if defined(__CUDACC__) || defined(RG_RESIDENCY_HOST_TEST)
/*
 * One host request at a time (ResidencyHostBlock.seq). The control warp relays it into
 * rg_ResidencyGlobals (rg_res_control), every worker services it for the actors it owns between its
 * batches (RG_G(res_service)) and acknowledges in its ack word, and once every ack is in the control
 * warp publishes the counts and doneSeq to the host. A worker owns the directory entries tagged with its
 * partition and runs every turn of their actors itself, so nothing else touches an actor it deactivates.
 *
 * Needs (from the unit): rg_kernel with `res` (0: the class keeps no residency) and `resPublished`,
 * rg_meta_of, rg_gather_copy, rg_slot_free, RG_TM_DEACTIVATE, rg_turn_init, the class's hook dispatch
 * (RG_G(hook), RG_G(hook_writes)), rg_reply_text, and the RG_RES_* constants (residencyConstants()).
 */
__device__ static inline unsigned char* rg_res_ptr(unsigned int lo, unsigned int hi) {
  return (unsigned char*)(((unsigned long long)hi << 32) | lo);
}
__device__ static inline unsigned int* rg_res_acks(const rg_ResidencyGlobals* r) { return (unsigned int*)rg_res_ptr(r->acksLo, r->acksHi); }
/* The parked-message FIFO of actor slot `slot`: [0] head, [1] tail (overflow-pool node refs, 0: none). */
__device__ static inline unsigned int* rg_res_park(const rg_ResidencyGlobals* r, unsigned int slot) { return (unsigned int*)rg_res_ptr(r->parksLo, r->parksHi) + 2ull * slot; }
__device__ static inline unsigned char* rg_res_staging(const rg_ResidencyGlobals* r) { return rg_res_ptr(r->stagingLo, r->stagingHi); }
__device__ static inline rg_ResidencyHostBlock* rg_res_host(const rg_ResidencyGlobals* r) { return (rg_ResidencyHostBlock*)rg_res_ptr(r->hostLo, r->hostHi); }
__device__ static inline double rg_res_ld_f64(const double* p) { return *(const volatile double*)p; }
/* The room word of each worker: the last room request it answered (rg_res_room_service). */
__device__ static inline unsigned int* rg_res_rooms(const rg_ResidencyGlobals* r) { return (unsigned int*)rg_res_ptr(r->roomsLo, r->roomsHi); }
/* The staging batch's parts (state-meta.ts gatherLayout, residencyLayout staging). */
__device__ static inline unsigned long long rg_res_states_at(unsigned int maxActors) {
  return (RG_GATHER_KEYS_AT + 8ull * maxActors + RG_STATE_REGION_ALIGN - 1ull) & ~(RG_STATE_REGION_ALIGN - 1ull);
}
__device__ static inline unsigned long long rg_res_flags_at(unsigned int maxActors) {
  return (rg_res_states_at(maxActors) + (unsigned long long)sizeof(RG_G(state)) * maxActors + RG_STATE_REGION_ALIGN - 1ull) & ~(RG_STATE_REGION_ALIGN - 1ull);
}

/*
 * Control warp, lane 0, once a loop. A new host request is taken only once the previous one was
 * published (so the counts it reports are its own): its words are copied, the per-request counters and
 * the staging count zeroed, then seq released to the workers. A relayed request whose acks are all in is
 * published: counts first, then doneSeq, each at system scope.
 */
__device__ static void rg_res_control(rg_kernel* k) {
  rg_ResidencyGlobals* r = k->res;
  if (!r) return;
  rg_ResidencyHostBlock* h = rg_res_host(r);
  const unsigned int cur = r->seq; /* this warp is its only writer */
  if (cur != k->resPublished) {
    const unsigned int* acks = rg_res_acks(r);
    for (unsigned int p = 0; p < k->partitions; p++)
      if (rg_ld_acq_gpu(&acks[p]) != cur) return;
    const rg_GatherHeader* staged = (const rg_GatherHeader*)rg_res_staging(r);
    h->evicted = r->op == RG_RES_OP_DEACTIVATE ? rg_ld_vol(&staged->count) : 0u;
    h->installed = rg_ld_vol(&r->installed);
    h->rejected = rg_ld_vol(&r->rejected);
    __threadfence_system();
    rg_st_rel_sys(&h->doneSeq, cur);
    k->resPublished = cur;
    return;
  }
  const unsigned int want = rg_ld_acq_sys(&h->seq);
  if (want == cur) return;
  /* after the acquire of seq: the host's words of this request */
  r->op = rg_ld_vol(&h->op);
  r->rows = rg_ld_vol(&h->rows);
  r->mode = rg_ld_vol(&h->mode);
  r->errorLength = rg_ld_vol(&h->errorLength);
  r->failureId = rg_ld_vol(&h->failureId);
  r->before = rg_res_ld_f64(&h->before);
  r->now = rg_res_ld_f64(&h->now);
  r->installed = 0u;
  r->rejected = 0u;
  ((rg_GatherHeader*)rg_res_staging(r))->count = 0u;
  ((rg_GatherHeader*)rg_res_staging(r))->dropped = 0u;
  rg_st_rel_gpu(&r->seq, want); /* release: the words above before the workers see the request */
}

/*
 * Control warp, lane 0, once the kernel stopped (STOP acknowledged, mode RG_MODE_RESIDENT): requests go on
 * being relayed and published, as core deactivates and flushes a stopped kernel's actors; true once the
 * host asked it to exit (RG_RES_OP_EXIT, relayed at any time: dispose may send it before STOP is drained,
 * and nothing follows it).
 */
__device__ static bool rg_res_stopped(rg_kernel* k) {
  rg_res_control(k);
  return k->res->op == RG_RES_OP_EXIT;
}

/* Deactivation: on a host request (into the staging batch) or making room in a full table (onto the evict ring). */
#include "residency-evict.cuh"
/* Loading on first message (parked messages, the load-request ring), failed loads, installs. */
#include "residency-load.cuh"

/*
 * Worker p, lane 0: services the request the control warp relayed, if this worker has not yet. Returns
 * its number (0: nothing to do); the worker stores its counter row, then acknowledges (rg_res_ack), so
 * the host sees the hooks' and replayed turns' counts no later than the answer.
 */
__device__ static unsigned int RG_G(res_service)(rg_kernel* k, unsigned int* ctr, unsigned int p, unsigned char* stage, unsigned int cap, unsigned char* scratch, rg_coop* co) {
  rg_ResidencyGlobals* r = k->res;
  const unsigned int seq = rg_ld_acq_gpu(&r->seq);
  if (seq == rg_ld_vol(rg_res_acks(r) + p)) return 0u;
  if (r->op == RG_RES_OP_DEACTIVATE) RG_G(res_deactivate)(k, ctr, p, r->before, r->now, stage, cap, co);
  else if (r->op == RG_RES_OP_INSTALL) RG_G(res_install)(k, ctr, p, stage, cap, scratch, co);
  return seq;
}
/* Worker p has finished request `seq` (its stores before, release). */
__device__ static inline void rg_res_ack(rg_kernel* k, unsigned int p, unsigned int seq) {
  __threadfence();
  rg_st_rel_gpu(rg_res_acks(k->res) + p, seq);
}
/* Whether a request waits for worker p (lane 0: one L2 load each). */
__device__ static inline bool rg_res_pending(rg_kernel* k, unsigned int p) {
  return rg_ld_vol(&k->res->seq) != rg_ld_vol(rg_res_acks(k->res) + p);
}
#endif
