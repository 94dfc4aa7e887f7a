/*
 * Ringgrain CUDA runtime: actor residency, deactivation (included by residency.cuh, inside its guard). An actor
 * leaves on a host request (its final state into the staging batch) or when a full table makes room (onto the
 * evict ring): onDeactivate, its timers stopped, its dirty mark taken, its entry a tombstone, its slot freed.
 */
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
  RG_REM_TURN(k, &t);
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
 * Posts a deactivated actor on the evict ring (pinned host memory after the load-request ring): a reserved
 * index, key, dirty mark and final state, then seq = index + 1 released at system scope. A producer that
 * would lap the host's tail waits for it (the host drains the ring at every poll). Posted before the
 * actor's entry dies: a later miss of the key posts its load after this row, and the host reads the loads
 * it sees before the rows (ResidencyHost.pollLoads), so it always has the final state first.
 */
__device__ static void rg_res_post_evict(rg_kernel* k, unsigned int lo, unsigned int hi, const unsigned char* st, unsigned int dirty) {
  rg_ResidencyGlobals* r = k->res;
  rg_ResidencyHostBlock* h = rg_res_host(r);
  unsigned char* ring = (unsigned char*)(h + 1) + (unsigned long long)sizeof(rg_LoadRequest) * r->loadCapacity;
  const unsigned int cap = r->evictCapacity;
  const unsigned int i = atomicAdd(&r->evictReserve, 1u);
  while (i - rg_ld_vol(&r->evictTailSeen) >= cap) {
    const unsigned int t = rg_ld_acq_sys(&h->evictTail);
    rg_st_vol(&r->evictTailSeen, t);
    if (i - t < cap) break;
    RG_RES_WAIT();
  }
  unsigned char* row = ring + (unsigned long long)(i & (cap - 1u)) * r->evictStride;
  rg_EvictRow* q = (rg_EvictRow*)row;
  q->keyLo = lo;
  q->keyHi = hi;
  q->dirty = dirty;
  rg_gather_copy(row + sizeof(rg_EvictRow), st);
  __threadfence_system();
  rg_st_rel_sys(&q->seq, i + 1u);
}

/*
 * Deactivates one actor of this worker (entry e, READY and ours): onDeactivate, its timers stopped (a
 * freed slot must hold no armed timer: the scan reads every slot below stateNext), its dirty mark taken
 * (the gather reads marks of every slot below stateNext too), key + state + mark into a staging row (a
 * host request) or onto the evict ring (`ring`: making room), then the entry a tombstone and the slot
 * onto the free-slot ring. The tombstone is released after the row's stores and before the slot is freed:
 * an insert that takes the slot zeroes it after that.
 */
__device__ static void RG_G(res_evict)(rg_kernel* k, unsigned int* ctr, rg_DirEntry* e, unsigned int part, double now, unsigned char* stage, unsigned int cap, rg_coop* co, bool ring = false) {
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
  if (ring) {
    rg_res_post_evict(k, lo, hi, (const unsigned char*)st, dirty != 0u ? 1u : 0u);
  } else {
    unsigned char* out = rg_res_staging(k->res);
    const unsigned int at = atomicAdd(&((rg_GatherHeader*)out)->count, 1u);
    ((unsigned long long*)(out + RG_GATHER_KEYS_AT))[at] = ((unsigned long long)hi << 32) | lo;
    rg_gather_copy(out + rg_res_states_at(k->maxActors) + (unsigned long long)at * sizeof(RG_G(state)), (const unsigned char*)st);
    out[rg_res_flags_at(k->maxActors) + at] = dirty != 0u ? 1u : 0u;
  }
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
__device__ static unsigned int RG_G(res_drop)(rg_kernel* k, unsigned int* ctr, rg_DirEntry* e, unsigned int failure, const char* text, unsigned int tn, unsigned char* stage, unsigned int cap);
#define RG_RES_STOPPED_TEXT "the kernel stopped before the actor's state was loaded"
__device__ static unsigned int RG_G(res_deactivate)(rg_kernel* k, unsigned int* ctr, unsigned int part, double before, double now, unsigned char* stage, unsigned int cap, rg_coop* co) {
  const unsigned int ready = RG_DIR_READY | ((part + 1u) << RG_DIR_OWNER_SHIFT);
  const rg_StateMeta* meta = rg_meta_of(k->states, k->maxActors);
  unsigned int n = 0u;
  const bool all = before > 1.7976931348623157e308; /* Infinity: the kernel stops */
  for (unsigned int i = 0; i < k->dirCapacity; i++) {
    rg_DirEntry* e = &k->directory[i];
    const unsigned int s = rg_ld_vol(&e->state);
    if (all && s == (ready | RG_DIR_LOADING)) {
      RG_G(res_drop)(k, ctr, e, 0u, RG_RES_STOPPED_TEXT, (unsigned int)sizeof(RG_RES_STOPPED_TEXT) - 1u, stage, cap);
      continue;
    }
    if (s != ready) continue;
    if (!(meta[e->slot].lastActive < before)) continue;
    RG_G(res_evict)(k, ctr, e, part, now, stage, cap, co);
    n++;
  }
  return n;
}

/* ---- making room: a full table deactivates idle actors (issue 30 item 6) ------------------------------- */
/*
 * A new key that finds no free slot, in a class with idleMs (ResidencyGlobals.idleMs finite), does what the
 * CPU backend does in the lane that meets a full table: every actor idle for idleMs (its last turn before
 * now - idleMs, `now` the new message's clock) is deactivated, onDeactivate with that clock, its final state
 * and dirty mark onto the evict ring, the slot freed; then the key takes a slot. Only an actor's own worker
 * may deactivate it, so the worker raises a room request (roomEpoch, roomNow) and every worker answers it
 * in its room word after deactivating its own idle actors: at its loop's residency check (every 64th round
 * and every idle one), or while it waits for room itself. The worker that asked takes a slot as soon as
 * one is free; once every worker has answered and none is, the message is rejected (StateTableFullError,
 * counted): nothing could be deactivated. A worker in lane-parallel turns answers without deactivating
 * (another lane may be in a turn of one of its actors); worker.cuh runs one turn at a time once fewer free
 * slots remain than 32 per worker (rg_res_tight), so that case is rare.
 */

/* Every READY actor of worker `part` whose last turn is before `before`, deactivated onto the evict ring. */
__device__ static unsigned int RG_G(res_evict_idle)(rg_kernel* k, unsigned int* ctr, unsigned int part, double before, double now, rg_coop* co) {
  const unsigned int ready = RG_DIR_READY | ((part + 1u) << RG_DIR_OWNER_SHIFT);
  const rg_StateMeta* meta = rg_meta_of(k->states, k->maxActors);
  unsigned int n = 0u;
  for (unsigned int i = 0; i < k->dirCapacity; i++) {
    rg_DirEntry* e = &k->directory[i];
    if (rg_ld_vol(&e->state) != ready) continue;
    if (!(meta[e->slot].lastActive < before)) continue;
    /* no stage: a message's turn may be waiting for this room with its request in the stage */
    RG_G(res_evict)(k, ctr, e, part, now, 0, 0u, co, true);
    n++;
  }
  if (n) atomicAdd(&k->res->madeRoom, n);
  return n;
}

/* Whether a room request waits for worker p's answer (lane 0: two L2 loads). */
__device__ static inline bool rg_res_room_pending(rg_kernel* k, unsigned int p) {
  return rg_ld_vol(&k->res->roomEpoch) != rg_ld_vol(rg_res_rooms(k->res) + p);
}

/*
 * Worker p answers the newest room request, if it has not: its idle actors deactivated (unless `evict` is
 * false: in lane-parallel turns), then its room word set to the request it answered (release).
 */
__device__ static void RG_G(res_room_service)(rg_kernel* k, unsigned int* ctr, unsigned int p, rg_coop* co, bool evict) {
  rg_ResidencyGlobals* r = k->res;
  const unsigned int epoch = rg_ld_acq_gpu(&r->roomEpoch);
  unsigned int* mine = rg_res_rooms(r) + p;
  if (rg_ld_vol(mine) == epoch) return;
  if (evict) {
    const double now = rg_res_ld_f64(&r->roomNow);
    RG_G(res_evict_idle)(k, ctr, p, now - r->idleMs, now, co);
  }
  __threadfence();
  rg_st_rel_gpu(mine, epoch);
}

/*
 * Fewer free slots than 32 per worker while the class makes room (lane 0): worker.cuh then runs one turn
 * at a time, so a turn that meets a full table can deactivate its own worker's idle actors.
 */
__device__ static inline bool rg_res_tight(rg_kernel* k) {
  if (!k->res || !(k->res->idleMs < 1.7976931348623157e308)) return false;
  const unsigned int next = rg_ld_vol(&k->g->stateNext);
  const unsigned int fresh = next < k->maxActors ? k->maxActors - next : 0u;
  const unsigned int freed = rg_ld_vol(&k->g->freeTail) - rg_ld_vol(&k->g->freeHead);
  return (unsigned long long)fresh + ((int)freed > 0 ? freed : 0u) < 32ull * k->partitions;
}

/*
 * The insert of key lo/hi (entry word `word`) that found no slot: a room request with the message's clock
 * `now`, then inserts tried until one takes a slot or every worker answered (then once more). `alone`: a
 * one-lane turn (it may deactivate its own worker's actors). Returns the new actor's state (0: still full,
 * or the class has no idleMs).
 */
__device__ static RG_G(state)* RG_G(res_room)(rg_kernel* k, unsigned int* ctr, unsigned int home, unsigned int lo, unsigned int hi, unsigned int word, unsigned int part, double now, bool alone, rg_coop* co) {
  rg_ResidencyGlobals* r = k->res;
  if (!r || !(r->idleMs < 1.7976931348623157e308)) return 0;
  /* the newest clock wins (a message's clock is ≥ 0: the f64's bits order as its values) */
  atomicMax((unsigned long long*)&r->roomNow, (unsigned long long)__double_as_longlong(now > 0.0 ? now : 0.0));
  __threadfence();
  const unsigned int epoch = atomicAdd(&r->roomEpoch, 1u) + 1u;
  const unsigned int* rooms = rg_res_rooms(r);
  for (;;) {
    RG_G(res_room_service)(k, ctr, part, co, alone);
    RG_G(state)* s = RG_G(insert)(k, ctr, home, lo, hi, word);
    if (s) return s;
    bool all = true;
    for (unsigned int q = 0; q < k->partitions && all; q++) all = (int)(rg_ld_acq_gpu(&rooms[q]) - epoch) >= 0;
    if (all) return RG_G(insert)(k, ctr, home, lo, hi, word); /* slots freed after our last try */
    RG_RES_ROOM_WAIT(k, ctr, part, co, alone);
  }
}

/*
 * The activation of a class without storage that activate did not find (turn-run.cuh): either no slot was
 * free, or its walk met no EMPTY entry (tombstones everywhere: rg_res_reach) and proved the key absent. An
 * insert first (a free slot takes it without deactivating anything), then a room request.
 */
__device__ static RG_G(state)* RG_G(res_room_activate)(rg_kernel* k, unsigned int* ctr, long long key, unsigned int part, double now, bool alone, rg_coop* co) {
  const unsigned long long u = (unsigned long long)key;
  const unsigned long long hsh = (u ^ (u >> 33)) * 0xFF51AFD7ED558CCDULL;
  const unsigned int home = (unsigned int)(hsh ^ (hsh >> 29)) & (k->dirCapacity - 1u);
  const unsigned int lo = (unsigned int)u, hi = (unsigned int)(u >> 32), ready = RG_DIR_READY | ((part + 1u) << RG_DIR_OWNER_SHIFT);
  RG_G(state)* s = RG_G(insert)(k, ctr, home, lo, hi, ready);
  return s ? s : RG_G(res_room)(k, ctr, home, lo, hi, ready, part, now, alone, co);
}
