import { COUNTERS, HOST_SENDER, KernelState, RING_HEADER_SIZE, SLOT, SLOT_HEADER_SIZE, SlotFlag, layoutOf, offsetOf } from '@ringgrain/core';
import { MAX_REDUCTIONS } from '../front/parallel.ts';
import { stateMetaSection } from './state-meta.ts';
import { BULK_BOARDS, BULK_JOB_BYTES, CONTROL_STRIDE, COOP_ENV_BYTES, DIR_STATE, DirEntry, KERNEL_PARAMS, OVERFLOW_NODE_HEADER, OverflowHeader, THREADS_PER_BLOCK } from './abi.ts';
import { NO_TIMER_HOOKS } from './timers.ts';

/**
 * Ring plumbing shared by every unit: flags and counters from core, partitioning, memory-order
 * primitives (PTX acquire/release), and the K2K claim/publish pair that handlers' senders call.
 * The K2K pair is RG_HD: on the device it uses the partition queues, in the host harness
 * (RG_HOST_HARNESS) it calls hooks the harness defines, elsewhere on the host it fails NO_ROUTE.
 */
export function runtimeSection(): string {
  const counters = COUNTERS.map((c, i) => `#define RG_C_${c.replace(/[A-Z]/g, (m) => `_${m}`).toUpperCase()} ${i}`).join('\n');
  return String.raw`/* ---- ring protocol constants (core protocol.ts) ------------------------------------------- */
#define RG_HDR ${SLOT_HEADER_SIZE}u
#define RG_RING_HDR ${RING_HEADER_SIZE}u
#define RG_ASK ${SlotFlag.ASK}u
#define RG_REPLY ${SlotFlag.REPLY}u
#define RG_ERROR ${SlotFlag.ERROR}u
#define RG_REJECTED ${SlotFlag.REJECTED}u
#define RG_STRING_KEY ${SlotFlag.STRING_KEY}u
#define RG_SKIP ${SlotFlag.SKIP}u
#define RG_HOST_SENDER ${HOST_SENDER}u
#define RG_KS_IDLE ${KernelState.IDLE}u
#define RG_KS_ACTIVE ${KernelState.ACTIVE}u
#define RG_KS_PAUSED ${KernelState.PAUSED}u
#define RG_KS_STOP ${KernelState.STOP}u
#define RG_KS_STOPPED ${KernelState.STOPPED}u
/* Dispatch modes in DeviceGlobals.mode: the KernelState values, plus draining and exit. */
#define RG_MODE_DRAIN 100u
#define RG_MODE_EXIT 101u
${counters}
#define RG_NCOUNTERS ${COUNTERS.length}u
${stampSection()}
/* RG_WAVE_STATS (a diagnostic, see the persistent loop): a turn's phase stamps, per thread. */
#if defined(RG_WAVE_STATS) && defined(__CUDACC__)
#define RG_WS_MARKS 8
__shared__ long long rg_ws_mark[${THREADS_PER_BLOCK}][RG_WS_MARKS];
#define RG_WS_MARK(i) (rg_ws_mark[threadIdx.x][i] = clock64())
#else
#define RG_WS_MARK(i) ((void)0)
#endif

/* Partition of a key: every key has exactly one consumer warp (turns and FIFO without locks). */
RG_HD static inline unsigned int rg_partition(long long key, unsigned int parts) {
  unsigned long long h = (unsigned long long)key * 0x9E3779B97F4A7C15ULL;
  return (unsigned int)((h >> 32) % parts);
}

#if defined(__CUDACC__)
__device__ static inline unsigned int rg_ld_acq_sys(const unsigned int* p) {
  unsigned int v;
  asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ static inline unsigned int rg_ld_acq_gpu(const unsigned int* p) {
  unsigned int v;
  asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ static inline void rg_st_rel_sys(unsigned int* p, unsigned int v) {
  asm volatile("st.release.sys.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}
__device__ static inline void rg_st_rel_gpu(unsigned int* p, unsigned int v) {
  asm volatile("st.release.gpu.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
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
  asm volatile("atom.acq_rel.gpu.exch.b32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
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
      if (atomicCAS(&q->head, h, h + 1u) == h) { *idx = h; return true; }
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
#define RG_OV_HDR ${layoutOf(OverflowHeader).size}u
#define RG_OV_NODE_HDR ${OVERFLOW_NODE_HEADER}u
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
  asm volatile("atom.acquire.gpu.exch.b32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
/* A taken node (its link cleared), or 0 when the pool is full. */
__device__ static unsigned int rg_ov_alloc(unsigned char* pool, unsigned int parts, unsigned int nodes, unsigned int nodeBytes) {
  rg_OverflowHeader* oh = (rg_OverflowHeader*)pool;
  const unsigned int ring = nodes - parts;
  unsigned int ref;
  for (;;) {
    ref = parts + 1u + atomicAdd(&oh->bump, 1u) % ring;
    rg_OverflowNode* nd = (rg_OverflowNode*)rg_ov_node(pool, parts, nodeBytes, ref);
    /* Acquire: the consumer's reads of this node's last message come before our writes to it. */
    if (rg_xchg_acq_gpu(&nd->taken, 1u) == 0u) break;
    if (rg_ld_vol(&oh->inUse) + parts >= ring) return 0u;
  }
  *(volatile unsigned int*)rg_ov_node(pool, parts, nodeBytes, ref) = 0u;
  const unsigned int used = atomicAdd(&oh->inUse, 1u) + 1u;
  atomicMax(&oh->highWater, used);
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
    const unsigned int t0 = rg_ld_acq_gpu(&q->tail);
    if (pending == 0u && ((h0 - t0 < rt->queueCapacity && atomicCAS(&q->head, h0, h0 + 1u) == h0 && ((idx = h0), true)) ||
                          rg_queue_claim(q, rt->queueCapacity, 0u, &idx))) {
      RG_STAMP(RG_S_K2K_CLAIMED);
      RG_WS_MARK(5);
      tk->slot = rg_queue_slot(q, rt->queueCapacity, rt->slotSize, idx);
      tk->index = idx;
      return tk->slot + RG_HDR;
    }
    const unsigned int nodeBytes = RG_OV_NODE_HDR + rt->slotSize;
    const unsigned int ref = rg_ov_alloc(pool, rt->partitions, rt->poolNodes, nodeBytes);
    if (ref == 0u) {
      atomicAdd(&((rg_OverflowHeader*)pool)->exhausted, 1u);
      t->err = RG_E_POOL_EXHAUSTED;
      return 0;
    }
    atomicAdd(count, 1u); /* before the link: a consumer decrements only after it took the node */
    tk->ovRef = ref;
    tk->ovPart = part;
    tk->pool = pool;
    tk->poolParts = rt->partitions;
    tk->nodeBytes = nodeBytes;
    tk->slot = rg_ov_node(pool, rt->partitions, nodeBytes, ref) + RG_OV_NODE_HDR;
    tk->index = 0u;
    return tk->slot + RG_HDR;
  }
  if (!rg_queue_claim(q, rt->queueCapacity, t->sendBudget, &idx)) { t->err = RG_E_QUEUE_FULL; return 0; }
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
    atomicAdd(&((rg_OverflowHeader*)tk->pool)->overflowed, 1u);
#ifdef RG_OV_RELAXED_SWAP
    /* The old relaxed swap, for an A/B on the GPU only (scripts/ov-stress.ts): never in production. */
    unsigned int prev = atomicExch(rg_ov_tails(tk->pool) + tk->ovPart, tk->ovRef);
#else
    unsigned int prev = rg_exch_acq_rel_gpu(rg_ov_tails(tk->pool) + tk->ovPart, tk->ovRef);
#endif
    if (prev == 0u) prev = tk->ovPart + 1u;
    rg_st_rel_gpu((unsigned int*)rg_ov_node(tk->pool, tk->poolParts, tk->nodeBytes, prev), tk->ovRef);
  } else {
    rg_st_rel_gpu(&h->seq, tk->index + 1u);
  }
  RG_STAMP(RG_S_K2K_PUBLISHED);
  RG_WS_MARK(6);
#elif defined(RG_HOST_HARNESS)
  rg_host_k2k_publish(t, tk->slot, len);
#endif
  t->sent++;
}
${coopSection()}`;
}

/**
 * Warp cooperation. A turn that runs alone on its worker warp runs on lane 0; lanes 1..31 wait in
 * rg_coop_help for work lane 0 posts in the warp's rg_coop (shared memory): bulk copies (numeric arrays
 * decoded from or encoded into a slot, a large reply sent to the host) and element-parallel loops
 * (codegen parallel.ts). A post is: lane 0 writes the job, a warp barrier (A), every lane does its share
 * in rg_coop_run (generated per grain: it knows the unit's loops), a warp barrier (B). On sm_70 and later
 * __syncwarp may be reached from different places in the code, so lane 0 can post from deep inside a
 * handler while the others wait in their loop. Lane 0 ends the turn with RG_CO_DONE.
 */
function coopSection(): string {
  return String.raw`/* RG_HOST_COOP: a host build (the differential tests' harness) that runs element-parallel loops through
   the same runners and rg_coop_loop, with the harness emulating the warp (rg_coop_post, __shfl_xor_sync). */
#if defined(__CUDACC__) || defined(RG_HOST_COOP)
#define RG_CO_DONE 0u
#define RG_CO_COPY 1u
#define RG_CO_LOOP 2u
/* Iterations below which an element-parallel loop runs on lane 0 alone (a post costs two warp barriers). */
#ifndef RG_COOP_MIN_ITERS
#define RG_COOP_MIN_ITERS 64u
#endif
/* Bytes of captured values an element-parallel loop may pass to the lanes (codegen parallel.ts checks). */
#define RG_COOP_ENV_BYTES ${COOP_ENV_BYTES}u
struct rg_coop {
  unsigned int op;
  unsigned int n;     /* copy: bytes; loop: iterations */
  unsigned int id;    /* loop: which loop (rg_coop_run's switch) */
  unsigned int sys;   /* copy: the destination is host memory (fence at system scope before barrier B) */
  unsigned char* d;
  const unsigned char* s;
  double lo;          /* loop: the first value of its variable */
  /* loop results: the first failing iteration (0xffffffff: none), its error and message; iterations run */
  unsigned int failAt;
  int err;
  const char* msg;
  unsigned int iters;
  double red[${MAX_REDUCTIONS}];       /* loop: the warp's combined reductions (parallel.ts Reduction) */
  rg_turn turn;       /* loop: lane 0's turn context, copied for the lanes */
  unsigned long long env[RG_COOP_ENV_BYTES / 8u];
  rg_DeviceGlobals* g; /* the kernel's bulk job boards (rg_bulk_*); 0: the warp runs every job alone */
};
__device__ static void rg_coop_run(rg_coop* co, unsigned int lane);
/* Generated per unit: iterations [from, to) of element-parallel loop co->id on one warp, and which loops
   have that (those whose iterations cannot fail and reduce nothing). */
__device__ static void rg_coop_chunk(const rg_coop* co, unsigned int lane, unsigned int from, unsigned int to);
__device__ static bool rg_coop_bulk_ok(unsigned int id);
#endif
#if defined(__CUDACC__)

/* 16 source bytes at s + 16c, for a source whose address is 4-aligned plus sh bytes (sh = 1..3). */
__device__ static inline uint4 rg_ld16_shifted(const unsigned int* w, unsigned int c, unsigned int sh) {
  const unsigned int* q = w + 4u * c;
  const unsigned int a = q[0], b = q[1], x = q[2], y = q[3], z = q[4];
  return make_uint4(__funnelshift_r(a, b, sh * 8u), __funnelshift_r(b, x, sh * 8u), __funnelshift_r(x, y, sh * 8u), __funnelshift_r(y, z, sh * 8u));
}
/*
 * Lane 'lane's share of copying n bytes from s to d (any alignment): the destination in 16-byte stores,
 * the source in 16-byte loads where it is aligned the same, else in aligned words shifted into place
 * (a word that straddles the source's end starts inside it, and buffers end on 16-byte boundaries).
 * Four chunks a lane are loaded before any is stored, so a lane keeps four loads in flight.
 */
__device__ static void rg_coop_copy_lane(unsigned char* d, const unsigned char* s, unsigned int n, unsigned int lane) {
  unsigned int head = (unsigned int)((16u - ((unsigned long long)d & 15u)) & 15u);
  if (head > n) head = n;
  if (lane < head) d[lane] = s[lane];
  d += head;
  s += head;
  n -= head;
  const unsigned int chunks = n >> 4;
  uint4* dv = (uint4*)d;
  const unsigned int sh = (unsigned int)((unsigned long long)s & 3u);
  unsigned int c = lane;
  if (((unsigned long long)s & 15u) == 0u) {
    const uint4* sv = (const uint4*)s;
    for (; c + 96u < chunks; c += 128u) {
      const uint4 v0 = sv[c], v1 = sv[c + 32u], v2 = sv[c + 64u], v3 = sv[c + 96u];
      dv[c] = v0; dv[c + 32u] = v1; dv[c + 64u] = v2; dv[c + 96u] = v3;
    }
    for (; c < chunks; c += 32u) dv[c] = sv[c];
  } else if (sh == 0u) {
    const unsigned int* sw = (const unsigned int*)s;
    for (; c < chunks; c += 32u) dv[c] = make_uint4(sw[4u * c], sw[4u * c + 1u], sw[4u * c + 2u], sw[4u * c + 3u]);
  } else {
    const unsigned int* sw = (const unsigned int*)(s - sh);
    for (; c + 96u < chunks; c += 128u) {
      const uint4 v0 = rg_ld16_shifted(sw, c, sh), v1 = rg_ld16_shifted(sw, c + 32u, sh), v2 = rg_ld16_shifted(sw, c + 64u, sh), v3 = rg_ld16_shifted(sw, c + 96u, sh);
      dv[c] = v0; dv[c + 32u] = v1; dv[c + 64u] = v2; dv[c + 96u] = v3;
    }
    for (; c < chunks; c += 32u) dv[c] = rg_ld16_shifted(sw, c, sh);
  }
  const unsigned int done = chunks << 4;
  if (lane < n - done) d[done + lane] = s[done + lane];
}
/*
 * Bulk jobs: a copy or an element-parallel loop too large for one warp is cut into chunks on one of the
 * kernel's job boards (abi.ts BulkBoard, in DeviceGlobals), and idle worker warps of the kernel take chunks
 * beside the warp that posted it; the poster goes on once every chunk is done, as after doing it alone.
 * Only copies between global addresses (never a warp's shared stage) and loops whose iterations cannot
 * fail and reduce nothing are posted: a chunk needs nothing but the job's image and never waits for
 * anything, so a poster only ever waits for chunks that are running. A worker takes chunks only while its
 * own queue and overflow list are empty, one chunk between polls of its queue. FIFO and one turn at a
 * time per actor are untouched: chunks are parts of a turn, or of a message move, already under way.
 * RG_BULK=0 (an NVRTC define) posts nothing: every warp does its jobs alone, as before boards existed.
 */
#ifndef RG_BULK
#define RG_BULK 1
#endif
#define RG_BULK_BOARDS ${BULK_BOARDS}u
#define RG_BULK_JOB_BYTES ${BULK_JOB_BYTES}u
/* Copies from this many bytes and loops from this many iterations are posted; chunks of this size. */
#ifndef RG_BULK_MIN_BYTES
#define RG_BULK_MIN_BYTES 262144u
#endif
#ifndef RG_BULK_CHUNK_BYTES
#define RG_BULK_CHUNK_BYTES 65536u
#endif
#ifndef RG_BULK_MIN_ITERS
#define RG_BULK_MIN_ITERS 32768u
#endif
#ifndef RG_BULK_CHUNK_ITERS
#define RG_BULK_CHUNK_ITERS 8192u
#endif
/* An idle worker looks for posted jobs on every this-many-th poll of its queue while it spins. */
#ifndef RG_BULK_POLL_EVERY
#define RG_BULK_POLL_EVERY 8u
#endif
/* Chunks start at multiples of 16 bytes from the job's start: source and destination keep their offsets
   mod 16, so a chunk takes rg_coop_copy_lane's aligned path wherever the whole copy would. */
static_assert(RG_BULK_CHUNK_BYTES % 16u == 0u && RG_BULK_CHUNK_BYTES >= 16u, "RG_BULK_CHUNK_BYTES: a positive multiple of 16");
static_assert(RG_BULK_CHUNK_ITERS >= 1u && RG_BULK_MIN_BYTES >= 1u && RG_BULK_MIN_ITERS >= 1u && RG_BULK_POLL_EVERY >= 1u, "RG_BULK_*: positive");
static_assert(sizeof(rg_coop) <= RG_BULK_JOB_BYTES && sizeof(rg_coop) % 8u == 0u, "a job image (an rg_coop) fits rg_BulkBoard.job (abi.ts BULK_JOB_BYTES)");
static_assert(sizeof(rg_BulkBoard) % 16u == 0u && sizeof(rg_BulkBoard::job) == RG_BULK_JOB_BYTES, "rg_BulkBoard: 16-byte multiple (abi.ts checks the offsets' alignment)");
__device__ static inline unsigned long long* rg_bulk_next(rg_BulkBoard* b) { return (unsigned long long*)&b->nextLo; }
__device__ static inline unsigned long long* rg_bulk_limit(rg_BulkBoard* b) { return (unsigned long long*)&b->limitLo; }
__device__ static inline unsigned long long rg_ld_vol_u64(const unsigned long long* p) { return *(const volatile unsigned long long*)p; }

/* The whole warp: chunk i of job j (the board's image, or the poster's own), then counts it done. Its
   stores come before the count at the scope they were made for (the host's, for a reply into host
   memory): the poster acquires the count before it publishes what the job wrote. */
__device__ static __noinline__ void rg_bulk_chunk(rg_BulkBoard* b, const rg_coop* j, unsigned int i, unsigned int lane) {
  const bool sys = j->op == RG_CO_COPY && j->sys != 0u;
  if (j->op == RG_CO_COPY) {
    const unsigned int at = i * RG_BULK_CHUNK_BYTES;
    const unsigned int len = j->n - at < RG_BULK_CHUNK_BYTES ? j->n - at : RG_BULK_CHUNK_BYTES;
    rg_coop_copy_lane(j->d + at, j->s + at, len, lane);
  } else {
    const unsigned int from = i * RG_BULK_CHUNK_ITERS;
    rg_coop_chunk(j, lane, from, j->n - from < RG_BULK_CHUNK_ITERS ? j->n : from + RG_BULK_CHUNK_ITERS);
  }
  if (sys) __threadfence_system();
  __syncwarp();
  if (lane == 0u) {
    /* after the barrier: cumulative over every lane's stores */
    if (sys) __threadfence_system();
    else __threadfence();
    atomicAdd(&b->done, 1u);
  }
}

/* The whole warp: a free board (owner CAS), or 0 when every board is taken. */
__device__ static rg_BulkBoard* rg_bulk_claim(rg_DeviceGlobals* g, unsigned int lane) {
  unsigned int bi = RG_BULK_BOARDS;
  if (lane == 0u) {
    const unsigned int me = ((blockIdx.x * blockDim.x + threadIdx.x) >> 5) + 1u;
    for (unsigned int i = 0; i < RG_BULK_BOARDS; i++) {
      if (rg_ld_vol(&g->boards[i].owner) == 0u && atomicCAS(&g->boards[i].owner, 0u, me) == 0u) {
        /* acquire: the previous owner's last limit (the generation goes on from it) */
        __threadfence();
        bi = i;
        break;
      }
    }
  }
  bi = __shfl_sync(0xffffffffu, bi, 0);
  return bi == RG_BULK_BOARDS ? (rg_BulkBoard*)0 : &g->boards[bi];
}

/*
 * The whole warp, holding board b whose job image the warp has written (a barrier since): publishes it as
 * 'chunks' chunks, takes chunks until none is left, waits for the chunks others took, frees the board.
 * The next word is reset last, with the job's generation: a taker's add before that gets the previous
 * generation and takes nothing (rg_bulk_take checks the generation against limit's).
 */
__device__ static void rg_bulk_run(rg_DeviceGlobals* g, rg_BulkBoard* b, const rg_coop* job, unsigned int chunks, unsigned int lane) {
  if (lane == 0u) {
    const unsigned long long gen = ((rg_ld_vol_u64(rg_bulk_limit(b)) >> 32) + 1ull) & 0xffffffffull;
    *(volatile unsigned long long*)rg_bulk_limit(b) = (gen << 32) | chunks;
    rg_st_vol(&b->done, 0u);
    /* release: the job image, limit, done, and whatever the job reads (written before the post) */
    __threadfence();
    atomicExch(rg_bulk_next(b), gen << 32);
    atomicAdd(&g->bulkLive, 1u);
  }
  for (;;) {
    unsigned int i = 0u;
    if (lane == 0u) i = (unsigned int)atomicAdd(rg_bulk_next(b), 1ull);
    i = __shfl_sync(0xffffffffu, i, 0);
    if (i >= chunks) break;
    rg_bulk_chunk(b, job, i, lane);
  }
  if (lane == 0u) {
    while (rg_ld_acq_gpu(&b->done) != chunks) __nanosleep(32);
    /* every chunk's stores before whatever the poster publishes next (a queue slot's or a reply's seq) */
    __threadfence();
    atomicSub(&g->bulkLive, 1u);
    rg_st_rel_gpu(&b->owner, 0u);
  }
  __syncwarp();
}

/* The whole warp of a one-lane turn (from rg_coop_run): the job lane 0 posted in co, through a board.
   False when every board is taken (the warp does it alone). Inlined into rg_coop_run: as a call of its
   own there, the SIR Person kernel (nvcc sm_90, at its 168-register cap) spilled 172 bytes instead of 12,
   inlined 52. */
__device__ static __forceinline__ bool rg_bulk_job(rg_coop* co, unsigned int chunks, unsigned int lane) {
  rg_BulkBoard* b = rg_bulk_claim(co->g, lane);
  if (!b) return false;
  const unsigned long long* from = (const unsigned long long*)co;
  unsigned long long* to = (unsigned long long*)b->job;
  for (unsigned int w = lane; w < (unsigned int)(sizeof(rg_coop) / 8u); w += 32u) to[w] = from[w];
  __syncwarp();
  rg_bulk_run(co->g, b, co, chunks, lane);
  return true;
}

/* The whole ingress warp: n bytes of a large message from its host slot to its queue slot through a
   board (false: every board is taken). */
__device__ static __noinline__ bool rg_bulk_copy(rg_DeviceGlobals* g, unsigned char* d, const unsigned char* s, unsigned int n, unsigned int lane) {
  rg_BulkBoard* b = rg_bulk_claim(g, lane);
  if (!b) return false;
  rg_coop* j = (rg_coop*)b->job;
  if (lane == 0u) {
    j->op = RG_CO_COPY;
    j->d = d;
    j->s = s;
    j->n = n;
    j->sys = 0u;
  }
  __syncwarp();
  rg_bulk_run(g, b, j, (unsigned int)(((unsigned long long)n + RG_BULK_CHUNK_BYTES - 1u) / RG_BULK_CHUNK_BYTES), lane);
  return true;
}

/*
 * The whole warp of an idle worker: one chunk of a posted job, if one is left (true: it ran one). The
 * add on next is only tried where next's generation is limit's and chunks are left, so adds past a job's
 * end stay few (the low half never carries into the generation).
 */
__device__ static __noinline__ bool rg_bulk_take(rg_DeviceGlobals* g, unsigned int lane) {
  unsigned int bi = RG_BULK_BOARDS, i = 0u;
  if (lane == 0u) {
    for (unsigned int x = 0; x < RG_BULK_BOARDS; x++) {
      rg_BulkBoard* b = &g->boards[x];
      const unsigned long long lim = rg_ld_vol_u64(rg_bulk_limit(b)), nx = rg_ld_vol_u64(rg_bulk_next(b));
      if ((lim >> 32) != (nx >> 32) || (unsigned int)nx >= (unsigned int)lim) continue;
      const unsigned long long v = atomicAdd(rg_bulk_next(b), 1ull);
      /* acquire (with the add): the job image, limit, and what the job reads, as the poster released them */
      __threadfence();
      const unsigned long long l2 = rg_ld_vol_u64(rg_bulk_limit(b));
      /* The same generation and a chunk below its count: a chunk of the job now posted, which then cannot
         end (nor the board be reused) before this chunk is counted. */
      if ((v >> 32) == (l2 >> 32) && (unsigned int)v < (unsigned int)l2) {
        bi = x;
        i = (unsigned int)v;
        break;
      }
    }
  }
  /* lane 0's acquire before every lane's loads of the job */
  __syncwarp();
  bi = __shfl_sync(0xffffffffu, bi, 0);
  if (bi == RG_BULK_BOARDS) return false;
  i = __shfl_sync(0xffffffffu, i, 0);
  rg_BulkBoard* b = &g->boards[bi];
  rg_bulk_chunk(b, (const rg_coop*)b->job, i, lane);
  return true;
}
/* Lane 0: posts a job and does its own share; the job is complete on return (barrier B). */
__device__ static inline void rg_coop_post(rg_coop* co) {
  __syncwarp(); /* A */
  rg_coop_run(co, 0u);
  __syncwarp(); /* B */
}
__device__ static void rg_coop_copy(rg_coop* co, unsigned char* d, const unsigned char* s, unsigned int n, bool sys) {
  co->op = RG_CO_COPY;
  co->d = d;
  co->s = s;
  co->n = n;
  co->sys = sys ? 1u : 0u;
  rg_coop_post(co);
}
#elif defined(RG_HOST_COOP)
/* The harness's warp: every lane's rg_coop_run(co, lane) between barriers A and B, as rg_coop_post above. */
static void rg_coop_post(rg_coop* co);
#endif
#if defined(__CUDACC__) || defined(RG_HOST_COOP)
/*
 * Lane 0: runs element-parallel loop 'id' over count iterations from lo, its captured values already in
 * co->env. Errors as one lane would have seen them: the failing iteration that comes first in JS order
 * sets t->err (and t->msg); the iterations run are added to the turn's budget count.
 */
__device__ static void rg_coop_loop(rg_turn* t, unsigned int id, double lo, unsigned int count) {
  rg_coop* co = t->co;
  co->op = RG_CO_LOOP;
  co->id = id;
  co->lo = lo;
  co->n = count;
  co->turn = *t;
  co->turn.co = 0;
  co->turn.err = 0;
  co->turn.iters = 0u;
  co->turn.budget = t->budget - t->iters;
  rg_coop_post(co);
  t->iters += co->iters;
  if (co->failAt != 0xffffffffu) {
    t->err = co->err;
    t->msg = co->msg;
  } else if (t->iters > t->budget) {
    t->err = RG_E_TURN_BUDGET;
  }
}
#endif
#if defined(__CUDACC__)
/* Lanes 1..31 during a one-lane turn: do each posted job's share until lane 0 says the turn is done. */
__device__ static void rg_coop_help(rg_coop* co, unsigned int lane) {
  for (;;) {
    __syncwarp(); /* A */
    if (co->op == RG_CO_DONE) return;
    rg_coop_run(co, lane);
    __syncwarp(); /* B */
  }
}
/* Lane 0, at the end of a one-lane turn: releases the waiting lanes. */
__device__ static inline void rg_coop_end(rg_coop* co) {
  co->op = RG_CO_DONE;
  __syncwarp(); /* A */
}
#endif`;
}

/**
 * Points on the message path where a profiling build takes a timestamp (`RG_STAMP(id)`; a no-op
 * unless the unit is compiled with a definition, as test/gpu/ask-probe.cu does). Ids in path order.
 */
export const STAMPS = [
  'IN_SEEN', // ingress: the host slot's seq is visible
  'IN_LOADED', // ingress: the slot's first 512 bytes are in registers
  'IN_CLAIMED', // ingress: a partition-queue slot is reserved
  'IN_PUBLISHED', // ingress: the queue slot's seq is released
  'W_SEEN', // worker: the queue slot's seq is visible
  'W_DECODED', // worker: request validated and decoded
  'W_ACTIVATED', // worker: the actor's state found (or created)
  'W_HANDLED', // worker: the handler returned
  'W_ENCODED', // worker: reply encoded into the staging slot
  'W_REPLY_CLAIMED', // worker: a reply-ring slot is reserved
  'W_REPLIED', // worker: the reply's seq is released to the host
  'W_DONE', // worker: counters stored and the queue tail released
  'K2K_SEND', // K2K: a send starts (route found)
  'K2K_CLAIMED', // K2K: a target-queue slot is reserved
  'K2K_FILLED', // K2K: payload and header written
  'K2K_PUBLISHED', // K2K: the target slot's seq is released
] as const;

function stampSection(): string {
  const ids = STAMPS.map((s, i) => `#define RG_S_${s} ${i}`).join('\n');
  return `/* Profiling stamps (device.ts STAMPS): no-ops unless the including file defines RG_STAMP. */
${ids}
#define RG_NSTAMPS ${STAMPS.length}
#ifdef RG_STAMP
#define RG_PROFILED 1
#else
#define RG_STAMP(id) ((void)0)
#endif
#ifndef RG_STAMP_TURN_END
#define RG_STAMP_TURN_END() ((void)0)
#endif`;
}

/**
 * Blocks of a ring kernel that must fit on one SM at once (the register cap __launch_bounds__ gives the
 * compiler): 3 keep 1024 partitions (257 blocks) co-resident beside the SMs the backend leaves free;
 * measured on the H100, lane-parallel turns took the kernel from 130 to 162+ registers and 2 blocks/SM
 * without a cap, and the K2K benchmark's launch failed with CoResidencyError.
 */
export const MIN_BLOCKS_PER_SM = 3;

/**
 * The kernel's parameter list, generated from the ABI's one list. RG_MIN_BLOCKS_PER_SM (an NVRTC define)
 * overrides the register cap's block count, to measure occupancy against spills (scripts/k2k-probe.ts).
 */
export function kernelSignature(grain: string): string {
  return `#ifndef RG_MIN_BLOCKS_PER_SM
#define RG_MIN_BLOCKS_PER_SM ${MIN_BLOCKS_PER_SM}
#endif
extern "C" __global__ void __launch_bounds__(${THREADS_PER_BLOCK}, RG_MIN_BLOCKS_PER_SM) rg_${grain}_main(\n${KERNEL_PARAMS.map((p) => `    ${p.ctype} ${p.name}`).join(',\n')})`;
}

/**
 * Idle back-off of the persistent loop (spin, then sleep between polls). Overridable per unit with `-D` (or a
 * `#define` before the unit): polls before a loop starts sleeping, and the sleep then.
 */
export const BACKOFF = {
  /** Inbound polls (each a PCIe round trip, ≈1 µs) before the ingress warp sleeps between polls. */
  RG_INGRESS_SPIN: 4096,
  RG_INGRESS_IDLE_NS: 2000,
  /** Device-queue polls (L2) before a worker sleeps between polls. */
  RG_WORKER_SPIN: 4096,
  RG_WORKER_IDLE_NS: 1000,
  /** Ingress iterations between counter/heartbeat publications while messages flow. */
  RG_PUBLISH_EVERY: 1024,
  /**
   * Ingress iterations between reads of the control block. Each read is a PCIe round trip in series
   * with the inbound poll, so reading it on every idle poll made the poll period three round trips.
   */
  RG_CTRL_EVERY: 64,
} as const;

/** An element-parallel loop's C names (codegen parallel.ts): its body function and its captured-values struct. */
export interface ParallelLoopFn {
  readonly id: number;
  readonly body: string;
  readonly env: string;
  /** Its lane runner: one lane's iterations, then the warp's agreement on errors and reductions. */
  readonly runner: string;
  /** Its range runner (iterations [from, to) on one warp), defined where `bulk`: iterations that cannot fail and reduce nothing. */
  readonly chunk: string;
  readonly bulk: boolean;
}

/** The persistent loop of one grain class: control/ingress warp, workers, activation, replies. */
export function deviceLoop(
  grain: string,
  selfId: number,
  methodCount: number,
  stringKeys: boolean,
  scratch: { bytes: number; replyAt: number; lanes: number },
  loops: readonly ParallelLoopFn[] = [],
  /** The unit's timer section (timers.ts timerDeviceSection): the hooks, empty where the class declares no timers. */
  timers: string = NO_TIMER_HOOKS,
): string {
  const G = grain;
  const loopCases = loops.map((l) => `    case ${l.id}u: ${l.runner}(co, lane); break;`).join('\n');
  const bulkLoops = loops.filter((l) => l.bulk);
  const chunkCases = bulkLoops.map((l) => `    case ${l.id}u: ${l.chunk}(co, lane, from, to); break;`).join('\n');
  const okCases = bulkLoops.map((l) => `    case ${l.id}u: return true;`).join('\n');
  const keyOf = (lo: string, hi: string) => (stringKeys ? `(long long)${lo}` : `(long long)(((unsigned long long)${hi} << 32) | ${lo})`);
  const backoff = Object.entries(BACKOFF)
    .map(([k, v]) => `#ifndef ${k}\n#define ${k} ${v}u\n#endif`)
    .join('\n');
  return String.raw`/* ---- persistent ring kernel ----------------------------------------------------------------- */
#if defined(RG_HOST_COOP) && !defined(__CUDACC__)
/* A host build's rg_coop_run: element-parallel loops only (a host build posts no copies). */
static void rg_coop_run(rg_coop* co, unsigned int lane) {
  switch (co->id) {
${loopCases}
    default: break;
  }
}
#endif
#if defined(__CUDACC__)
${backoff}
#define RG_FULL 0xffffffffu
#define RG_WARPS_PER_BLOCK ${THREADS_PER_BLOCK / 32}u
/* Bytes between two host lanes' control blocks (abi.ts CONTROL_STRIDE). */
#define RG_CONTROL_STRIDE ${CONTROL_STRIDE}ull
static_assert(sizeof(rg_ControlBlock) <= RG_CONTROL_STRIDE, "control blocks of the host lanes do not overlap");
/* One worker's scratch (abi.ts scratchLayout): the decoded request at 0, the reply at RG_SCRATCH_REPLY_AT. */
#define RG_SCRATCH_BYTES ${scratch.bytes}ull
#define RG_SCRATCH_REPLY_AT ${scratch.replyAt}ull
static_assert(sizeof(rg_${G}_req) <= RG_SCRATCH_REPLY_AT && sizeof(rg_${G}_rep) <= RG_SCRATCH_BYTES - RG_SCRATCH_REPLY_AT, "scratch: the request and reply unions fit (abi.ts scratchLayout)");
static_assert(alignof(rg_${G}_req) <= 16 && alignof(rg_${G}_rep) <= 16 && RG_SCRATCH_BYTES % 16u == 0u, "scratch: 16-byte aligned parts");
/*
 * Turns a worker warp runs at once on distinct actors (rg_*_lane_turns): 32, or 1 where a scratch is too
 * large to keep 32 per worker (abi.ts scratchLayout decides, and sizes the scratch area for it). An NVRTC
 * define RG_TURN_LANES=1 turns it off (a diagnostic, and the baseline the benchmark compares with).
 */
#define RG_SCRATCH_LANES ${scratch.lanes}u
#ifndef RG_TURN_LANES
#ifdef RG_PROFILED
#define RG_TURN_LANES 1u /* stamps are per warp: a profiling build runs one turn at a time */
#else
#define RG_TURN_LANES RG_SCRATCH_LANES
#endif
#endif
static_assert(RG_TURN_LANES == 1u || (RG_TURN_LANES == 32u && RG_SCRATCH_LANES == 32u), "RG_TURN_LANES: 1, or 32 where the scratch area has 32 per worker");
/*
 * RG_WAVE_STATS (an NVRTC define, a diagnostic: scripts/k2k-probe.ts --wave-stats): where a worker warp's
 * time goes under load. Each lane stamps its turn's phases in shared memory; a warp sums its batches in
 * registers and adds them to this global every RG_WS_FLUSH batches (atomics per turn would perturb what
 * they measure). Indices: RG_WS_* below; cycles are SM clocks (clock64).
 */
#ifdef RG_WAVE_STATS
#define RG_WS_BATCHES 0
#define RG_WS_MESSAGES 1
#define RG_WS_BATCH_CYCLES 2
#define RG_WS_WAVES 3
#define RG_WS_TURNS 4
#define RG_WS_TURN_CYCLES 5
#define RG_WS_DECODE 6
#define RG_WS_ACTIVATE 7
#define RG_WS_HANDLE 8
#define RG_WS_AFTER 9
#define RG_WS_MAX_TURN 10
#define RG_WS_SINGLES 11
#define RG_WS_SINGLE_CYCLES 12
#define RG_WS_PRE_SEND 13
#define RG_WS_CLAIM 14
#define RG_WS_PUBLISH 15
#define RG_WS_POST_SEND 16
#define RG_WS_N 17
#define RG_WS_FLUSH 64u
extern "C" {
__device__ unsigned long long rg_wave_stats[RG_WS_N];
}
__device__ static void rg_ws_flush(unsigned long long* ws, unsigned int* since) {
  for (unsigned int i = 0; i < RG_WS_N; i++) {
    if (ws[i]) atomicAdd(&rg_wave_stats[i], ws[i]);
    ws[i] = 0ull;
  }
  *since = 0u;
}
#endif
/*
 * Bulk jobs from turns (rg_bulk_job): on for units whose scratch is too large for lane turns (abi.ts
 * scratchLayout), the only ones whose turns copy or loop over hundreds of KiB in practice. Elsewhere the
 * post's code is left out (the warp still does every job alone, and still takes chunks when idle): in
 * the SIR Person kernel, at its 168-register cap, it took the spills from 32 to 52 bytes.
 */
#ifndef RG_BULK_TURNS
#define RG_BULK_TURNS ${scratch.lanes === 1 ? 1 : 0}
#endif
/*
 * Warp cooperation in one-lane turns (rg_coop_*): RG_COOP=0 (an NVRTC define) leaves lanes 1..31 idle
 * during a one-lane turn, as before it existed (a diagnostic, and the baseline the benchmark compares with).
 */
#ifndef RG_COOP
#define RG_COOP 1
#endif
#if RG_COOP
#define RG_COOP_END(co) rg_coop_end(co)
#define RG_COOP_HELP(co, lane) rg_coop_help((co), (lane))
#else
#define RG_COOP_END(co) ((void)0)
#define RG_COOP_HELP(co, lane) ((void)0)
#endif
/* Bytes of a slot each worker warp stages in shared memory (a multiple of 16). */
#ifndef RG_STAGE_BYTES
#define RG_STAGE_BYTES 512u
#endif
static_assert(RG_STAGE_BYTES % 16u == 0u && RG_STAGE_BYTES >= RG_HDR + 16u, "RG_STAGE_BYTES: a multiple of 16 that holds a header");
/* DirEntry.state (abi.ts DIR_STATE). */
#define RG_DIR_EMPTY ${DIR_STATE.EMPTY}u
#define RG_DIR_WRITING ${DIR_STATE.WRITING}u
#define RG_DIR_READY ${DIR_STATE.READY}u
#define RG_DIR_DEAD ${DIR_STATE.DEAD}u
#define RG_DIR_OWNER_SHIFT ${DIR_STATE.OWNER_SHIFT}u
#define RG_AT_DIR_STATE ${offsetOf(DirEntry, 'state')}u
/* Slot header word offsets (core protocol.ts): the ingress warp reads headers out of registers. */
#define RG_AT_SEQ ${SLOT.seq}u
#define RG_AT_LENGTH ${SLOT.length}u
#define RG_AT_METHOD ${SLOT.method}u
#define RG_AT_FLAGS ${SLOT.flags}u
#define RG_AT_CORR ${SLOT.corr}u
#define RG_AT_KEYLO ${SLOT.keyLo}u
#define RG_AT_KEYHI ${SLOT.keyHi}u
RG_OFFSET_ASSERT(rg_SlotHeader, seq, RG_AT_SEQ, "slot seq offset");
RG_OFFSET_ASSERT(rg_SlotHeader, length, RG_AT_LENGTH, "slot length offset");
RG_OFFSET_ASSERT(rg_SlotHeader, method, RG_AT_METHOD, "slot method offset");
RG_OFFSET_ASSERT(rg_SlotHeader, flags, RG_AT_FLAGS, "slot flags offset");
RG_OFFSET_ASSERT(rg_SlotHeader, corr, RG_AT_CORR, "slot corr offset");
RG_OFFSET_ASSERT(rg_SlotHeader, keyLo, RG_AT_KEYLO, "slot keyLo offset");
RG_OFFSET_ASSERT(rg_SlotHeader, keyHi, RG_AT_KEYHI, "slot keyHi offset");
/* seq is word 0 and published last: copies write words 1..3 of the first 16 bytes one by one. */
static_assert(RG_AT_SEQ == 0u && RG_HDR % 16u == 0u, "slot header: seq first, 16-byte multiple");

struct rg_kernel {
  rg_ControlBlock* control;
  unsigned char* inbound;
  unsigned char* replies;
  unsigned char* queues;
  unsigned char* states;
  rg_DirEntry* directory;
  rg_DeviceGlobals* g;
  volatile unsigned int* counters;
  const rg_RouteEntry* routes;
  unsigned char* scratch;
  unsigned char* overflow;
  unsigned int overflowNodes;
  unsigned int routeCount, partitions, queueCapacity, ringCapacity, replyCapacity, slotSize, maxActors, dirCapacity, turnBudget, sendBudget;
  unsigned long long queueBytes;
  /* Host lanes: control block l at control + l * RG_CONTROL_STRIDE, inbound ring l at inbound + l * laneBytes. */
  unsigned int lanes;
  unsigned long long laneBytes;
  /* Per host lane, the mode generation its ingress warp last saw (after the counter rows). */
  unsigned int* laneSeen;
  /* Cached lower bound of the host-written reply tail (re-read only when the ring looks full). */
  unsigned int replyTail;
  /* Timers (timers.ts): the device timer area and the host block (0 without timers). */
  unsigned char* timers;
  unsigned char* timerHost;
  /* DeviceGlobals.metaOn, read once at launch: turns keep dirty marks (state-meta.ts). */
  unsigned int metaOn;
  /* DeviceGlobals.hooksOn, read once at launch: activations run the class's onActivate. */
  unsigned int hooksOn;
};

__device__ static inline rg_ControlBlock* rg_cb(rg_kernel* k, unsigned int l) { return (rg_ControlBlock*)((unsigned char*)k->control + (unsigned long long)l * RG_CONTROL_STRIDE); }
__device__ static inline unsigned char* rg_inbound(rg_kernel* k, unsigned int l) { return k->inbound + (unsigned long long)l * k->laneBytes; }
/* Slot idx of a host lane's inbound ring (the one address expression for every ingress path). */
__device__ static inline const unsigned char* rg_in_slot(const rg_kernel* k, const unsigned char* ring, unsigned int idx) {
  return ring + RG_RING_HDR + (unsigned long long)(idx & (k->ringCapacity - 1u)) * k->slotSize;
}
__device__ static inline rg_RingHeader* rg_queue_of(rg_kernel* k, unsigned int p) {
  return (rg_RingHeader*)(k->queues + (unsigned long long)p * k->queueBytes);
}
/* A turn's context for the handler: a message's, a timer tick's (timers.ts) and a hook's fill it alike. */
__device__ static __forceinline__ void rg_turn_init(rg_turn* t, const rg_kernel* k, long long key, double now, unsigned int method, unsigned int flags, unsigned int corr, unsigned int sender, unsigned int grain, rg_coop* co) {
  t->key = key;
  t->now = now;
  t->budget = k->turnBudget;
  t->method = method;
  t->flags = flags;
  t->corr = corr;
  t->sender = sender;
  t->grain = grain;
  t->sendBudget = k->sendBudget;
  t->routes = k->routes;
  t->nroutes = k->routeCount;
  t->co = co;
}
__device__ static inline unsigned int rg_word_of(uint4 c, unsigned int w) { return w == 0u ? c.x : w == 1u ? c.y : w == 2u ? c.z : c.w; }
/* Word at byte offset AT of a slot the warp holds 16 bytes a lane of (lane i: bytes 16i..16i+15). */
#define RG_HWORD(c, AT) __shfl_sync(RG_FULL, rg_word_of((c), ((AT) >> 2) & 3u), (AT) >> 4)

/* One lane's share of the job lane 0 posted (rg_coop_*): a bulk copy, or one of this unit's element-parallel loops. */
__device__ static __noinline__ void rg_coop_run(rg_coop* co, unsigned int lane) {
  if (co->op == RG_CO_COPY) {
#if RG_BULK && RG_BULK_TURNS
    /* every lane reads the same co (written before barrier A): the warp decides as one */
    if (co->n >= RG_BULK_MIN_BYTES && co->g && __isGlobal(co->d) && __isGlobal(co->s) &&
        rg_bulk_job(co, (unsigned int)(((unsigned long long)co->n + RG_BULK_CHUNK_BYTES - 1u) / RG_BULK_CHUNK_BYTES), lane))
      return;
#endif
    rg_coop_copy_lane(co->d, co->s, co->n, lane);
    if (co->sys) __threadfence_system();
    return;
  }
#if RG_BULK && RG_BULK_TURNS
  if (co->n >= RG_BULK_MIN_ITERS && co->g && rg_coop_bulk_ok(co->id) && rg_bulk_job(co, (unsigned int)(((unsigned long long)co->n + RG_BULK_CHUNK_ITERS - 1u) / RG_BULK_CHUNK_ITERS), lane)) {
    /* what the loop's runner reports for a loop that cannot fail */
    if (lane == 0u) {
      co->failAt = 0xffffffffu;
      co->iters = co->n;
    }
    return;
  }
#endif
  switch (co->id) {
${loopCases}
    default: break;
  }
}
__device__ static void rg_coop_chunk(const rg_coop* co, unsigned int lane, unsigned int from, unsigned int to) {
  switch (co->id) {
${chunkCases}
    default: break;
  }
}
__device__ static bool rg_coop_bulk_ok(unsigned int id) {
  switch (id) {
${okCases}
    default: return false;
  }
}

${stateMetaSection(G)}
/* Reply ring: one ring in pinned host memory shared by all warps; the host is its only consumer. */
__device__ static unsigned char* rg_reply_claim(rg_kernel* k, unsigned int* idx) {
  unsigned int i = atomicAdd(&k->g->replyReserve, 1u);
  rg_RingHeader* r = (rg_RingHeader*)k->replies;
  while (i - k->replyTail >= k->replyCapacity) {
    k->replyTail = rg_ld_acq_sys(&r->tail);
    if (i - k->replyTail < k->replyCapacity) break;
    __nanosleep(1000);
  }
  *idx = i;
  return k->replies + RG_RING_HDR + (unsigned long long)(i & (k->replyCapacity - 1u)) * k->slotSize;
}

/* Publishes a reply slot's seq: release at system scope, so the host never sees seq before the payload
   (it may read the payload as soon as it sees seq). A hook so that test/gpu/ask-probe.cu can measure what the release costs. */
#ifndef RG_REPLY_RELEASE
#define RG_REPLY_RELEASE(p, v) rg_st_rel_sys((p), (v))
#endif

/* The reply header, written where the reply is assembled. */
__device__ static inline void rg_reply_header(rg_SlotHeader* h, unsigned int method, unsigned int flags, unsigned int corr, unsigned int len) {
  h->length = len;
  h->method = method;
  h->flags = flags;
  h->corr = corr;
  h->keyLo = 0u;
  h->keyHi = 0u;
  h->sender = ${selfId}u;
  h->grain = ${selfId}u;
  h->_pad = 0u;
  h->time = 0.0;
}

/*
 * Sends a reply staged at 'stage' (header + len payload bytes, 16-aligned; the worker's shared-memory
 * stage, or the request's device slot when the reply is larger): 16-byte stores across PCIe instead of
 * one posted write per msgpack byte, then seq with release at system scope.
 */
__device__ static void rg_reply_out(rg_kernel* k, unsigned char* stage, unsigned int method, unsigned int flags, unsigned int corr, unsigned int len, rg_coop* co = 0) {
  rg_reply_header((rg_SlotHeader*)stage, method, flags, corr, len);
  unsigned int idx;
  unsigned char* out = rg_reply_claim(k, &idx);
  RG_STAMP(RG_S_W_REPLY_CLAIMED);
  const unsigned int* sw = (const unsigned int*)stage;
  unsigned int* dw = (unsigned int*)out;
  dw[1] = sw[1];
  dw[2] = sw[2];
  dw[3] = sw[3];
  const unsigned int chunks = (RG_HDR + len + 15u) / 16u;
  /* A large reply: the warp's 32 lanes store it (each fences at system scope before the barrier, so the
     release of seq below comes after every lane's stores for the host too). */
  if (co && (chunks - 1u) * 16u >= RG_COOP_MIN_BYTES) rg_coop_copy(co, out + 16u, stage + 16u, (chunks - 1u) * 16u, true);
  else for (unsigned int c = 1; c < chunks; c++) ((uint4*)out)[c] = ((const uint4*)stage)[c];
  RG_REPLY_RELEASE(&((rg_SlotHeader*)out)->seq, idx + 1u);
  RG_STAMP(RG_S_W_REPLIED);
}

/* An error or rejection reply: a msgpack str. Staged in 'stage' (cap bytes) when given, else written in place. */
__device__ static void rg_reply_text(rg_kernel* k, unsigned char* stage, unsigned int cap, unsigned int method, unsigned int flags, unsigned int corr, const char* text) {
  if (!stage) cap = k->slotSize;
  unsigned int n = rg_strlen(text);
  if (n > cap - RG_HDR - 5u) n = cap - RG_HDR - 5u;
  if (stage) {
    rg_wr w = {stage + RG_HDR, 0u, cap - RG_HDR};
    rg_wr_str(&w, text, n);
    rg_reply_out(k, stage, method, flags, corr, w.pos);
    return;
  }
  unsigned int idx;
  unsigned char* slot = rg_reply_claim(k, &idx);
  rg_wr w = {slot + RG_HDR, 0u, k->slotSize - RG_HDR};
  rg_wr_str(&w, text, n);
  rg_SlotHeader* h = (rg_SlotHeader*)slot;
  rg_reply_header(h, method, flags, corr, w.pos);
  RG_REPLY_RELEASE(&h->seq, idx + 1u);
}

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
__device__ static __noinline__ rg_${G}_state* rg_${G}_insert(rg_kernel* k, unsigned int* ctr, unsigned int home, unsigned int lo, unsigned int hi, unsigned int ready) {
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
    rg_${G}_state* s = (rg_${G}_state*)(k->states + (unsigned long long)slot * sizeof(rg_${G}_state));
    rg_zero(s, sizeof(rg_${G}_state));
    rg_meta_activate(k->states, k->maxActors, slot, lo, hi);
    rg_st_rel_gpu(&e->state, ready); /* release: key, slot and zeroed state visible first (host inspect) */
    ctr[RG_C_ACTIVATIONS]++;
    return s;
  }
  if (slot != ~0u) rg_slot_free(k, slot);
  return 0;
}

/*
 * Directory: open addressing. A key is only ever looked up and inserted by its own partition's worker,
 * and a ready entry names that partition (RG_DIR_READY | (owner + 1) << RG_DIR_OWNER_SHIFT). So one
 * relaxed 16-byte load decides an entry: another owner's entry is skipped unread, and our own was
 * written by this very thread, whose later loads see its own stores (one L2 round trip, not two).
 * DEAD entries are passed like another owner's: the key may lie beyond a tombstone.
 */
__device__ static rg_${G}_state* rg_${G}_activate(rg_kernel* k, unsigned int* ctr, long long key, unsigned int part) {
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
      if (v.x == lo && v.y == hi) return (rg_${G}_state*)(k->states + (unsigned long long)v.z * sizeof(rg_${G}_state));
      continue;
    }
    if (v.w != RG_DIR_EMPTY) continue; /* another partition's key, being written, or a dead entry */
    return rg_${G}_insert(k, ctr, home, lo, hi, ready);
  }
  return 0;
}

${timers}

#if RG_${G}_HAS_ON_ACTIVATE
/*
 * onActivate (where DeviceGlobals.hooksOn: a class with persistence, as on the CPU backend), run as a
 * turn of an actor the turn in progress just activated: after its declared timers
 * were armed (so the hook may stop or restart them) and before the message's own turn, with the
 * message's clock (the CPU backend's order). A failure counts as a handler error and goes to the host as
 * a failed tell under the hook's method id (core reports it as a tellError); the message still runs, as
 * on the CPU. 'stage' may be written: the message was decoded into the scratch before activation.
 */
/* __noinline__: it runs once per activation; inlined, it would add its registers to every turn. */
__device__ static __noinline__ void rg_${G}_on_activate(rg_kernel* k, unsigned int* ctr, rg_${G}_state* st, long long key, double now, unsigned int part, unsigned char* stage, unsigned int cap, rg_coop* co) {
  rg_turn t = {};
  rg_turn_init(&t, k, key, now, RG_HOOK_ON_ACTIVATE, 0u, 0u, RG_HOST_SENDER, ${selfId}u, co);
  RG_TM_TURN(k, &t, st, part);
  const bool writes = rg_${G}_hook_writes(RG_HOOK_ON_ACTIVATE);
  if (writes && k->metaOn) rg_meta_enter(k->states, k->maxActors, st);
  const int rc = rg_${G}_hook(&t, st, RG_HOOK_ON_ACTIVATE);
  if (writes && k->metaOn) rg_meta_touch(k->states, k->maxActors, st, now);
  ctr[RG_C_K2K_SENT] += t.sent;
  if (rc > RG_FORWARDED) {
    ctr[RG_C_HANDLER_ERRORS]++;
    rg_reply_text(k, stage, cap, RG_HOOK_ON_ACTIVATE, RG_REPLY | RG_ERROR, 0u, rg_turn_error(&t, rc));
  }
}
#define RG_ON_ACTIVATE(k, ctr, acts, st, key, now, part, stage, cap, co) \
  do { if ((k)->hooksOn && (ctr)[RG_C_ACTIVATIONS] != (acts)) rg_${G}_on_activate((k), (ctr), (st), (key), (now), (part), (stage), (cap), (co)); } while (0)
#else
#define RG_ON_ACTIVATE(k, ctr, acts, st, key, now, part, stage, cap, co) ((void)0)
#endif

/*
 * One turn: validate, decode, activate, run the handler, reply. Nothing is dropped silently. The warp
 * copied the slot's first RG_STAGE_BYTES into 'stage' (shared memory): the header and a small request
 * are read from there, and a small reply is assembled there. Larger ones use the request's own queue
 * slot (ours until the worker moves the tail), which is free once the request is decoded.
 */
/* __noinline__: it is called from three places (lane turns, the one-lane queue path, overflow); inlined at
   each, NVRTC took 14 s for the bank unit instead of 4 s (nvcc -cubin, sm_90), and the kernel 168 registers
   instead of 148. */
__device__ static __noinline__ void rg_${G}_turn(rg_kernel* k, unsigned int* ctr, unsigned char* slot, unsigned char* stage, unsigned int cap, unsigned int part, unsigned char* scratch, rg_coop* co) {
  const rg_SlotHeader* h = (const rg_SlotHeader*)stage;
  RG_TM_TICK_TURN(k, ctr, slot, stage, cap, part, scratch, co); /* a timer tick: not a message (timers.ts) */
  const unsigned int len = h->length, method = h->method, flags = h->flags, corr = h->corr, sender = h->sender;
  const long long key = ${keyOf('h->keyLo', 'h->keyHi')};
  const double now = h->time;
  RG_WS_MARK(0);
  ctr[RG_C_RECEIVED]++;
  if (sender != RG_HOST_SENDER) ctr[RG_C_K2K_RECEIVED]++;
  /*
   * Request and reply live in the worker's scratch, not on the stack, and are not zeroed per turn
   * (zeroing a scratch sized for a vec's bound cost a 10-element vector-add ask ~45 µs): the decoder
   * writes every request field or rejects the message (exact key count, no duplicates), a vec's items
   * past its length are never read (indexing is bounded by .length, copies and encoders stop there), and
   * every return writes the whole reply (a reply literal names every field). RG_ZERO_SCRATCH (an NVRTC
   * define) zeroes it before every turn anyway: a diagnostic, to tell a bug of this rule from others.
   */
  rg_${G}_req* req = (rg_${G}_req*)scratch;
  rg_${G}_rep* rep = (rg_${G}_rep*)(scratch + RG_SCRATCH_REPLY_AT);
  const char* why = 0;
  if (len > k->slotSize - RG_HDR) why = "message length exceeds the slot";
  else if (h->grain != ${selfId}u) why = "message for another grain class";
  else if (method >= ${methodCount}u) why = "unknown method id";
  else if (${stringKeys ? '!' : ''}(flags & RG_STRING_KEY)) why = "${stringKeys ? 'grain has string keys but got an integer key' : 'grain has integer keys but got a string key'}";
  else if (!rg_${G}_decode(method, (RG_HDR + len <= cap ? stage : slot) + RG_HDR, len, req, co)) why = "malformed payload: it does not match the method's request schema";
  RG_STAMP(RG_S_W_DECODED);
  RG_WS_MARK(1);
  rg_${G}_state* st = 0;
  if (!why) {
    const unsigned int acts = ctr[RG_C_ACTIVATIONS];
    st = rg_${G}_activate(k, ctr, key, part);
    if (!st) why = "state table full (maxActors)";
    else {
      RG_TM_ACTIVATED(k, ctr, acts, st, key, now, part); /* declared timers start (timers.ts) */
      RG_ON_ACTIVATE(k, ctr, acts, st, key, now, part, stage, cap, co); /* then the class's onActivate */
    }
  }
  RG_STAMP(RG_S_W_ACTIVATED);
  RG_WS_MARK(2);
  if (why) {
    ctr[RG_C_REJECTED]++;
    rg_reply_text(k, stage, cap, method, RG_REPLY | RG_REJECTED, corr, why);
    return;
  }
  rg_turn t = {};
  rg_turn_init(&t, k, key, now, method, flags, corr, sender, ${selfId}u, co);
  RG_TM_TURN(k, &t, st, part);
  const bool writes = rg_${G}_writes_state(method);
  /* Only a class with persistent state keeps marks: the fences cost every K2K hop (metaOn, abi.ts). */
  if (writes && k->metaOn) rg_meta_enter(k->states, k->maxActors, st); /* a gather now leaves this actor to the next one (state-meta.ts) */
  const int rc = rg_${G}_handle(&t, st, req, rep);
  /* The actor's last turn, and its dirty mark where the handler may have stored into the state (state-meta.ts). */
  if (k->metaOn) {
    if (writes) rg_meta_touch(k->states, k->maxActors, st, now);
    else rg_meta_seen(k->states, k->maxActors, st, now);
  }
  RG_STAMP(RG_S_W_HANDLED);
  RG_WS_MARK(3);
  ctr[RG_C_PROCESSED]++;
  ctr[RG_C_K2K_SENT] += t.sent;
  if (rc > RG_FORWARDED) {
    ctr[RG_C_HANDLER_ERRORS]++;
    rg_reply_text(k, stage, cap, method, RG_REPLY | RG_ERROR, corr, rg_turn_error(&t, rc));
    return;
  }
  if (corr == 0u || rc == RG_FORWARDED) return;
  rg_wr m = {0, 0u, 0xffffffffu};
  if (!rg_${G}_encode_reply(method, rep, &m)) {
    ctr[RG_C_HANDLER_ERRORS]++;
    rg_reply_text(k, stage, cap, method, RG_REPLY | RG_ERROR, corr, rg_err_text(RG_E_REPLY_MISMATCH));
    return;
  }
  if (m.pos > k->slotSize - RG_HDR) {
    ctr[RG_C_HANDLER_ERRORS]++;
    rg_reply_text(k, stage, cap, method, RG_REPLY | RG_ERROR, corr, "PAYLOAD_TOO_LARGE: the reply does not fit a slot; raise slotSize");
    return;
  }
  unsigned char* out = RG_HDR + m.pos <= cap ? stage : slot;
  rg_wr w = {out + RG_HDR, 0u, m.pos, co};
  rg_${G}_encode_reply(method, rep, &w);
  RG_STAMP(RG_S_W_ENCODED);
  rg_reply_out(k, out, method, RG_REPLY, corr, w.pos, co);
  ctr[RG_C_REPLIED]++;
}

#if RG_TURN_LANES > 1
/*
 * Lane-parallel turns. Lane i acquired queue slot tail + i's seq ('mine'); the ready prefix (n > 1
 * messages) is taken at once and run in waves: in each wave every lane whose message is the oldest left for its actor runs
 * its turn, so one turn at a time per actor and FIFO per sender → actor hold as with one lane, while
 * up to 32 distinct actors' turns overlap their memory latency. Each lane assembles a reply in its own
 * queue slot (ours until the tail moves past it) and decodes into its own scratch. Counters are counted
 * per lane and summed into every lane's ctr (lane 0 stores the row). A lone message takes the one-lane
 * path instead, staged in shared memory (the latency case). RG_SKIP slots (ingress placeholders) take
 * no turn.
 */
#ifdef RG_WAVE_STATS
#define RG_WS_ARG , ws
#define RG_WS_PARAM , unsigned long long* ws
#else
#define RG_WS_ARG
#define RG_WS_PARAM
#endif
__device__ static void rg_${G}_lane_turns(rg_kernel* k, unsigned int n, unsigned char* mine, unsigned int p, unsigned int lane, unsigned int* ctr, unsigned char* scratch RG_WS_PARAM) {
  const bool live = lane < n;
  const rg_SlotHeader* h = (const rg_SlotHeader*)mine;
  const unsigned int flags = live ? h->flags : RG_SKIP;
  const long long key = live ? ${keyOf('h->keyLo', 'h->keyHi')} : 0ll;
  unsigned int todo = __ballot_sync(RG_FULL, live && (flags & RG_SKIP) == 0u);
  /* Lanes holding a message for the same actor (only those with a turn to take). */
  const unsigned int same = __match_any_sync(RG_FULL, (unsigned long long)key) & todo;
  unsigned int counts[RG_NCOUNTERS];
  for (unsigned int c = 0; c < RG_NCOUNTERS; c++) counts[c] = 0u;
  unsigned char* own = scratch + (unsigned long long)lane * RG_SCRATCH_BYTES;
#ifdef RG_WAVE_STATS
  unsigned long long wsTurn = 0ull, wsPh[8] = {0ull, 0ull, 0ull, 0ull, 0ull, 0ull, 0ull, 0ull}, wsMax = 0ull, wsWaves = 0ull, wsTurns = 0ull;
#endif
  while (todo != 0u) {
    const bool go = ((todo >> lane) & 1u) != 0u && (unsigned int)(__ffs(same & todo) - 1) == lane;
#ifdef RG_WAVE_STATS
    const long long w0 = clock64();
#endif
    if (go) rg_${G}_turn(k, counts, mine, mine, k->slotSize, p, own, 0);
#ifdef RG_WAVE_STATS
    if (go) {
      const long long w1 = clock64();
      const long long* m = rg_ws_mark[threadIdx.x];
      wsTurn += (unsigned long long)(w1 - w0);
      if ((unsigned long long)(w1 - w0) > wsMax) wsMax = (unsigned long long)(w1 - w0);
      wsPh[0] += (unsigned long long)(m[1] - m[0]);
      wsPh[1] += (unsigned long long)(m[2] - m[1]);
      wsPh[2] += (unsigned long long)(m[3] - m[2]);
      wsPh[3] += (unsigned long long)(w1 - m[3]);
      /* A turn that sent one K2K message (stamps 4..6 newer than its start): the handler's parts. */
      if (m[4] > m[2] && m[5] > m[4] && m[6] > m[5] && m[3] > m[6]) {
        wsPh[4] += (unsigned long long)(m[4] - m[2]);
        wsPh[5] += (unsigned long long)(m[5] - m[4]);
        wsPh[6] += (unsigned long long)(m[6] - m[5]);
        wsPh[7] += (unsigned long long)(m[3] - m[6]);
      }
      wsTurns++;
    }
    wsWaves++;
#endif
    todo &= ~__ballot_sync(RG_FULL, go);
    /* A wave's writes (an actor's state, a directory entry) are seen by the next wave's lanes: __syncwarp
       orders memory among the warp's threads, which a ballot alone does not. */
    __syncwarp();
  }
  for (unsigned int c = 0; c < RG_NCOUNTERS; c++) {
    unsigned int v = counts[c];
    for (unsigned int o = 16u; o != 0u; o >>= 1) v += __shfl_xor_sync(RG_FULL, v, o);
    ctr[c] += v;
  }
#ifdef RG_WAVE_STATS
  /* Sums over the warp's lanes into lane 0's accumulators (the caller adds the batch's own figures). */
  for (unsigned int o = 16u; o != 0u; o >>= 1) {
    wsTurn += __shfl_xor_sync(RG_FULL, wsTurn, o);
    wsTurns += __shfl_xor_sync(RG_FULL, wsTurns, o);
    for (unsigned int i = 0; i < 8u; i++) wsPh[i] += __shfl_xor_sync(RG_FULL, wsPh[i], o);
    const unsigned long long om = __shfl_xor_sync(RG_FULL, wsMax, o);
    if (om > wsMax) wsMax = om;
  }
  if (lane == 0u) {
    ws[RG_WS_WAVES] += wsWaves;
    ws[RG_WS_TURNS] += wsTurns;
    ws[RG_WS_TURN_CYCLES] += wsTurn;
    for (unsigned int i = 0; i < 4u; i++) ws[RG_WS_DECODE + i] += wsPh[i];
    for (unsigned int i = 0; i < 4u; i++) ws[RG_WS_PRE_SEND + i] += wsPh[4u + i];
    ws[RG_WS_MAX_TURN] += wsMax;
  }
#endif
  /* Every lane's reads of its slot and writes of its reply come before lane 0 releases the tail. */
  __syncwarp();
}
#endif

/*
 * A worker's counter row, stored in two parts with a fence between (the tail's release store, or a
 * fence): first what a turn received and sent, then what it finished (processed, rejected). A reader
 * that sees a turn finished then also sees the K2K messages it sent counted, so a snapshot can never
 * balance while one of them is still in flight (the host's quiet barrier, system.idle()).
 */
__device__ static inline void rg_row_sent(volatile unsigned int* row, const unsigned int* ctr) {
  for (unsigned int c = 0; c < RG_NCOUNTERS; c++)
    if (c != RG_C_PROCESSED && c != RG_C_REJECTED) row[c] = ctr[c];
}
__device__ static inline void rg_row_done(volatile unsigned int* row, const unsigned int* ctr) {
  row[RG_C_PROCESSED] = ctr[RG_C_PROCESSED];
  row[RG_C_REJECTED] = ctr[RG_C_REJECTED];
}

/*
 * Worker: warp p + 1 is the only consumer of partition queue p (turns and FIFO, no locks). The whole
 * warp polls and copies each slot into shared memory at once (one L2 round trip, where lane 0 alone
 * paid one per header field and payload sector); lane 0 runs the turn. Its counter row has this one
 * writer: counts live in registers and are stored after each turn (stores only: a read-modify-write
 * of device memory costs an L2 round trip per counter).
 */
__device__ static void rg_${G}_worker(rg_kernel* k, unsigned int p, unsigned int lane) {
  __shared__ uint4 rg_stage[RG_WARPS_PER_BLOCK][RG_STAGE_BYTES / 16u];
  unsigned char* stage = (unsigned char*)rg_stage[threadIdx.x >> 5];
#if RG_COOP
  /* The warp's cooperation block: lanes 1..31 help a one-lane turn through it (rg_coop_*). */
  __shared__ rg_coop rg_coops[RG_WARPS_PER_BLOCK];
  rg_coop* const co = &rg_coops[threadIdx.x >> 5];
  if (lane == 0u) co->g = RG_BULK ? k->g : (rg_DeviceGlobals*)0;
  __syncwarp();
#else
  rg_coop* const co = 0;
#endif
  const unsigned int span = k->slotSize < RG_STAGE_BYTES ? k->slotSize : RG_STAGE_BYTES;
  /* RG_SCRATCH_LANES scratches per worker (lane i's at i): lane 0's serves the one-lane turns. */
  unsigned char* scratch = k->scratch + (unsigned long long)p * RG_SCRATCH_LANES * RG_SCRATCH_BYTES;
  rg_RingHeader* q = rg_queue_of(k, p);
  volatile unsigned int* row = k->counters + (p + 1u) * RG_NCOUNTERS;
  unsigned int ctr[RG_NCOUNTERS];
  for (unsigned int c = 0; c < RG_NCOUNTERS; c++) ctr[c] = row[c];
  unsigned int tail = rg_ld_vol(&q->tail);
  unsigned int idle = 0, mode = rg_ld_vol(&k->g->mode);
#ifdef RG_WAVE_STATS
  unsigned long long ws[RG_WS_N];
  for (unsigned int i = 0; i < RG_WS_N; i++) ws[i] = 0ull;
  unsigned int wsSince = 0u;
#endif
  /* This partition's overflow list (device.ts rg_ov_*): its head node, initially the stub node p. */
  const unsigned int nodeBytes = RG_OV_NODE_HDR + k->slotSize;
  unsigned int ovHead = p + 1u;
  RG_TM_WORKER_STATE
  for (;;) {
    RG_TM_WORKER_POLL(k, p, lane, mode); /* due timer ticks into their owners' queues (timers.ts) */
    if (mode == RG_KS_ACTIVE || mode == RG_MODE_DRAIN) {
      unsigned char* slot = rg_queue_slot(q, k->queueCapacity, k->slotSize, tail);
#if RG_TURN_LANES > 1
      /* One poll sees how many are waiting: lane i acquires slot tail + i's seq (one L2 round trip for all). */
      unsigned char* mine = rg_queue_slot(q, k->queueCapacity, k->slotSize, tail + lane);
      const unsigned int ready = __ballot_sync(RG_FULL, lane < k->queueCapacity && rg_ld_acq_gpu(&((rg_SlotHeader*)mine)->seq) == tail + lane + 1u);
      /* __syncwarp: lane 0's acquire is ordered before every lane's loads of slot tail (the stage copy). */
      __syncwarp();
      if (ready & 1u) {
        const unsigned int n = ready == RG_FULL ? 32u : (unsigned int)(__ffs(~ready) - 1);
        if (n > 1u) {
          /* More than one message waiting: up to 32 turns at once, one per lane (rg_*_lane_turns). */
#ifdef RG_WAVE_STATS
          const long long b0 = clock64();
#endif
          rg_${G}_lane_turns(k, n, mine, p, lane, ctr, scratch RG_WS_ARG);
#ifdef RG_WAVE_STATS
          if (lane == 0u) {
            ws[RG_WS_BATCHES]++;
            ws[RG_WS_MESSAGES] += n;
            ws[RG_WS_BATCH_CYCLES] += (unsigned long long)(clock64() - b0);
            if (++wsSince == RG_WS_FLUSH) rg_ws_flush(ws, &wsSince);
          }
#endif
          if (lane == 0u) {
            rg_row_sent(row, ctr);
            rg_st_rel_gpu(&q->tail, tail + n);
            rg_row_done(row, ctr);
          }
          tail += n;
          idle = 0;
          __syncwarp();
          continue;
        }
#else
      if (__all_sync(RG_FULL, rg_ld_acq_gpu(&((rg_SlotHeader*)slot)->seq) == tail + 1u)) {
#endif
        if (lane == 0u) RG_STAMP(RG_S_W_SEEN);
        for (unsigned int at = lane * 16u; at < span; at += 512u) *(uint4*)(stage + at) = *(const uint4*)(slot + at);
        __syncwarp();
        const bool skip = (((const rg_SlotHeader*)stage)->flags & RG_SKIP) != 0u;
#ifdef RG_ZERO_SCRATCH
        if (!skip)
          for (unsigned long long at = lane * 16u; at < RG_SCRATCH_BYTES; at += 512u) *(uint4*)(scratch + at) = make_uint4(0u, 0u, 0u, 0u);
#endif
        /* Every lane has read the flags before lane 0's turn writes the stage (a reply is assembled there). */
        __syncwarp();
        if (skip) {
          /* Claimed by ingress past its batch's end: no message here (it comes again later). */
          if (lane == 0u) rg_st_rel_gpu(&q->tail, tail + 1u);
        } else if (lane == 0u) {
#ifdef RG_WAVE_STATS
          const long long s0 = clock64();
#endif
          rg_${G}_turn(k, ctr, slot, stage, RG_STAGE_BYTES, p, scratch, co);
#ifdef RG_WAVE_STATS
          ws[RG_WS_SINGLES]++;
          ws[RG_WS_SINGLE_CYCLES] += (unsigned long long)(clock64() - s0);
#endif
          RG_COOP_END(co);
          rg_row_sent(row, ctr);
          rg_st_rel_gpu(&q->tail, tail + 1u);
          rg_row_done(row, ctr);
          RG_STAMP(RG_S_W_DONE);
          RG_STAMP_TURN_END();
        } else {
          RG_COOP_HELP(co, lane);
        }
        tail++;
        idle = 0;
        __syncwarp();
        continue;
      }
      if (k->overflowNodes != 0u) {
        /* Overflow only when the queue is empty; its link (acquire) is read before the queue head (FIFO). */
        unsigned int nx = 0u, hd = 0u;
        if (lane == 0u) {
          nx = rg_ld_acq_gpu((const unsigned int*)rg_ov_node(k->overflow, k->partitions, nodeBytes, ovHead));
          hd = rg_ld_vol(&q->head);
        }
        nx = __shfl_sync(RG_FULL, nx, 0);
        hd = __shfl_sync(RG_FULL, hd, 0);
        /* As for a queue slot: lane 0's acquire before every lane's loads of the node (a shuffle does not order memory). */
        __syncwarp();
#if RG_TURN_LANES > 1
        if (nx != 0u && hd == tail) {
          /*
           * Up to 32 nodes at once, as lane turns: lane 0 follows the links (each acquire orders that node's
           * slot before our loads) and leaves the refs in the stage; lane i takes node i. Waves keep one turn
           * at a time per actor and list order (= append order) per actor. A list drained one node a turn
           * was SIR's bottleneck: a partition whose queue once overflowed sends everything there until the
           * list is empty.
           */
          unsigned int* refs = (unsigned int*)stage;
          unsigned int n = 0u;
          if (lane == 0u) {
            unsigned int cur = nx;
            refs[n++] = nx;
            while (n < RG_TURN_LANES) {
              const unsigned int l = rg_ld_acq_gpu((const unsigned int*)rg_ov_node(k->overflow, k->partitions, nodeBytes, cur));
              if (l == 0u) break;
              refs[n++] = cur = l;
            }
          }
          n = __shfl_sync(RG_FULL, n, 0);
          __syncwarp();
          if (n > 1u) {
            const unsigned int mineRef = refs[lane < n ? lane : 0u];
            const unsigned int last = refs[n - 1u];
            unsigned char* mine = rg_ov_node(k->overflow, k->partitions, nodeBytes, mineRef) + RG_OV_NODE_HDR;
            rg_${G}_lane_turns(k, n, mine, p, lane, ctr, scratch RG_WS_ARG);
            /* Lane i < n-1 frees node i (its turn is done: lane_turns ends with a warp barrier); lane n-1
               frees the old head. The last node taken becomes the list's head, as one node at a time does. */
            if (lane + 1u < n) rg_ov_free(k->overflow, k->partitions, nodeBytes, mineRef);
            else if (lane + 1u == n) rg_ov_free(k->overflow, k->partitions, nodeBytes, ovHead);
            if (lane == 0u) {
              rg_row_sent(row, ctr);
              __threadfence();
              rg_row_done(row, ctr);
              atomicSub(&((rg_OverflowHeader*)k->overflow)->inUse, n);
              atomicSub(rg_ov_counts(k->overflow, k->partitions) + p, n);
            }
            ovHead = last;
            idle = 0;
            __syncwarp();
            continue;
          }
        }
#endif
        if (nx != 0u && hd == tail) {
          unsigned char* node = rg_ov_node(k->overflow, k->partitions, nodeBytes, nx) + RG_OV_NODE_HDR;
          for (unsigned int at = lane * 16u; at < span; at += 512u) *(uint4*)(stage + at) = *(const uint4*)(node + at);
#ifdef RG_ZERO_SCRATCH
          for (unsigned long long at = lane * 16u; at < RG_SCRATCH_BYTES; at += 512u) *(uint4*)(scratch + at) = make_uint4(0u, 0u, 0u, 0u);
#endif
          __syncwarp();
          if (lane == 0u) {
            rg_${G}_turn(k, ctr, node, stage, RG_STAGE_BYTES, p, scratch, co);
            RG_COOP_END(co);
            rg_row_sent(row, ctr);
            __threadfence();
            rg_row_done(row, ctr);
            /* The old head is no list's node any more (its link was set): back to the pool. */
            rg_ov_free(k->overflow, k->partitions, nodeBytes, ovHead);
            atomicSub(&((rg_OverflowHeader*)k->overflow)->inUse, 1u);
            atomicSub(rg_ov_counts(k->overflow, k->partitions) + p, 1u);
          } else {
            RG_COOP_HELP(co, lane);
          }
          ovHead = nx;
          idle = 0;
          __syncwarp();
          continue;
        }
      }
    }
    /*
     * The mode word changes rarely: re-read it every 16 idle polls, on every poll once sleeping (idle
     * stops counting at RG_WORKER_SPIN, which need not be a multiple of 16: with RG_WORKER_SPIN=8 the
     * workers never saw EXIT and the kernel never ended), and at once when paused.
     */
    if ((idle & 15u) == 0u || idle >= RG_WORKER_SPIN || (mode != RG_KS_ACTIVE && mode != RG_MODE_DRAIN)) {
      mode = rg_ld_vol(&k->g->mode);
      if (mode == RG_MODE_EXIT) return;
    }
#if RG_BULK
    {
      /* Nothing of our own (no claimed queue slot, no overflow node): a chunk of another warp's bulk job,
         then our queue again. A message that arrives meanwhile waits for at most one chunk. */
      unsigned int help = 0u;
      /* Every RG_BULK_POLL_EVERY-th idle poll while spinning (each look is an L2 round trip more before
         the next poll of our queue: a K2K hop's latency), every poll once sleeping. */
      const bool look = idle % RG_BULK_POLL_EVERY == RG_BULK_POLL_EVERY - 1u || idle >= RG_WORKER_SPIN;
      if (lane == 0u && look && rg_ld_vol(&k->g->bulkLive) != 0u && rg_ld_vol(&q->head) == tail &&
          (k->overflowNodes == 0u || rg_ld_acq_gpu((const unsigned int*)rg_ov_node(k->overflow, k->partitions, nodeBytes, ovHead)) == 0u))
        help = 1u;
      if (__shfl_sync(RG_FULL, help, 0) != 0u && rg_bulk_take(k->g, lane)) continue;
    }
#endif
#ifdef RG_WAVE_STATS
    /* Idle: what this warp summed so far goes out now (the host reads the sums once the work is done). */
    if (lane == 0u && wsSince != 0u && idle == 256u) rg_ws_flush(ws, &wsSince);
#endif
    if (idle < RG_WORKER_SPIN) idle++;
    else __nanosleep(RG_WORKER_IDLE_NS);
  }
}

/*
 * Ingress, run by all 32 lanes of warp 0: host ring → partition queues, up to 32 messages a round, so
 * that the PCIe round trips are paid per batch, not per message:
 *   1. lane i acquires the seq of host slot tail + i (32 reads in flight at once); the ready prefix is
 *      the batch;
 *   2. lane i loads its message's header while the warp loads every message's first span bytes;
 *   3. messages for one partition queue are claimed with one CAS by the group's lowest lane, in lane
 *      (= host ring) order, so FIFO per sender → actor holds;
 *   4. the warp copies payloads (loaded in step 2 in one round trip, RG_INGRESS_CHUNKS a lane), then lane i
 *      releases its queue slot's seq.
 * If a group's queue is full, the batch ends before that group's first message: later messages that
 * were already claimed elsewhere get SKIP slots (passed over by the worker) and are moved again in a
 * later round, so the host ring is consumed strictly in order and nothing is moved twice.
 */
/* 16-byte chunks a lane has in flight while moving the part of a large message past its first 512 bytes. */
#ifndef RG_INGRESS_BIG_UNROLL
#define RG_INGRESS_BIG_UNROLL 8u
#endif
/* 16-byte chunks of the batch each lane has in flight at once (registers: 4 words each). */
#ifndef RG_INGRESS_CHUNKS
#define RG_INGRESS_CHUNKS 16u
#endif
static_assert(RG_INGRESS_CHUNKS >= 1u && RG_INGRESS_CHUNKS <= 32u && RG_HDR <= 512u, "ingress: chunks a lane; headers lie in a slot's first 512 bytes");
static_assert(RG_AT_LENGTH < 16u && RG_AT_METHOD < 16u && RG_AT_FLAGS < 16u && RG_AT_CORR >= 16u && RG_AT_KEYLO >= 16u && RG_AT_KEYHI >= 16u && RG_AT_KEYHI < 32u,
              "ingress: length/method/flags in the header's first 16 bytes, corr/key in the next 16");
__device__ static inline unsigned int rg_hdr_word(uint4 a, uint4 b, unsigned int at) { return at < 16u ? rg_word_of(a, at >> 2) : rg_word_of(b, (at - 16u) >> 2); }

/*
 * One message, the idle-to-busy case (a lone ask): compact code on purpose. The batched path below,
 * run for a lone message, measured 1.6 µs slower per ask on the H100 (same run), most of it spread
 * over every stage it touches (its unrolled loops are several times this code's size).
 * Every lane has acquired this slot's seq.
 */
__device__ static unsigned int rg_${G}_ingress_one(rg_kernel* k, unsigned char* ring, unsigned int* hostTail, volatile unsigned int* ctr, unsigned int lane) {
  rg_RingHeader* in = (rg_RingHeader*)ring;
  const unsigned int span = k->slotSize < 512u ? k->slotSize : 512u;
  const unsigned char* s = rg_in_slot(k, ring, *hostTail);
  if (lane == 0u) RG_STAMP(RG_S_IN_SEEN);
  uint4 c = make_uint4(0u, 0u, 0u, 0u);
  if (lane * 16u < span) c = RG_HOST_V4(s + lane * 16u);
  const unsigned int len = RG_HWORD(c, RG_AT_LENGTH), flags = RG_HWORD(c, RG_AT_FLAGS);
  if (lane == 0u) RG_STAMP(RG_S_IN_LOADED);
  const unsigned int keyLo = RG_HWORD(c, RG_AT_KEYLO), keyHi = RG_HWORD(c, RG_AT_KEYHI);
  const unsigned int method = RG_HWORD(c, RG_AT_METHOD), corr = RG_HWORD(c, RG_AT_CORR);
  const unsigned long long total = RG_HDR + (unsigned long long)len + ((flags & RG_STRING_KEY) ? keyHi : 0u);
  if (total > k->slotSize) {
    if (lane == 0u) {
      /* row 0 is shared by every ingress warp: atomics */
      atomicAdd((unsigned int*)&ctr[RG_C_RECEIVED], 1u);
      atomicAdd((unsigned int*)&ctr[RG_C_REJECTED], 1u);
      rg_reply_text(k, 0, 0u, method, RG_REPLY | RG_REJECTED, corr, "message length exceeds the slot");
    }
    __syncwarp();
  } else {
    const long long key = ${keyOf('keyLo', 'keyHi')};
    rg_RingHeader* q = rg_queue_of(k, rg_partition(key, k->partitions));
    unsigned int hd = 0u, got = 0u;
    for (;;) {
      if (lane == 0u) {
        hd = rg_ld_vol(&q->head);
        if (hd - rg_ld_acq_gpu(&q->tail) >= k->queueCapacity) got = 2u;
        else if (atomicCAS(&q->head, hd, hd + 1u) == hd) got = 1u;
      }
      got = __shfl_sync(RG_FULL, got, 0);
      if (got != 0u) break; /* 0: lost the slot to a K2K producer: claim again */
    }
    if (got == 2u) return 0u; /* queue full: the message waits in the host ring */
    if (lane == 0u) RG_STAMP(RG_S_IN_CLAIMED);
    hd = __shfl_sync(RG_FULL, hd, 0);
    unsigned char* d = rg_queue_slot(q, k->queueCapacity, k->slotSize, hd);
    if (lane == 0u) {
      unsigned int* dw = (unsigned int*)d;
      dw[1] = c.y;
      dw[2] = c.z;
      dw[3] = c.w;
    } else if (lane * 16u < total) {
      ((uint4*)d)[lane] = c;
    }
#if RG_BULK
    /* A large message: the rest through a job board (idle workers read it over PCIe beside this warp). */
    const bool bulk = total >= 512u + (unsigned long long)RG_BULK_MIN_BYTES && rg_bulk_copy(k->g, d + 512u, s + 512u, (unsigned int)(total - 512u), lane);
#else
    const bool bulk = false;
#endif
    if (!bulk)
      for (unsigned long long at = 512u + lane * 16u; at < total; at += 512u) *(uint4*)(d + at) = RG_HOST_V4(s + at);
    __syncwarp();
    /* __syncwarp orders the other lanes' stores before lane 0's release (which is cumulative). */
    if (lane == 0u) {
      rg_st_rel_gpu(&((rg_SlotHeader*)d)->seq, hd + 1u);
      RG_STAMP(RG_S_IN_PUBLISHED);
    }
  }
  (*hostTail)++;
  if (lane == 0u) rg_st_rel_sys(&in->tail, *hostTail);
  return 1u;
}

__device__ static unsigned int rg_${G}_ingress(rg_kernel* k, unsigned char* ring, unsigned int* hostTail, bool* wide, volatile unsigned int* ctr, unsigned int lane) {
  rg_RingHeader* in = (rg_RingHeader*)ring;
  const unsigned int span = k->slotSize < 512u ? k->slotSize : 512u;
  const unsigned int t0 = *hostTail;
  const unsigned char* mine = rg_in_slot(k, ring, t0 + lane);
  /* 1. seqs. While messages flow, 32 slots' at once; when idle, only the next slot's, every lane
     reading the one word (one PCIe read a poll instead of 32, which slowed a lone ask's every stage). */
  unsigned int ready;
#ifndef RG_INGRESS_ALWAYS_WIDE
  if (!*wide) {
    const unsigned char* s0 = rg_in_slot(k, ring, t0);
    /* __all_sync: every lane must agree (each lane's load may see the host's store or not). */
    if (!__all_sync(RG_FULL, rg_ld_acq_sys((const unsigned int*)s0) == t0 + 1u)) return 0u;
    *wide = true;
    return rg_${G}_ingress_one(k, ring, hostTail, ctr, lane);
  } else
#endif
  {
    const unsigned int seq = lane < k->ringCapacity ? rg_ld_acq_sys((const unsigned int*)mine) : 0u;
    ready = __ballot_sync(RG_FULL, lane < k->ringCapacity && seq == t0 + lane + 1u);
  }
  *wide = ready != 0u;
  unsigned int n = ready == RG_FULL ? 32u : (unsigned int)(__ffs(~ready) - 1);
  /* A batch never holds more messages for one queue than the queue has slots. */
  if (n > k->queueCapacity) n = k->queueCapacity;
  if (n == 0u) return 0u;
  /* The lanes acquired different slots' seqs; the warp barrier orders them before anyone's payload loads. */
  __syncwarp();
  if (lane == 0u) RG_STAMP(RG_S_IN_SEEN);
  const bool live = lane < n;
  /* 2. one round trip for the whole batch: lane i loads its message's header, and the warp loads the
     first span bytes of every message as one flat run of 16-byte chunks (chunk f = message f / per,
     part f % per; lane i holds chunks i, i + 32, ...), up to RG_INGRESS_CHUNKS a lane in flight. */
  const unsigned int per = span / 16u;
  const unsigned int chunks = n * per;
  uint4 buf[RG_INGRESS_CHUNKS];
#pragma unroll
  for (unsigned int u = 0; u < RG_INGRESS_CHUNKS; u++) {
    const unsigned int f = u * 32u + lane;
    buf[u] = make_uint4(0u, 0u, 0u, 0u);
    if (f < chunks) buf[u] = RG_HOST_V4(rg_in_slot(k, ring, t0 + f / per) + (f % per) * 16u);
  }
  uint4 h0 = make_uint4(0u, 0u, 0u, 0u), h1 = h0;
  if (live) {
    h0 = RG_HOST_V4(mine);
    h1 = RG_HOST_V4(mine + 16);
  }
  const unsigned int len = rg_hdr_word(h0, h1, RG_AT_LENGTH), flags = rg_hdr_word(h0, h1, RG_AT_FLAGS);
  const unsigned int method = rg_hdr_word(h0, h1, RG_AT_METHOD), corr = rg_hdr_word(h0, h1, RG_AT_CORR);
  const unsigned int keyLo = rg_hdr_word(h0, h1, RG_AT_KEYLO), keyHi = rg_hdr_word(h0, h1, RG_AT_KEYHI);
  const unsigned long long total = RG_HDR + (unsigned long long)len + ((flags & RG_STRING_KEY) ? keyHi : 0u);
  const bool oversize = live && total > k->slotSize;
  const bool claimer = live && !oversize;
  if (lane == 0u) RG_STAMP(RG_S_IN_LOADED);
  /* 3. one claim per target queue, in lane order. */
  const long long key = ${keyOf('keyLo', 'keyHi')};
  const unsigned int part = claimer ? rg_partition(key, k->partitions) : 0xffffffffu;
  /* A lone message (the latency case) skips the match: every lane would find lane 0's group anyway. */
  const unsigned int peers = n == 1u ? 1u : __match_any_sync(RG_FULL, part);
  const unsigned int leader = (unsigned int)(__ffs(peers) - 1);
  unsigned int base = 0u, ok = 0u;
  rg_RingHeader* q = claimer ? rg_queue_of(k, part) : (rg_RingHeader*)0;
  if (claimer && lane == leader) {
    const unsigned int cnt = (unsigned int)__popc(peers);
    for (;;) {
      const unsigned int hd = rg_ld_vol(&q->head);
      if (hd - rg_ld_acq_gpu(&q->tail) + cnt > k->queueCapacity) break; /* full: the batch ends before this group */
      if (atomicCAS(&q->head, hd, hd + cnt) == hd) { base = hd; ok = 1u; break; }
      /* lost the race to a K2K producer: claim again */
    }
  }
  base = __shfl_sync(RG_FULL, base, leader) + (unsigned int)__popc(peers & ((1u << lane) - 1u));
  ok = __shfl_sync(RG_FULL, ok, leader);
  const unsigned int failed = __ballot_sync(RG_FULL, claimer && !ok);
  const unsigned int cutoff = failed ? (unsigned int)(__ffs(failed) - 1) : n;
  if (lane == 0u && cutoff != 0u) RG_STAMP(RG_S_IN_CLAIMED);
  unsigned char* d = (claimer && ok) ? rg_queue_slot(q, k->queueCapacity, k->slotSize, base) : (unsigned char*)0;
  if (claimer && ok && lane >= cutoff) {
    /* Claimed past the batch's end: a SKIP slot now, the message again in a later round. */
    rg_SlotHeader* sh = (rg_SlotHeader*)d;
    sh->length = 0u;
    sh->flags = RG_SKIP;
    rg_st_rel_gpu(&sh->seq, base + 1u);
  }
  if (oversize && lane < cutoff) {
    atomicAdd((unsigned int*)&ctr[RG_C_RECEIVED], 1u);
    atomicAdd((unsigned int*)&ctr[RG_C_REJECTED], 1u);
    rg_reply_text(k, 0, 0u, method, RG_REPLY | RG_REJECTED, corr, "message length exceeds the slot");
  }
  /* 4. payloads: chunk f goes to its message's queue slot if that message moves and f lies within its
     length. Chunks past RG_INGRESS_CHUNKS a lane (512-byte spans, more than 16 messages) are loaded in
     further passes. A chunk 0 holds seq, which stays unwritten until the release below. */
  const unsigned int moving = __ballot_sync(RG_FULL, claimer && ok && lane < cutoff);
  const unsigned int wanted = cutoff * per;
  for (unsigned int pass = 0; pass * RG_INGRESS_CHUNKS * 32u < wanted; pass++) {
    if (pass != 0u) {
      /* all of this pass's loads before any store (a store may alias them as far as the compiler knows) */
#pragma unroll
      for (unsigned int u = 0; u < RG_INGRESS_CHUNKS; u++) {
        const unsigned int f = (pass * RG_INGRESS_CHUNKS + u) * 32u + lane;
        if (f < wanted) buf[u] = RG_HOST_V4(rg_in_slot(k, ring, t0 + f / per) + (f % per) * 16u);
      }
    }
#pragma unroll
    for (unsigned int u = 0; u < RG_INGRESS_CHUNKS; u++) {
      const unsigned int f = (pass * RG_INGRESS_CHUNKS + u) * 32u + lane;
      const unsigned int j = f < wanted ? f / per : 0u;
      const unsigned int c = f < wanted ? f % per : 0u;
      /* every lane shuffles (the source lane differs per lane) */
      const unsigned long long tj = __shfl_sync(RG_FULL, total, j);
      unsigned char* to = (unsigned char*)__shfl_sync(RG_FULL, (unsigned long long)d, j);
      if (f >= wanted || !((moving >> j) & 1u) || c * 16u >= tj) continue;
      if (c == 0u) {
        unsigned int* dw = (unsigned int*)to;
        dw[1] = buf[u].y;
        dw[2] = buf[u].z;
        dw[3] = buf[u].w;
      } else {
        ((uint4*)to)[c] = buf[u];
      }
    }
  }
  /* Messages longer than 512 bytes: the rest, one message at a time (large slots only). */
  if (k->slotSize > 512u) {
    for (unsigned int j = 0; j < cutoff; j++) {
      if (!((moving >> j) & 1u)) continue;
      const unsigned long long tj = __shfl_sync(RG_FULL, total, j);
      unsigned char* dj = (unsigned char*)__shfl_sync(RG_FULL, (unsigned long long)d, j);
      const unsigned char* from = rg_in_slot(k, ring, t0 + j);
#if RG_BULK
      /* A large message: the rest through a job board (idle workers read it over PCIe beside this warp). */
      if (tj >= 512u + (unsigned long long)RG_BULK_MIN_BYTES && rg_bulk_copy(k->g, dj + 512u, from + 512u, (unsigned int)(tj - 512u), lane)) continue;
#endif
      /* RG_INGRESS_BIG_UNROLL reads a lane in flight before any store: one PCIe round trip moves that many
         16-byte chunks a lane, where a load-store loop paid one round trip per 512 bytes of the warp. */
      unsigned long long at = 512u + lane * 16u;
      for (; at + 512u * (RG_INGRESS_BIG_UNROLL - 1u) < tj; at += 512u * RG_INGRESS_BIG_UNROLL) {
        uint4 v[RG_INGRESS_BIG_UNROLL];
#pragma unroll
        for (unsigned int u = 0; u < RG_INGRESS_BIG_UNROLL; u++) v[u] = RG_HOST_V4(from + at + 512u * u);
#pragma unroll
        for (unsigned int u = 0; u < RG_INGRESS_BIG_UNROLL; u++) *(uint4*)(dj + at + 512u * u) = v[u];
      }
      for (; at < tj; at += 512u) *(uint4*)(dj + at) = RG_HOST_V4(from + at);
    }
  }
  /* __syncwarp orders every lane's stores before each owner's release (which is cumulative). */
  __syncwarp();
  if ((moving >> lane) & 1u) rg_st_rel_gpu(&((rg_SlotHeader*)d)->seq, base + 1u);
  if (lane == 0u && cutoff != 0u) RG_STAMP(RG_S_IN_PUBLISHED);
  *hostTail = t0 + cutoff;
  if (cutoff != 0u && lane == 0u) rg_st_rel_sys(&in->tail, *hostTail);
  return cutoff;
}

__device__ static unsigned int rg_${G}_completed(rg_kernel* k) {
  unsigned int sum = 0;
  for (unsigned int r = 1; r <= k->partitions; r++) sum += k->counters[r * RG_NCOUNTERS + RG_C_PROCESSED] + k->counters[r * RG_NCOUNTERS + RG_C_REJECTED];
  return sum;
}

/* Every partition queue empty, and no turn completed while we looked (a turn may send K2K). */
__device__ static bool rg_${G}_drained(rg_kernel* k) {
  const unsigned int before = rg_${G}_completed(k);
  for (unsigned int p = 0; p < k->partitions; p++) {
    rg_RingHeader* q = rg_queue_of(k, p);
    if (rg_ld_vol(&q->head) != rg_ld_acq_gpu(&q->tail)) return false;
    if (k->overflowNodes != 0u && rg_ld_acq_gpu(rg_ov_counts(k->overflow, k->partitions) + p) != 0u) return false;
  }
  return rg_${G}_completed(k) == before;
}

/* Lane c of warp 0: column c of the counter rows (each row has one writer), summed; 0 past the columns. */
__device__ static unsigned int rg_${G}_column(rg_kernel* k, unsigned int lane) {
  if (lane >= RG_NCOUNTERS) return 0u;
  /* Four rows a step: four loads in flight (volatile loads are issued in order, not waited for one by one). */
  unsigned int s0 = 0u, s1 = 0u, s2 = 0u, s3 = 0u, r = 0u;
  volatile unsigned int* c = k->counters + lane;
  for (; r + 3u <= k->partitions; r += 4u) {
    s0 += c[r * RG_NCOUNTERS];
    s1 += c[(r + 1u) * RG_NCOUNTERS];
    s2 += c[(r + 2u) * RG_NCOUNTERS];
    s3 += c[(r + 3u) * RG_NCOUNTERS];
  }
  for (; r <= k->partitions; r++) s0 += c[r * RG_NCOUNTERS];
  return s0 + s1 + s2 + s3;
}

/*
 * Messages claimed into the partition queues and overflow lists and not yet finished: a queue's tail
 * moves past a message only after its turn stored what it sent (rg_row_sent), and an overflow count
 * falls after that too, so a turn under way is counted here. Lane-strided, summed over the warp.
 */
__device__ static unsigned int rg_${G}_queued(rg_kernel* k, unsigned int lane) {
  unsigned int n = 0u;
  for (unsigned int p = lane; p < k->partitions; p += 32u) {
    rg_RingHeader* q = rg_queue_of(k, p);
    n += rg_ld_vol(&q->head) - rg_ld_vol(&q->tail);
    if (k->overflowNodes != 0u) n += rg_ld_vol(rg_ov_counts(k->overflow, k->partitions) + p);
  }
  for (unsigned int o = 16u; o != 0u; o >>= 1) n += __shfl_xor_sync(RG_FULL, n, o);
  return n;
}

/*
 * Counters into the control block. Rows change while lane c walks column c, so one pass can add a
 * receiver's count from after a turn to a sender's from before it, a balance that never existed. So the
 * columns of what was finished (processed, rejected) are read first and every other column after a warp
 * barrier: every counter only grows, and a turn's sends are stored before its finish (rg_row_sent /
 * rg_row_done), so what is published can show more in flight than there was, never less.
 *
 * One kernel's publication is still a picture of one moment, and kernels publish at different moments,
 * so the host's quiet barrier (system.idle) takes two waves: everything finished as of a first reading,
 * then counts published after a request it makes once that reading balanced (publishRequest, answered
 * in publishEpoch). A publication that answers a request also gives queued (rg_*_queued), read before
 * the sent counters: a turn still running when they are read (its sends not yet stored) shows there.
 */
__device__ static void rg_${G}_publish(rg_kernel* k, unsigned int lane, unsigned int* pubSeen) {
  const unsigned int req = __shfl_sync(RG_FULL, lane == 0u ? rg_ld_acq_sys(&k->control->publishRequest) : 0u, 0);
  const bool answer = req != *pubSeen;
  const bool done = lane == RG_C_PROCESSED || lane == RG_C_REJECTED;
  unsigned int v = done ? rg_${G}_column(k, lane) : 0u;
  __syncwarp();
  unsigned int queued = 0u;
  if (answer) {
    queued = rg_${G}_queued(k, lane);
    /* The queue reads come before the sent columns' reads (with the workers' release of their tails). */
    __threadfence();
  }
  if (!done) v = rg_${G}_column(k, lane);
  if (lane < RG_NCOUNTERS) rg_st_vol(&k->control->received + lane, v);
  RG_TM_PUBLISH(k, lane);
  if (answer) {
    if (lane == 0u) rg_st_vol(&k->control->queued, queued);
    /* Every lane's block says the request was answered (the host waits on all it wrote). */
    __syncwarp();
    __threadfence_system();
    if (lane < k->lanes) rg_st_rel_sys(&rg_cb(k, lane)->publishEpoch, req);
    *pubSeen = req;
  }
  __syncwarp();
}

/*
 * Host lanes 1..lanes-1: each has its own control block and inbound ring, and its own ingress warp
 * (rg_*_lane_ingress) that moves that ring's messages exactly as warp 0 moves lane 0's. Warp 0 alone
 * reads requests (lane 0's control block) and answers on every lane's block; a mode change is published
 * with a generation number, and warp 0 acknowledges it to the host only once every lane's ingress warp
 * has seen it (so none is still moving messages under the old mode: PAUSED and STOP are exact).
 */
__device__ static void rg_${G}_set_mode(rg_kernel* k, unsigned int mode, unsigned int* gen, unsigned int lane) {
  *gen += 1u;
  if (lane == 0u) {
    rg_st_vol(&k->g->mode, mode);
    rg_st_rel_gpu(&k->g->modeGen, *gen);
  }
  for (unsigned int l = 1u + lane; l < k->lanes; l += 32u)
    while (rg_ld_acq_gpu(&k->laneSeen[l]) != *gen) __nanosleep(64);
  __syncwarp();
}

/* What the host reads on every lane: the state and the epoch it answers (counters stay on lane 0's block). */
__device__ static void rg_${G}_ack(rg_kernel* k, unsigned int observed, unsigned int epoch, unsigned int lane) {
  if (lane < k->lanes) {
    rg_ControlBlock* c = rg_cb(k, lane);
    rg_st_vol(&c->observed, observed);
    rg_st_rel_sys(&c->ackEpoch, epoch);
  }
  __syncwarp();
}

__device__ static void rg_${G}_beat(rg_kernel* k, unsigned int beat, unsigned int lane) {
  if (lane < k->lanes) rg_st_vol(&rg_cb(k, lane)->heartbeat, beat);
}

/*
 * Control + ingress: warp 0. Handshake (core protocol.ts KernelState): the host writes requested + requestEpoch
 * on every lane's control block, lane 0 reads lane 0's and acknowledges on every lane with observed +
 * ackEpoch. ACTIVE moves messages; PAUSED moves none (they wait in the host rings, in order); STOP stops
 * taking messages from the host rings (what is left there the host counts as rejected), finishes the
 * turns already taken into device queues, then acknowledges STOPPED and exits.
 */
__device__ static void rg_${G}_control(rg_kernel* k, unsigned int lane) {
  rg_ControlBlock* cb = k->control;
  volatile unsigned int* ctr = k->counters;
  unsigned int epoch = __shfl_sync(RG_FULL, lane == 0u ? rg_ld_acq_sys(&cb->requestEpoch) : 0u, 0);
  unsigned int hostTail = __shfl_sync(RG_FULL, lane == 0u ? rg_ld_vol(&((rg_RingHeader*)k->inbound)->tail) : 0u, 0);
  unsigned int gen = 0u;
  if (lane == 0u) rg_st_vol(&k->g->mode, RG_KS_IDLE);
  if (lane < k->lanes) rg_st_vol(&rg_cb(k, lane)->faultCode, 0u);
  rg_${G}_ack(k, RG_KS_IDLE, epoch, lane);
  RG_TM_CONTROL_START(k, lane);
  unsigned int mode = RG_KS_IDLE, beat = 0, iter = 0, idle = 0, pubSeen = 0u;
  bool wide = false;
  for (;;) {
    iter++;
    if ((iter % RG_CTRL_EVERY) == 0u) {
      unsigned int e = 0u, req = 0u;
      if (lane == 0u) {
        e = rg_ld_acq_sys(&cb->requestEpoch);
        req = rg_ld_vol(&cb->requested);
      }
      e = __shfl_sync(RG_FULL, e, 0);
      req = __shfl_sync(RG_FULL, req, 0);
      RG_TM_CONTROL_CLOCK(k, lane);
      if (e != epoch && mode != RG_MODE_DRAIN) {
        epoch = e;
        if (req == RG_KS_ACTIVE || req == RG_KS_PAUSED) {
          mode = req;
          rg_${G}_set_mode(k, req, &gen, lane);
          rg_${G}_ack(k, req, epoch, lane);
        } else if (req == RG_KS_STOP) {
          mode = RG_MODE_DRAIN;
          rg_${G}_set_mode(k, RG_MODE_DRAIN, &gen, lane);
        }
      }
    }
    const unsigned int moved = mode == RG_KS_ACTIVE ? rg_${G}_ingress(k, k->inbound, &hostTail, &wide, ctr, lane) : 0u;
    /* Idle host rings: publish every 64 polls too (K2K work may go on; a barrier waits for a publication to see it end). */
    if ((moved == 0u && (idle == 8u || (iter & 63u) == 0u)) || (iter % RG_PUBLISH_EVERY) == 0u) {
      rg_${G}_publish(k, lane, &pubSeen);
      rg_${G}_beat(k, ++beat, lane);
    }
    if (mode == RG_MODE_DRAIN) {
      const bool done = __shfl_sync(RG_FULL, lane == 0u ? (unsigned int)rg_${G}_drained(k) : 0u, 0) != 0u;
      if (done) {
        if (lane == 0u) rg_st_vol(&k->g->mode, RG_MODE_EXIT);
        rg_${G}_publish(k, lane, &pubSeen);
        rg_${G}_ack(k, RG_KS_STOPPED, epoch, lane);
        return;
      }
    }
    if (moved != 0u) {
      idle = 0;
    } else if (idle < RG_INGRESS_SPIN) {
      idle++;
    } else {
      __nanosleep(RG_INGRESS_IDLE_NS);
      /* Every 16 sleeps (~50 µs): K2K work goes on while the host rings are idle, and a barrier
         (system.idle) waits for the next publication to see it end. */
      if ((iter & 15u) == 0u) {
        rg_${G}_publish(k, lane, &pubSeen);
        rg_${G}_beat(k, ++beat, lane);
      }
    }
  }
}

/* Ingress warp of host lane l (1..lanes-1): it says which mode generation it acts under before each round. */
__device__ static void rg_${G}_lane_ingress(rg_kernel* k, unsigned int l, unsigned int lane) {
  unsigned char* ring = rg_inbound(k, l);
  volatile unsigned int* ctr = k->counters;
  unsigned int hostTail = __shfl_sync(RG_FULL, lane == 0u ? rg_ld_vol(&((rg_RingHeader*)ring)->tail) : 0u, 0);
  unsigned int idle = 0;
  bool wide = false;
  for (;;) {
    unsigned int mode = 0u;
    if (lane == 0u) {
      const unsigned int gen = rg_ld_acq_gpu(&k->g->modeGen);
      mode = rg_ld_vol(&k->g->mode);
      rg_st_rel_gpu(&k->laneSeen[l], gen);
    }
    mode = __shfl_sync(RG_FULL, mode, 0);
    if (mode == RG_MODE_EXIT) return;
    const unsigned int moved = mode == RG_KS_ACTIVE ? rg_${G}_ingress(k, ring, &hostTail, &wide, ctr, lane) : 0u;
    if (moved != 0u) idle = 0;
    else if (idle < RG_INGRESS_SPIN) idle++;
    else __nanosleep(RG_INGRESS_IDLE_NS);
  }
}

${kernelSignature(G)} {
  const unsigned int lane = threadIdx.x & 31u;
  const unsigned int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (warp >= partitions + lanes) return;
  rg_kernel k;
  k.control = control;
  k.inbound = inbound;
  k.replies = replies;
  k.queues = queues;
  k.states = states;
  k.directory = directory;
  k.g = (rg_DeviceGlobals*)globals;
  k.counters = (volatile unsigned int*)(globals + sizeof(rg_DeviceGlobals));
  k.routes = routes;
  k.scratch = scratch;
  k.overflow = overflow;
  k.overflowNodes = overflowNodes;
  k.routeCount = routeCount;
  k.partitions = partitions;
  k.queueCapacity = queueCapacity;
  k.ringCapacity = ringCapacity;
  k.replyCapacity = replyCapacity;
  k.slotSize = slotSize;
  k.maxActors = maxActors;
  k.dirCapacity = dirCapacity;
  k.turnBudget = turnBudget;
  k.lanes = lanes;
  k.laneBytes = laneBytes;
  k.laneSeen = (unsigned int*)(k.counters + (partitions + 1u) * RG_NCOUNTERS);
  k.sendBudget = sendBudget;
  k.queueBytes = RG_RING_HDR + (unsigned long long)queueCapacity * slotSize;
  k.replyTail = 0u;
  k.timers = timers;
  k.timerHost = timerHost;
  k.metaOn = rg_ld_vol(&k.g->metaOn);
  k.hooksOn = rg_ld_vol(&k.g->hooksOn);
  if (warp == 0u) rg_${G}_control(&k, lane);
  else if (warp <= partitions) rg_${G}_worker(&k, warp - 1u, lane);
  else rg_${G}_lane_ingress(&k, warp - partitions, lane);
}
#endif
`;
}
