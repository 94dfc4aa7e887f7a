/* ---- actor residency: deactivation (residency.ts; codegen README "Persistent state on CUDA") ------- */
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
__device__ static inline unsigned char* rg_res_staging(const rg_ResidencyGlobals* r) { return rg_res_ptr(r->stagingLo, r->stagingHi); }
__device__ static inline rg_ResidencyHostBlock* rg_res_host(const rg_ResidencyGlobals* r) { return (rg_ResidencyHostBlock*)rg_res_ptr(r->hostLo, r->hostHi); }
__device__ static inline double rg_res_ld_f64(const double* p) { return *(const volatile double*)p; }
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
  r->before = rg_res_ld_f64(&h->before);
  r->now = rg_res_ld_f64(&h->now);
  r->installed = 0u;
  r->rejected = 0u;
  ((rg_GatherHeader*)rg_res_staging(r))->count = 0u;
  ((rg_GatherHeader*)rg_res_staging(r))->dropped = 0u;
  rg_st_rel_gpu(&r->seq, want); /* release: the words above before the workers see the request */
}

#if RG_HAS_ON_DEACTIVATE
/*
 * onDeactivate as a turn of the actor with the request's `now` (the CPU backend's order: before its
 * timers stop and its state is read out). A failure counts as a handler error and goes to the host as a
 * failed tell under the hook's method id (a tellError), as onActivate's does; the deactivation goes on.
 */
__device__ static __noinline__ void RG_G(on_deactivate)(rg_kernel* k, unsigned int* ctr, RG_G(state)* st, long long key, double now, unsigned int part, unsigned char* stage, unsigned int cap, rg_coop* co) {
  rg_turn t = {};
  rg_turn_init(&t, k, key, now, RG_HOOK_ON_DEACTIVATE, 0u, 0u, RG_HOST_SENDER, RG_SELF_ID, co);
  RG_TM_TURN(k, &t, st, part);
  const bool writes = RG_G(hook_writes)(RG_HOOK_ON_DEACTIVATE);
  if (writes && k->metaOn) rg_meta_enter(k->states, k->maxActors, st);
  const int rc = RG_G(hook)(&t, st, RG_HOOK_ON_DEACTIVATE);
  if (writes && k->metaOn) rg_meta_touch(k->states, k->maxActors, st, now);
  ctr[RG_C_K2K_SENT] += t.sent;
  if (rc > RG_FORWARDED) {
    ctr[RG_C_HANDLER_ERRORS]++;
    rg_reply_text(k, stage, cap, RG_HOOK_ON_DEACTIVATE, RG_REPLY | RG_ERROR, 0u, rg_turn_error(&t, rc));
  }
}
#endif

/*
 * Deactivates one actor of this worker (entry e, READY and ours): onDeactivate, its timers stopped (a
 * freed slot must hold no armed timer: the scan reads every slot below stateNext), its dirty mark taken
 * (the gather reads marks of every slot below stateNext too), key + state + mark into a staging row, then
 * the entry a tombstone and the slot onto the free-slot ring. The tombstone is released after the row's
 * stores and before the slot is freed: an insert that takes the slot zeroes it after that.
 */
__device__ static void RG_G(res_evict)(rg_kernel* k, unsigned int* ctr, rg_DirEntry* e, unsigned int part, double now, unsigned char* stage, unsigned int cap, rg_coop* co) {
  const unsigned int slot = e->slot, lo = e->keyLo, hi = e->keyHi;
  RG_G(state)* st = (RG_G(state)*)(k->states + (unsigned long long)slot * sizeof(RG_G(state)));
#if RG_HAS_ON_DEACTIVATE
  if (k->hooksOn) RG_G(on_deactivate)(k, ctr, st, RG_KEY_OF(lo, hi), now, part, stage, cap, co);
#else
  (void)ctr; (void)now; (void)stage; (void)cap; (void)co;
#endif
  RG_TM_DEACTIVATE(k, st, part);
  rg_StateMeta* m = rg_meta_of(k->states, k->maxActors) + slot;
  const unsigned int dirty = atomicExch(&m->dirty, 0u);
  unsigned char* out = rg_res_staging(k->res);
  const unsigned int at = atomicAdd(&((rg_GatherHeader*)out)->count, 1u);
  ((unsigned long long*)(out + RG_GATHER_KEYS_AT))[at] = ((unsigned long long)hi << 32) | lo;
  rg_gather_copy(out + rg_res_states_at(k->maxActors) + (unsigned long long)at * sizeof(RG_G(state)), (const unsigned char*)st);
  out[rg_res_flags_at(k->maxActors) + at] = dirty != 0u ? 1u : 0u;
  m->lastActive = 0.0;
  m->busy = 0u;
  __threadfence();
  rg_st_rel_gpu(&e->state, RG_DIR_DEAD);
  rg_slot_free(k, slot);
}

/*
 * Every READY entry of this worker whose actor's last turn is before `before` (Infinity: all), deactivated
 * in directory order. Lane 0 alone (the other lanes help the hooks through `co`): a deactivation walks
 * the whole directory once per worker; entries of other partitions are passed on one load.
 */
__device__ static unsigned int RG_G(res_deactivate)(rg_kernel* k, unsigned int* ctr, unsigned int part, double before, double now, unsigned char* stage, unsigned int cap, rg_coop* co) {
  const unsigned int ready = RG_DIR_READY | ((part + 1u) << RG_DIR_OWNER_SHIFT);
  const rg_StateMeta* meta = rg_meta_of(k->states, k->maxActors);
  unsigned int n = 0u;
  for (unsigned int i = 0; i < k->dirCapacity; i++) {
    rg_DirEntry* e = &k->directory[i];
    if (rg_ld_vol(&e->state) != ready) continue;
    if (!(meta[e->slot].lastActive < before)) continue;
    RG_G(res_evict)(k, ctr, e, part, now, stage, cap, co);
    n++;
  }
  return n;
}

/*
 * Worker p, lane 0: services the request the control warp relayed, if this worker has not yet, and
 * acknowledges it (after its counter row, so the host's idle check sees the hooks' counts with it).
 * Returns whether it did anything (the caller ends the lanes' help and moves on).
 */
__device__ static bool RG_G(res_service)(rg_kernel* k, unsigned int* ctr, unsigned int p, unsigned char* stage, unsigned int cap, rg_coop* co) {
  rg_ResidencyGlobals* r = k->res;
  const unsigned int seq = rg_ld_acq_gpu(&r->seq);
  unsigned int* ack = rg_res_acks(r) + p;
  if (seq == rg_ld_vol(ack)) return false;
  if (r->op == RG_RES_OP_DEACTIVATE) RG_G(res_deactivate)(k, ctr, p, r->before, r->now, stage, cap, co);
  __threadfence();
  rg_st_rel_gpu(ack, seq);
  return true;
}
