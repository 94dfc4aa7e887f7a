/* Ringgrain CUDA runtime: actor residency (residency.ts; codegen README "Persistent state on CUDA"): deactivation, loading on first message, installs. */
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

/* ---- actor residency: loading on first message and installs (step 3) ---------------------------------- */
/*
 * With the class's storage (k->loadOn), a message for an actor this worker does not hold does not make a
 * zeroed actor: the worker inserts a LOADING entry (RG_DIR_LOADING | its READY word: skipped by every
 * other lookup and insert, so the key is held once), parks the message, and every later one it takes for
 * that key, in the actor's FIFO of overflow-pool nodes (head/tail refs in the slot's StateMeta), and posts
 * the key on the load-request ring. An install request (writeStates) then copies the stored state in, makes
 * the entry READY, runs the declared timers and onActivate, and replays the parked messages in order as
 * turns (already counted received). A failed load rejects exactly the parked messages and drops the entry.
 */

/* The node of overflow-pool ref `ref` (a parked message's copy follows its header). */
__device__ static inline unsigned char* rg_res_node(rg_kernel* k, unsigned int ref) {
  return rg_ov_node(k->overflow, k->partitions, RG_OV_NODE_HDR + k->slotSize, ref);
}

/*
 * How far a lookup of this kernel's residency probes. An entry never turns EMPTY again (a deactivated actor
 * leaves a tombstone, directory.cuh), so once keys have come and gone past every entry no EMPTY is left to
 * stop at: a lookup that stopped only there walked the whole directory, and res_lookup took the walk's end
 * for a full table (the 100,000-key case through 1,024 slots and 2,048 entries rejected 345 messages on the
 * H200 at a56e4f3). Every insert here records how far from its key's home its entry lies (probeMax, raised
 * by the worker that owns the key and alone looks it up later), so a lookup may stop past that distance.
 */
/* Only a class that loads inserts through here alone (its turns find their actors in res_lookup first): another's
   turns insert in activate, unrecorded, so its lookups here walk on to an EMPTY entry as activate does. */
__device__ static inline unsigned int rg_res_reach(rg_kernel* k) { return k->loadOn ? rg_ld_vol(&k->res->probeMax) : k->dirCapacity; }
/* The entry `word` of lo/hi that an insert from `home` just made, its distance from home recorded. */
__device__ static rg_DirEntry* rg_res_placed(rg_kernel* k, unsigned int home, unsigned int lo, unsigned int hi, unsigned int word) {
  const unsigned int mask = k->dirCapacity - 1u;
  for (unsigned int j = home;; j = (j + 1u) & mask) {
    rg_DirEntry* f = &k->directory[j];
    if (f->state != word || f->keyLo != lo || f->keyHi != hi) continue;
    const unsigned int d = (j - home) & mask;
    if (d > rg_ld_vol(&k->res->probeMax)) atomicMax(&k->res->probeMax, d);
    return f;
  }
}

/*
 * Posts `lo, hi` on the load-request ring (pinned host memory after the host block): a reserved index,
 * the key, then seq = index + 1 released at system scope. A producer that would lap the host's tail waits
 * for it (the host drains the ring at every poll, also while a request of its own is in flight).
 */
__device__ static void rg_res_post_load(rg_kernel* k, unsigned int lo, unsigned int hi) {
  rg_ResidencyGlobals* r = k->res;
  rg_ResidencyHostBlock* h = rg_res_host(r);
  rg_LoadRequest* ring = (rg_LoadRequest*)(h + 1);
  const unsigned int cap = r->loadCapacity;
  const unsigned int i = atomicAdd(&r->loadReserve, 1u);
  while (i - rg_ld_vol(&r->loadTailSeen) >= cap) {
    const unsigned int t = rg_ld_acq_sys(&h->loadTail);
    rg_st_vol(&r->loadTailSeen, t);
    if (i - t < cap) break;
    RG_RES_WAIT();
  }
  rg_LoadRequest* q = ring + (i & (cap - 1u));
  q->keyLo = lo;
  q->keyHi = hi;
  rg_st_rel_sys(&q->seq, i + 1u);
}

/*
 * Parks the message in `msg` (header + payload, its device copy) on the actor of `slot`: a copy in a pool
 * node appended to the actor's FIFO. false: every node is taken (the caller rejects the message).
 */
__device__ static bool RG_G(res_park)(rg_kernel* k, unsigned int slot, const unsigned char* msg) {
  if (k->overflowNodes == 0u) return false;
  const unsigned int ref = rg_ov_alloc(k->overflow, k->partitions, k->overflowNodes, RG_OV_NODE_HDR + k->slotSize);
  if (ref == 0u) {
    atomicAdd(&k->res->parkRefused, 1u);
    return false;
  }
  unsigned char* node = rg_res_node(k, ref);
  const unsigned int n = RG_HDR + ((const rg_SlotHeader*)msg)->length;
  for (unsigned int at = 0; at < n; at += 4u) *(unsigned int*)(node + RG_OV_NODE_HDR + at) = *(const unsigned int*)(msg + at);
  unsigned int* q = rg_res_park(k->res, slot);
  if (q[1] == 0u) q[0] = ref;
  else ((rg_OverflowNode*)rg_res_node(k, q[1]))->link = ref;
  q[1] = ref;
  atomicAdd(&k->res->parked, 1u);
  return true;
}

/*
 * The directory lookup of a class that loads (k->loadOn): as RG_G(activate), but an absent key gets a
 * LOADING entry (its load posted) and a LOADING entry of ours is reported as such. Returns the entry (0:
 * the table is full); *loading says whether the actor waits for its state.
 */
__device__ static rg_DirEntry* RG_G(res_lookup)(rg_kernel* k, unsigned int* ctr, long long key, unsigned int part, bool* loading, double now, bool alone, rg_coop* co) {
  const unsigned int ready = RG_DIR_READY | ((part + 1u) << RG_DIR_OWNER_SHIFT);
  const unsigned long long u = (unsigned long long)key;
  const unsigned int lo = (unsigned int)u, hi = (unsigned int)(u >> 32);
  const unsigned long long hsh = (u ^ (u >> 33)) * 0xFF51AFD7ED558CCDULL;
  const unsigned int mask = k->dirCapacity - 1u;
  const unsigned int home = (unsigned int)(hsh ^ (hsh >> 29)) & mask;
  unsigned int reach = ~0u; /* read at the first entry passed: a key found at its home costs no load of it */
  unsigned int i = home;
  for (unsigned int probe = 0; probe < k->dirCapacity; probe++, i = (i + 1u) & mask) {
    rg_DirEntry* e = &k->directory[i];
    const unsigned int s = rg_ld_vol(&e->state);
    if ((s == ready || s == (ready | RG_DIR_LOADING)) && e->keyLo == lo && e->keyHi == hi) {
      *loading = s != ready;
      return e;
    }
    if (s == RG_DIR_EMPTY) break;
    if (reach == ~0u) reach = rg_res_reach(k);
    if (probe >= reach) break; /* the key is absent (rg_res_reach) */
  }
  /* absent: a LOADING entry, taken from the key's home as every insert does (found again below) */
  const unsigned int acts = ctr[RG_C_ACTIVATIONS];
  if (!RG_G(insert)(k, ctr, home, lo, hi, ready | RG_DIR_LOADING) && !RG_G(res_room)(k, ctr, home, lo, hi, ready | RG_DIR_LOADING, part, now, alone, co)) return 0;
  ctr[RG_C_ACTIVATIONS] = acts; /* counted when its state is installed, as the CPU backend counts */
  rg_res_post_load(k, lo, hi);
  *loading = true;
  return rg_res_placed(k, home, lo, hi, ready | RG_DIR_LOADING);
}

/* The text of a message rejected because every overflow-pool node holds a parked message. */
#define RG_RES_POOL_FULL "state load: every overflow-pool node holds a waiting message (parked while actors' states load); raise the overflow pool or load fewer actors at once"

/*
 * The turn of a class that loads (k->loadOn), before decoding: RG_RES_PARKED when the message was parked
 * (the actor waits for its state; the turn ends here, counted received), RG_RES_FULL when no slot is left
 * for it, a rejection text, or 0 when the actor is READY here (the turn goes on; its activation finds it).
 */
__device__ static const char* RG_G(res_wait)(rg_kernel* k, unsigned int* ctr, long long key, unsigned int part, const unsigned char* slot, double now, bool alone, rg_coop* co) {
  bool loading = false;
  rg_DirEntry* e = RG_G(res_lookup)(k, ctr, key, part, &loading, now, alone, co);
  if (!e) return RG_RES_FULL; /* the turn replies the typed error (RG_TE_STATE_TABLE_FULL) */
  if (!loading) return 0;
  return RG_G(res_park)(k, e->slot, slot) ? RG_RES_PARKED : RG_RES_POOL_FULL;
}

/*
 * The actor of a LOADING entry leaves without having run: its parked messages fail with the load failure
 * (`failure`: StateLoadError.failureId, 0 when the kernel stopped), the entry dies, the slot is freed.
 */
/*
 * A failed load's reply as data (core turn-error.ts): [STATE_LOAD, [failure, text]], from which the host
 * finds its StateLoadError by failureId; the text (tn bytes read through L2, __ldcg) says what failed when
 * the host no longer holds it. The text is the install board's, which the host rewrites between installs
 * (an L1 line of an earlier install's text must not be read), or a literal. Written from the source, with
 * no copy on the stack: a 1 KiB text buffer in res_install raised every unit's stack frame from 256 to
 * 1,312 bytes a thread (VectorAdd, nvcc sm_90), classes without storage too.
 */
#ifndef RG_RESIDENCY_HOST_TEST /* the g++ harness records replies with a stand-in */
__device__ static void rg_res_reply_text(rg_kernel* k, unsigned char* stage, unsigned int cap, unsigned int method, unsigned int corr, unsigned int failure, const char* text, unsigned int n) {
  /* The reply goes into a reply slot (slotSize): a stage may be larger (512 bytes), and a text cut to the stage
     was written past the slot into the next one (a 1 KiB store error through 256-byte slots). */
  if (!stage || cap > k->slotSize) cap = k->slotSize;
  /* 12 bytes before the text (the code, the number) and its header of at most 3 */
  const unsigned int room = cap - RG_HDR;
  if (n + 15u > room) n = room > 15u ? room - 15u : 0u;
  unsigned int idx = 0u, at = 0u;
  unsigned char* out = stage ? stage : rg_reply_claim(k, &idx);
  rg_wr w = {out + RG_HDR, 0u, room};
  rg_wr_arrhdr(&w, 2u);
  rg_wr_int(&w, (long long)RG_TE_STATE_LOAD);
  rg_wr_arrhdr(&w, 2u);
  rg_wr_float64(&w, (double)failure);
  if (n < 32u) rg_wr_byte(&w, 0xa0u | n);
  else if (n < 0x100u) { rg_need(&w, 2u, &at); rg_put(&w, at, 0xd9u); rg_put(&w, at + 1u, n); }
  else { rg_need(&w, 3u, &at); rg_put(&w, at, 0xdau); rg_put_be16(&w, at + 1u, n); }
  rg_need(&w, n, &at);
  for (unsigned int i = 0; i < n; i++) rg_put(&w, at + i, (unsigned char)__ldcg(text + i));
  if (stage) {
    rg_reply_out(k, stage, method, RG_REPLY | RG_ERROR, corr, w.pos);
    return;
  }
  rg_SlotHeader* h = (rg_SlotHeader*)out;
  rg_reply_header(h, method, RG_REPLY | RG_ERROR, corr, w.pos);
  RG_REPLY_RELEASE(&h->seq, idx + 1u);
}
#endif

__device__ static unsigned int RG_G(res_drop)(rg_kernel* k, unsigned int* ctr, rg_DirEntry* e, unsigned int failure, const char* text, unsigned int tn, unsigned char* stage, unsigned int cap) {
  const unsigned int slot = e->slot;
  rg_StateMeta* m = rg_meta_of(k->states, k->maxActors) + slot;
  unsigned int* q = rg_res_park(k->res, slot);
  unsigned int n = 0u;
  for (unsigned int ref = q[0]; ref != 0u;) {
    const unsigned char* msg = rg_res_node(k, ref) + RG_OV_NODE_HDR;
    const rg_SlotHeader* h = (const rg_SlotHeader*)msg;
    ctr[RG_C_REJECTED]++;
    rg_res_reply_text(k, stage, cap, h->method, h->corr, failure, text, tn);
    const unsigned int next = ((const rg_OverflowNode*)rg_res_node(k, ref))->link;
    rg_ov_free(k->overflow, k->partitions, RG_OV_NODE_HDR + k->slotSize, ref);
    atomicSub(&((rg_OverflowHeader*)k->overflow)->inUse, 1u);
    ref = next;
    n++;
  }
  q[0] = 0u;
  q[1] = 0u;
  m->dirty = 0u;
  m->lastActive = 0.0;
  atomicSub(&k->res->parked, n);
  atomicAdd(&k->res->rejected, n);
  __threadfence();
  rg_st_rel_gpu(&e->state, RG_DIR_DEAD);
  rg_slot_free(k, slot);
  return n;
}

/*
 * Runs the parked messages of the actor of `e` (now READY) in the order they came, as turns of this
 * worker (each already counted received when it was parked), freeing each node after its turn.
 */
__device__ static void RG_G(res_replay)(rg_kernel* k, unsigned int* ctr, rg_DirEntry* e, unsigned int part, unsigned char* stage, unsigned int cap, unsigned char* scratch, rg_coop* co) {
  unsigned int* q = rg_res_park(k->res, e->slot);
  unsigned int ref = q[0];
  q[0] = 0u;
  q[1] = 0u;
  unsigned int n = 0u;
  while (ref != 0u) {
    unsigned char* node = rg_res_node(k, ref);
    unsigned char* msg = node + RG_OV_NODE_HDR;
    const unsigned int len = RG_HDR + ((const rg_SlotHeader*)msg)->length;
    const unsigned int span = len < cap ? len : cap;
    for (unsigned int at = 0; at < span; at += 4u) *(unsigned int*)(stage + at) = *(const unsigned int*)(msg + at);
    ctr[RG_C_RECEIVED]--;
    if (((const rg_SlotHeader*)msg)->sender != RG_HOST_SENDER) ctr[RG_C_K2K_RECEIVED]--;
    RG_G(turn)(k, ctr, msg, stage, cap, part, scratch, co);
    const unsigned int next = ((const rg_OverflowNode*)node)->link;
    rg_ov_free(k->overflow, k->partitions, RG_OV_NODE_HDR + k->slotSize, ref);
    atomicSub(&((rg_OverflowHeader*)k->overflow)->inUse, 1u);
    ref = next;
    n++;
  }
  atomicSub(&k->res->parked, n);
}

/*
 * A stored state from the board into an actor's slot (board rows and slots are a state's size apart from
 * aligned bases). The board is written by host copies between requests: every read of it is an L2 load
 * (ld.cg), never an L1 line kept from an earlier install.
 */
__device__ static inline void rg_res_copy_in(unsigned char* d, const unsigned char* s) {
  constexpr unsigned int n = (unsigned int)sizeof(RG_G(state));
  constexpr unsigned int U = n % 16u == 0u ? 16u : n % 8u == 0u ? 8u : n % 4u == 0u ? 4u : 1u;
  typedef rg_gather_word<U>::T W; /* state-meta.cuh: the widest word the size allows */
  for (unsigned int i = 0; i < n / U; i++) ((W*)d)[i] = __ldcg((const W*)s + i);
}

/* The board's row i: key (int64 halves), kind (RG_RES_ROW_*), state bytes. */
__device__ static inline const unsigned char* rg_res_board(const rg_ResidencyGlobals* r) { return rg_res_ptr(r->boardLo, r->boardHi); }

/*
 * Worker `part`, lane 0: the install board's rows whose keys this worker owns. 'load': a LOADING actor
 * gets its state (FOUND; ABSENT keeps the zeroed one), turns READY, its declared timers and onActivate
 * run with the clock of its first parked message, then the parked messages; FAILED rejects them with the
 * board's text. A row for a key not LOADING here (answered twice, or collected meanwhile) is passed.
 * 'preload': keys held in any way are passed (a held state is newer); others are inserted READY while
 * slots are free, timers and onActivate with clock 0, as the CPU backend preloads.
 */
/* __noinline__: its loop stays out of the worker's own frame. */
__device__ static __noinline__ void RG_G(res_install)(rg_kernel* k, unsigned int* ctr, unsigned int part, unsigned char* stage, unsigned int cap, unsigned char* scratch, rg_coop* co) {
  rg_ResidencyGlobals* r = k->res;
  const unsigned char* board = rg_res_board(r);
  const unsigned int rows = r->rows, mode = r->mode;
  const unsigned int ready = RG_DIR_READY | ((part + 1u) << RG_DIR_OWNER_SHIFT);
  /* the failure text of FAILED rows, read where it lies (rg_res_reply_text) */
  const char* text = (const char*)(board + r->boardErrorAt);
  const unsigned int tn = r->errorLength < RG_RES_INSTALL_ERROR_BYTES ? r->errorLength : RG_RES_INSTALL_ERROR_BYTES;
  unsigned int installed = 0u;
  for (unsigned int i = 0; i < rows; i++) {
    const unsigned int lo = __ldcg((const unsigned int*)(board + 8ull * i)), hi = __ldcg((const unsigned int*)(board + 8ull * i + 4u));
    const long long key = RG_KEY_OF(lo, hi);
    if (rg_partition(key, k->partitions) != part) continue;
    const unsigned int kind = __ldcg(board + r->boardKindsAt + i);
    const unsigned char* row = board + r->boardStatesAt + (unsigned long long)i * sizeof(RG_G(state));
    bool loading = false;
    rg_DirEntry* e = 0;
    const unsigned long long u = (unsigned long long)key;
    const unsigned long long hsh = (u ^ (u >> 33)) * 0xFF51AFD7ED558CCDULL;
    const unsigned int home = (unsigned int)(hsh ^ (hsh >> 29)) & (k->dirCapacity - 1u);
    {
      /* a lookup that inserts nothing: the entry of ours for this key, READY or LOADING (as far as rg_res_reach) */
      unsigned int reach = ~0u; /* read at the first entry passed, as in res_lookup */
      unsigned int j = home;
      for (unsigned int probe = 0; probe < k->dirCapacity; probe++, j = (j + 1u) & (k->dirCapacity - 1u)) {
        rg_DirEntry* f = &k->directory[j];
        const unsigned int s = f->state;
        if ((s == ready || s == (ready | RG_DIR_LOADING)) && f->keyLo == lo && f->keyHi == hi) {
          e = f;
          loading = s != ready;
          break;
        }
        if (s == RG_DIR_EMPTY) break;
        if (reach == ~0u) reach = rg_res_reach(k);
        if (probe >= reach) break;
      }
    }
    if (mode == RG_RES_MODE_PRELOAD) {
      if (e || kind == RG_RES_ROW_FAILED) continue;
      const unsigned int acts = ctr[RG_C_ACTIVATIONS];
      /* absent (the lookup above): inserted READY where a slot is free, its distance recorded */
      RG_G(state)* st = RG_G(insert)(k, ctr, home, lo, hi, ready);
      if (!st) continue; /* the table is full: the rest wait for their first messages */
      rg_res_placed(k, home, lo, hi, ready);
      if (kind == RG_RES_ROW_FOUND) rg_res_copy_in((unsigned char*)st, row);
      RG_TM_ACTIVATED(k, ctr, acts, st, key, 0.0, part);
      RG_ON_ACTIVATE(k, ctr, acts, st, key, 0.0, part, stage, cap, co);
      installed++;
      continue;
    }
    if (!e || !loading) continue;
    if (kind == RG_RES_ROW_FAILED) {
      RG_G(res_drop)(k, ctr, e, r->failureId, text, tn, stage, cap);
      continue;
    }
    RG_G(state)* st = (RG_G(state)*)(k->states + (unsigned long long)e->slot * sizeof(RG_G(state)));
    if (kind == RG_RES_ROW_FOUND) rg_res_copy_in((unsigned char*)st, row);
    const unsigned int head = rg_res_park(r, e->slot)[0];
    const double now = head != 0u ? ((const rg_SlotHeader*)(rg_res_node(k, head) + RG_OV_NODE_HDR))->time : 0.0;
    __threadfence();
    rg_st_rel_gpu(&e->state, ready);
    const unsigned int acts = ctr[RG_C_ACTIVATIONS]++;
    RG_TM_ACTIVATED(k, ctr, acts, st, key, now, part);
    RG_ON_ACTIVATE(k, ctr, acts, st, key, now, part, stage, cap, co);
    RG_G(res_replay)(k, ctr, e, part, stage, cap, scratch, co);
    installed++;
  }
  atomicAdd(&r->installed, installed);
}

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
