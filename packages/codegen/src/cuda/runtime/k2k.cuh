/*
 * Ringgrain CUDA runtime: kernel-to-kernel sends. The K2K overflow pool and the claim/publish pair that
 * handlers' generated senders call. The pair is RG_HD: on the device it uses the partition queues, in the
 * host harness (RG_HOST_HARNESS) it calls hooks the harness defines, elsewhere on the host it fails NO_ROUTE.
 */
#include "lanes.cuh"
static_assert(sizeof(rg_OverflowHeader) == RG_OV_HDR && sizeof(rg_OverflowNode) == RG_OV_NODE_HDR, "rg_OverflowHeader, rg_OverflowNode: RG_OV_HDR, RG_OV_NODE_HDR (abi.ts)");

struct rg_k2k_ticket { unsigned char* slot; unsigned int index; unsigned int ovRef; unsigned int ovPart; unsigned char* pool; unsigned int poolParts; unsigned int nodeBytes; };

/*
 * K2K overflow (abi.ts OverflowHeader / overflowLayout): a pool of nodes in the target kernel's device
 * memory, and per target partition an MPSC list of nodes (Vyukov's intrusive queue: a producer swaps
 * itself in as the tail, then links the old tail to itself; the partition's worker is the only consumer).
 * Node refs are index + 1 (0: none); node p is partition p's initial stub, and a tail word of 0 means it.
 *
 * FIFO per sender → actor: a send takes the queue only while its partition's overflow count is 0 and the
 * queue has room, else it appends to the overflow list; so once a sender's message is in overflow, its
 * later ones to that partition follow it there until it is consumed. The worker takes from the queue
 * whenever head != tail (waiting for a claimed slot's seq rather than skipping it), and from overflow only
 * when the queue is empty, reading the overflow link (acquire) BEFORE the queue head: a message a sender
 * put in overflow after one it put in the queue then always finds that earlier one's claim visible.
 *
 * No deadlock: a K2K send never waits for a consumer. The queue claim gives up when the queue is full
 * (overflow instead), an overflow append is two atomics, and a node comes from a ticket on a ring of
 * nodes (rg_ov_alloc); a consumer waits only for a producer that is between two stores of its own. A send fails
 * (POOL_EXHAUSTED, typed, counted) only when the pool is full (rg_ov_alloc); cycles of full queues cannot block
 * anything, because nothing blocks on a full queue.
 */
#if defined(__CUDACC__)
__device__ static inline unsigned int* rg_ov_tails(unsigned char* pool) { return (unsigned int*)(pool + RG_OV_HDR); }
__device__ static inline unsigned int* rg_ov_counts(unsigned char* pool, unsigned int parts) { return (unsigned int*)(pool + RG_OV_HDR) + parts; }
__device__ static inline unsigned char* rg_ov_node(unsigned char* pool, unsigned int parts, unsigned int nodeBytes, unsigned int ref) {
  const unsigned long long at = ((RG_OV_HDR + 8ull * parts + 15ull) & ~15ull) + (unsigned long long)(ref - 1u) * nodeBytes;
  return pool + at;
}
/*
 * Nodes are taken and given back one by one (rg_OverflowNode.taken), and the nodes after the stubs are
 * used as a ring: a sender takes a ticket from the cursor (atomicAdd: one L2 operation, no retry loop)
 * and tries that ticket's node with an acquiring exchange. A free-node stack (a tagged CAS on one word)
 * served every sender and every consumer of the kernel: under a burst (SIR at 1M people, a million
 * messages a step in overflow) the CAS retries capped the whole pool at about 1 M nodes/s.
 * A taken node is passed over (the next ticket); a send fails POOL_EXHAUSTED only once the lists hold
 * every node of the ring but one per partition (a partition's head may hold a ring node besides). Close to
 * full, a sender may try many tickets before it finds one of the few free nodes.
 */
__device__ static inline unsigned int rg_xchg_acq_gpu(unsigned int* p, unsigned int v) {
  unsigned int old;
  asm volatile("atom.acquire." RG_KSCOPE ".exch.b32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
/*
 * The producer's loads, stores and queue claim: ring.cuh's (gpu scope, or system scope with RG_PEER=1), or with
 * RG_PEER=2 copies at system scope while the consumers keep gpu scope.
 */
#if defined(RG_PEER) && RG_PEER == 2
__device__ static inline unsigned int rg_k2k_ld_acq(const unsigned int* p) {
  unsigned int v;
  asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ static inline void rg_k2k_st_rel(unsigned int* p, unsigned int v) {
  asm volatile("st.release.sys.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}
__device__ static inline unsigned int rg_k2k_exch_acq_rel(unsigned int* p, unsigned int v) {
  unsigned int old;
  asm volatile("atom.acq_rel.sys.exch.b32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
__device__ static bool rg_k2k_queue_claim(rg_RingHeader* q, unsigned int cap, unsigned int budget, unsigned int* idx) {
  unsigned int waits = 0;
  for (;;) {
    unsigned int h = rg_ld_vol(&q->head);
    unsigned int tl = rg_k2k_ld_acq(&q->tail);
    if (h - tl < cap) {
      if (atomicCAS_system(&q->head, h, h + 1u) == h) { *idx = h; return true; }
    } else {
      if (waits++ >= budget) return false;
      __nanosleep(256);
    }
  }
}
#else
#define rg_k2k_ld_acq rg_ld_acq_gpu
#define rg_k2k_st_rel rg_st_rel_gpu
#define rg_k2k_exch_acq_rel rg_exch_acq_rel_gpu
#define rg_k2k_queue_claim rg_queue_claim
#endif
/* A taken node (its link cleared), or 0 when the pool is full. */
__device__ static unsigned int rg_ov_alloc(unsigned char* pool, unsigned int parts, unsigned int nodes, unsigned int nodeBytes) {
  rg_OverflowHeader* oh = (rg_OverflowHeader*)pool;
  const unsigned int ring = nodes - parts;
  unsigned int ref;
  for (;;) {
    ref = parts + 1u + RG_KATOMIC(atomicAdd)(&oh->bump, 1u) % ring;
    rg_OverflowNode* nd = (rg_OverflowNode*)rg_ov_node(pool, parts, nodeBytes, ref);
    /* Acquire: the consumer's reads of this node's last message come before our writes to it. */
    if (rg_xchg_acq_gpu(&nd->taken, 1u) == 0u) break;
    if (rg_ld_vol(&oh->inUse) + parts >= ring) return 0u;
  }
  *(volatile unsigned int*)rg_ov_node(pool, parts, nodeBytes, ref) = 0u;
  const unsigned int used = RG_KATOMIC(atomicAdd)(&oh->inUse, 1u) + 1u;
  RG_KATOMIC(atomicMax)(&oh->highWater, used);
  return ref;
}
/* Given back by the consumer once the node's turn is done and it is no list's head any more (release:
   the turn's reads of it come first). The partitions' initial stubs are never in the ring. */
__device__ static inline void rg_ov_free(unsigned char* pool, unsigned int parts, unsigned int nodeBytes, unsigned int ref) {
  if (ref > parts) rg_st_rel_gpu(&((rg_OverflowNode*)rg_ov_node(pool, parts, nodeBytes, ref))->taken, 0u);
}
#endif
#if defined(RG_HOST_HARNESS)
/* Defined by the host test harness: where a K2K message goes when the unit runs on the CPU. */
unsigned char* rg_host_k2k_claim(rg_turn* t, unsigned int grain, unsigned int len);
void rg_host_k2k_publish(rg_turn* t, unsigned char* slot, unsigned int len);
#endif

/* Reserves a slot in the target's partition queue; returns where the payload goes, or 0 with t->err set. */
RG_HD static unsigned char* rg_k2k_claim(rg_turn* t, unsigned int grain, long long key, unsigned int len, rg_k2k_ticket* tk) {
#if defined(__CUDA_ARCH__)
  if (grain >= t->nroutes) { t->err = RG_E_NO_ROUTE; return 0; }
  const rg_RouteEntry* rt = &((const rg_RouteEntry*)t->routes)[grain];
  /* A class on several lane groups (GPUs): the key's group's entry, routeCount entries per group further. */
  if (rt->groups > 1u) rt += (unsigned long long)t->nroutes * rg_group_of_key(key, rt->groups, rt->groupLanes);
  unsigned long long base = ((unsigned long long)rt->queuesHi << 32) | rt->queuesLo;
  if (base == 0 || rt->partitions == 0) { t->err = RG_E_NO_ROUTE; return 0; }
  if (len > rt->slotSize - RG_HDR) { t->err = RG_E_PAYLOAD_TOO_LARGE; return 0; }
  unsigned long long qbytes = RG_RING_HDR + (unsigned long long)rt->queueCapacity * rt->slotSize;
  const unsigned int part = rg_partition(key, rt->partitions);
  rg_RingHeader* q = (rg_RingHeader*)(base + part * qbytes);
  unsigned int idx;
  RG_STAMP(RG_S_K2K_SEND);
  RG_WS_MARK(4);
  tk->ovRef = 0u;
  if (rt->poolNodes != 0u) {
    unsigned char* pool = (unsigned char*)(((unsigned long long)rt->poolHi << 32) | rt->poolLo);
    unsigned int* count = rg_ov_counts(pool, rt->partitions) + part;
    /*
     * The queue only while this partition's overflow is empty and the queue has room (FIFO, above). The
     * count, head and tail are read together (one memory round trip, where an acquire of the count first
     * cost one more: RG_WAVE_STATS measured the claim at about three). The count needs no acquire: it orders
     * no data we read, and an earlier overflow by this actor (another lane, an earlier batch) is seen
     * through the warp barrier that ends every batch. The tail's acquire still orders our slot writes
     * after the consumer's reads of that slot.
     */
    const unsigned int pending = rg_ld_vol(count);
    const unsigned int h0 = rg_ld_vol(&q->head);
    const unsigned int t0 = rg_k2k_ld_acq(&q->tail);
    if (pending == 0u && ((h0 - t0 < rt->queueCapacity && RG_KATOMIC(atomicCAS)(&q->head, h0, h0 + 1u) == h0 && ((idx = h0), true)) ||
                          rg_k2k_queue_claim(q, rt->queueCapacity, 0u, &idx))) {
      RG_STAMP(RG_S_K2K_CLAIMED);
      RG_WS_MARK(5);
      tk->slot = rg_queue_slot(q, rt->queueCapacity, rt->slotSize, idx);
      tk->index = idx;
      return tk->slot + RG_HDR;
    }
    const unsigned int nodeBytes = RG_OV_NODE_HDR + rt->slotSize;
    const unsigned int ref = rg_ov_alloc(pool, rt->partitions, rt->poolNodes, nodeBytes);
    if (ref == 0u) {
      RG_KATOMIC(atomicAdd)(&((rg_OverflowHeader*)pool)->exhausted, 1u);
      t->err = RG_E_POOL_EXHAUSTED;
      return 0;
    }
    RG_KATOMIC(atomicAdd)(count, 1u); /* before the link: a consumer decrements only after it took the node */
    tk->ovRef = ref;
    tk->ovPart = part;
    tk->pool = pool;
    tk->poolParts = rt->partitions;
    tk->nodeBytes = nodeBytes;
    tk->slot = rg_ov_node(pool, rt->partitions, nodeBytes, ref) + RG_OV_NODE_HDR;
    tk->index = 0u;
    return tk->slot + RG_HDR;
  }
  if (!rg_k2k_queue_claim(q, rt->queueCapacity, t->sendBudget, &idx)) { t->err = RG_E_QUEUE_FULL; return 0; }
  RG_STAMP(RG_S_K2K_CLAIMED);
  RG_WS_MARK(5);
  tk->slot = rg_queue_slot(q, rt->queueCapacity, rt->slotSize, idx);
  tk->index = idx;
  return tk->slot + RG_HDR;
#elif defined(RG_HOST_HARNESS)
  (void)key;
  tk->slot = rg_host_k2k_claim(t, grain, len);
  tk->index = 0;
  return tk->slot ? tk->slot + RG_HDR : 0;
#else
  (void)grain; (void)key; (void)len; (void)tk;
  t->err = RG_E_NO_ROUTE;
  return 0;
#endif
}

/* Fills the header, then publishes seq = index + 1 with release (which orders the writes before it). A string key is the target
   class's host-interned id: RG_STRING_KEY, keyLo = id, keyHi = 0 (no key bytes follow the payload). */
RG_HD static void rg_k2k_publish(rg_turn* t, rg_k2k_ticket* tk, unsigned int grain, unsigned int method, long long key, unsigned int len, bool forward, bool stringKey) {
  rg_SlotHeader* h = (rg_SlotHeader*)tk->slot;
  h->length = len;
  h->method = method;
  h->flags = (forward ? (t->flags & RG_ASK) : 0u) | (stringKey ? RG_STRING_KEY : 0u);
  h->corr = forward ? t->corr : 0u;
  h->keyLo = (unsigned int)(unsigned long long)key;
  h->keyHi = stringKey ? 0u : (unsigned int)((unsigned long long)key >> 32);
  h->sender = t->grain;
  h->grain = grain;
  h->_pad = 0u;
  h->time = t->now;
#if defined(__CUDA_ARCH__)
  RG_STAMP(RG_S_K2K_FILLED);
  if (tk->ovRef != 0u) {
    /*
     * Overflow: swap in as the list's tail, then link the old tail to us (release: the slot first).
     * The swap must be acq_rel (atomicExch is relaxed). rg_ov_alloc cleared our link with a plain store,
     * and the next producer writes that same word once its swap returns our node; relaxed, nothing orders
     * the two: A clears link(a), swaps a in; B (another SM) swaps b in, gets prev = a, stores link(a) = b;
     * A's clear, still in flight, lands after it: link(a) = 0 for good. The worker consumes a, then reads
     * link(a) == 0 forever: b and all appended after it stay in the list, the partition's count never
     * returns to 0 (so its later sends overflow too) and K2K sent = received + held (the SIR 1M stalls).
     * Release puts our clear before the swap, acquire puts the old tail's clear before our link store to
     * it: Vyukov's queue needs exactly this exchange (scripts/ov-model.ts checks the interleavings).
     */
    h->seq = 0u;
    RG_KATOMIC(atomicAdd)(&((rg_OverflowHeader*)tk->pool)->overflowed, 1u);
#ifdef RG_OV_RELAXED_SWAP
    /* The old relaxed swap, for an A/B on the GPU only (scripts/ov-stress.ts): never in production. */
    unsigned int prev = atomicExch(rg_ov_tails(tk->pool) + tk->ovPart, tk->ovRef);
#else
    unsigned int prev = rg_k2k_exch_acq_rel(rg_ov_tails(tk->pool) + tk->ovPart, tk->ovRef);
#endif
    if (prev == 0u) prev = tk->ovPart + 1u;
    rg_k2k_st_rel((unsigned int*)rg_ov_node(tk->pool, tk->poolParts, tk->nodeBytes, prev), tk->ovRef);
  } else {
    rg_k2k_st_rel(&h->seq, tk->index + 1u);
  }
  RG_STAMP(RG_S_K2K_PUBLISHED);
  RG_WS_MARK(6);
#elif defined(RG_HOST_HARNESS)
  rg_host_k2k_publish(t, tk->slot, len);
#endif
  t->sent++;
}
