/*
 * Ringgrain CUDA runtime: actor residency, loading (included by residency.cuh after residency-evict.cuh, inside
 * its guard): a message for an actor whose stored state is not here parks until an install brings it.
 */
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
