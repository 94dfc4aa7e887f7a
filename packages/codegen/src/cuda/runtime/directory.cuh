/* Ringgrain CUDA runtime: actor slots (the free-slot ring) and the directory (open addressing, per-partition owners): activation. */
#if defined(__CUDACC__)
/*
 * Free-slot ring (in the states region, stateRegion freeAt): a freed slot is reused before stateNext
 * grows. MPMC by tickets; the capacity is a power of two ≥ maxActors, so an index survives u32 wrap, and
 * a push never laps an unread entry (at most maxActors slots are ever free). A word holds slot + 1, 0 empty.
 */
/* Push (an eviction, after it copied the state out: the fence orders those reads before any reuse). */
__device__ static __noinline__ void rg_slot_free(rg_kernel* k, unsigned int slot) {
  unsigned int* ring = rg_free_ring(k->states, k->maxActors);
  const unsigned int t = atomicAdd(&k->g->freeTail, 1u);
  __threadfence();
  atomicExch(&ring[t & (rg_free_cap(k->maxActors) - 1u)], slot + 1u);
}
/* Pop: a freed slot, or ~0u when none. A ticket taken before its pusher stored waits for the store. */
__device__ static unsigned int rg_slot_take(rg_kernel* k) {
  unsigned int* ring = rg_free_ring(k->states, k->maxActors);
  for (;;) {
    const unsigned int h = rg_ld_vol(&k->g->freeHead);
    if ((int)(rg_ld_vol(&k->g->freeTail) - h) <= 0) return ~0u;
    if (atomicCAS(&k->g->freeHead, h, h + 1u) != h) continue;
    unsigned int* w = &ring[h & (rg_free_cap(k->maxActors) - 1u)];
    unsigned int v;
    while ((v = atomicExch(w, 0u)) == 0u) {}
    __threadfence();
    return v - 1u;
  }
}

/*
 * Insert (rare: once per activation, so __noinline__ keeps its registers out of every turn). The caller's
 * probe reached an EMPTY entry, which proves the key absent: only this partition's worker inserts its keys.
 * Take the first reusable entry from the key's home, EMPTY or DEAD (a tombstone: a table-full claim, or
 * later an evicted actor), so entries never return to EMPTY and every probe before the new entry still
 * passes it. A lost CAS means another partition took that entry: scan on. The slot: a freed one first
 * (taken once, before the first claim, handed back if no entry is won), else the next never used.
 */
__device__ static __noinline__ RG_G(state)* RG_G(insert)(rg_kernel* k, unsigned int* ctr, unsigned int home, unsigned int lo, unsigned int hi, unsigned int ready) {
  const unsigned int mask = k->dirCapacity - 1u;
  unsigned int i = home;
  unsigned int slot = ~0u;
  bool tried = false;
  for (unsigned int probe = 0; probe < k->dirCapacity; probe++, i = (i + 1u) & mask) {
    rg_DirEntry* e = &k->directory[i];
    const unsigned int was = rg_ld_vol(&e->state);
    if (was != RG_DIR_EMPTY && was != RG_DIR_DEAD) continue;
    if (!tried) {
      tried = true;
      slot = rg_slot_take(k);
    }
    if (slot == ~0u && rg_ld_vol(&k->g->stateNext) >= k->maxActors) return 0;
    if (atomicCAS(&e->state, was, RG_DIR_WRITING) != was) continue;
    if (slot == ~0u) {
      slot = atomicAdd(&k->g->stateNext, 1u);
      if (slot >= k->maxActors) { rg_st_rel_gpu(&e->state, RG_DIR_DEAD); return 0; }
    }
    e->keyLo = lo;
    e->keyHi = hi;
    e->slot = slot;
    RG_G(state)* s = (RG_G(state)*)(k->states + (unsigned long long)slot * sizeof(RG_G(state)));
    rg_zero(s, sizeof(RG_G(state)));
    rg_meta_activate(k->states, k->maxActors, slot, lo, hi);
    rg_st_rel_gpu(&e->state, ready); /* release: key, slot and zeroed state visible first (host inspect) */
    ctr[RG_C_ACTIVATIONS]++;
    return s;
  }
  if (slot != ~0u) rg_slot_free(k, slot);
  return 0;
}

/* An actor activate found, kept as the thread's last where actors are never deactivated (RG_LATENCY). */
__device__ static inline RG_G(state)* RG_G(found)(rg_kernel* k, long long key, RG_G(state)* s) {
#if RG_LATENCY
  if (s != 0 && k->res == 0) {
    k->lastKey = key;
    k->lastState = (unsigned char*)s;
  }
#endif
  return s;
}

/*
 * Directory: open addressing. A key is only ever looked up and inserted by its own partition's worker,
 * and a ready entry names that partition (RG_DIR_READY | (owner + 1) << RG_DIR_OWNER_SHIFT). So one
 * relaxed 16-byte load decides an entry: another owner's entry is skipped unread, and our own was
 * written by this very thread, whose later loads see its own stores (one L2 round trip, not two).
 * DEAD entries are passed like another owner's: the key may lie beyond a tombstone.
 */
__device__ static RG_G(state)* RG_G(activate)(rg_kernel* k, unsigned int* ctr, long long key, unsigned int part) {
#if RG_LATENCY
  /*
   * The actor this thread found last, without the directory's round trip (a lone ask to one actor, a chain
   * that comes back): where no actor is ever deactivated (no residency area), a READY entry never changes,
   * so the key's slot stays where it was found. Only this partition's keys reach this thread.
   */
  if (k->lastState != 0 && k->lastKey == key) return (RG_G(state)*)k->lastState;
#endif
  const unsigned int ready = RG_DIR_READY | ((part + 1u) << RG_DIR_OWNER_SHIFT);
  unsigned long long u = (unsigned long long)key;
  unsigned int lo = (unsigned int)u, hi = (unsigned int)(u >> 32);
  unsigned long long h = (u ^ (u >> 33)) * 0xFF51AFD7ED558CCDULL;
  unsigned int mask = k->dirCapacity - 1u;
  const unsigned int home = (unsigned int)(h ^ (h >> 29)) & mask;
  unsigned int i = home;
  for (unsigned int probe = 0; probe < k->dirCapacity; probe++, i = (i + 1u) & mask) {
    rg_DirEntry* e = &k->directory[i];
    const uint4 v = rg_ld_rlx_gpu_v4(e);
    static_assert(sizeof(rg_DirEntry) == 16 && RG_AT_DIR_STATE == 12, "DirEntry: one 16-byte load, state last");
    if (v.w == ready) {
      if (v.x == lo && v.y == hi) return RG_G(found)(k, key, (RG_G(state)*)(k->states + (unsigned long long)v.z * sizeof(RG_G(state))));
      continue;
    }
    if (v.w != RG_DIR_EMPTY) continue; /* another partition's key, being written, or a dead entry */
    return RG_G(insert)(k, ctr, home, lo, hi, ready);
  }
  return 0;
}
#endif
