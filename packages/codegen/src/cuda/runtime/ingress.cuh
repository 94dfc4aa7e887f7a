/* Ringgrain CUDA runtime: ingress (host rings into partition queues, in batches of up to 32 messages). */
#if defined(__CUDACC__)
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
 * The batch ends at the first message whose queue has no room left for it; groups claim only messages
 * before that. If a claim loses its room to another producer meanwhile, the batch ends before that group:
 * later messages already claimed elsewhere get SKIP slots (passed over by the worker) and are moved again
 * in a later round, so the host ring is consumed strictly in order and nothing is moved twice.
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
__device__ static __noinline__ unsigned int RG_G(ingress_one)(rg_kernel* k, unsigned char* ring, unsigned int* hostTail, volatile unsigned int* ctr, unsigned int lane) {
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
    const long long key = RG_KEY_OF(keyLo, keyHi);
    const unsigned int part = rg_partition(key, k->partitions);
    rg_RingHeader* q = rg_queue_of(k, part);
    unsigned int hd = 0u, got = 0u;
#if RG_LATENCY
    /*
     * One round trip where this warp's last claim in this queue proves room: a CAS at the head that claim
     * left (claimHead). If it wins, nobody claimed since, so the queue holds at most what it held then, and
     * the tail this warp acquired then (claimTail) already orders our slot writes after the consumer's
     * reads of that slot. If it loses (another producer claimed meanwhile), the claim below runs as before.
     * Only within 2^30 SM clocks (~0.5 s) of this warp's last claim there: CASes on one word serialize in the L2
     * (well under 10^9 a second), so the head cannot come round 2^32 claims to the same value meanwhile.
     */
    if (lane == 0u && k->claimPart == part && k->claimHead - k->claimTail < k->queueCapacity && clock64() - k->claimAt < (1ll << 30) &&
        atomicCAS(&q->head, k->claimHead, k->claimHead + 1u) == k->claimHead) {
      hd = k->claimHead;
      got = 1u;
      k->claimAt = clock64();
    }
    got = __shfl_sync(RG_FULL, got, 0);
#endif
    while (got == 0u) {
      if (lane == 0u) {
        hd = rg_ld_vol(&q->head);
        const unsigned int tl = rg_ld_acq_gpu(&q->tail);
        if (hd - tl >= k->queueCapacity) got = 2u;
        else if (atomicCAS(&q->head, hd, hd + 1u) == hd) {
          got = 1u;
#if RG_LATENCY
          k->claimPart = part;
          k->claimTail = tl;
          k->claimAt = clock64();
#endif
        }
      }
      got = __shfl_sync(RG_FULL, got, 0); /* 0: lost the slot to another producer: claim again */
    }
    if (got == 2u) return 0u; /* queue full: the message waits in the host ring */
#if RG_LATENCY
    if (lane == 0u) k->claimHead = hd + 1u;
#endif
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

__device__ static unsigned int RG_G(ingress)(rg_kernel* k, unsigned char* ring, unsigned int* hostTail, bool* wide, volatile unsigned int* ctr, unsigned int lane) {
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
    return RG_G(ingress_one)(k, ring, hostTail, ctr, lane);
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
  const long long key = RG_KEY_OF(keyLo, keyHi);
  const unsigned int part = claimer ? rg_partition(key, k->partitions) : 0xffffffffu;
  /* A lone message (the latency case) skips the match: every lane would find lane 0's group anyway. */
  const unsigned int peers = n == 1u ? 1u : __match_any_sync(RG_FULL, part);
  const unsigned int leader = (unsigned int)(__ffs(peers) - 1);
  /*
   * The batch ends at the first message (lane order) whose queue has no free slot left for it: a lane's rank
   * in its group against the room its leader read. Each group then claims only its messages before that
   * lane, so a batch claims no slot it will not fill. (Groups claimed whole before, and a group past a full
   * one took SKIP slots: with one-lane turns (RG_TURN_LANES=1) and four partitions, four lanes' ingress warps
   * kept every queue full of each other's SKIPs, each waiting for room for its first group, and bulk rows
   * stopped with thousands left in the host rings.) A claim can still lose its room to another producer
   * between the read and the CAS: the batch then ends before that group, and its claimed slots past the
   * end become SKIP slots, as before.
   */
#ifdef RG_INGRESS_WHOLE_GROUPS
  /* The claim before the fix above (a diagnostic, to reproduce the stall: scripts/liveness-probe.ts). */
  unsigned int base = 0u, ok = 0u;
  rg_RingHeader* q = claimer ? rg_queue_of(k, part) : (rg_RingHeader*)0;
  if (claimer && lane == leader) {
    const unsigned int cnt = (unsigned int)__popc(peers);
    for (;;) {
      const unsigned int hd = rg_ld_vol(&q->head);
      if (hd - rg_ld_acq_gpu(&q->tail) + cnt > k->queueCapacity) break;
      if (atomicCAS(&q->head, hd, hd + cnt) == hd) { base = hd; ok = 1u; break; }
    }
  }
  base = __shfl_sync(RG_FULL, base, leader) + (unsigned int)__popc(peers & ((1u << lane) - 1u));
  ok = __shfl_sync(RG_FULL, ok, leader);
  const bool claimed = claimer && ok != 0u;
  const unsigned int failed = __ballot_sync(RG_FULL, claimer && !ok);
  const unsigned int cutoff = failed ? (unsigned int)(__ffs(failed) - 1) : n;
#else
  const unsigned int rank = (unsigned int)__popc(peers & ((1u << lane) - 1u));
  rg_RingHeader* q = claimer ? rg_queue_of(k, part) : (rg_RingHeader*)0;
  unsigned int hd = 0u, room = 0u;
  if (claimer && lane == leader) {
    hd = rg_ld_vol(&q->head);
    const unsigned int used = hd - rg_ld_acq_gpu(&q->tail);
    room = used < k->queueCapacity ? k->queueCapacity - used : 0u;
  }
  room = __shfl_sync(RG_FULL, room, leader);
  const unsigned int noRoom = __ballot_sync(RG_FULL, claimer && rank >= room);
  const unsigned int pre = noRoom ? (unsigned int)(__ffs(noRoom) - 1) : n;
  unsigned int base = 0u, ok = 0u;
  if (claimer && lane == leader && lane < pre) {
    const unsigned int want = (unsigned int)__popc(peers & (pre >= 32u ? RG_FULL : (1u << pre) - 1u));
    for (;;) {
      if (atomicCAS(&q->head, hd, hd + want) == hd) { base = hd; ok = 1u; break; }
      /* lost the race to another producer: claim again while the room lasts */
      hd = rg_ld_vol(&q->head);
      if (hd - rg_ld_acq_gpu(&q->tail) + want > k->queueCapacity) break;
    }
  }
  base = __shfl_sync(RG_FULL, base, leader) + rank;
  ok = __shfl_sync(RG_FULL, ok, leader);
  const bool claimed = claimer && ok != 0u && lane < pre;
  const unsigned int failed = __ballot_sync(RG_FULL, claimer && lane < pre && ok == 0u);
  const unsigned int cutoff = failed ? (unsigned int)(__ffs(failed) - 1) : pre;
#endif
  if (lane == 0u && cutoff != 0u) RG_STAMP(RG_S_IN_CLAIMED);
  unsigned char* d = claimed ? rg_queue_slot(q, k->queueCapacity, k->slotSize, base) : (unsigned char*)0;
  if (claimed && lane >= cutoff) {
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
  const unsigned int moving = __ballot_sync(RG_FULL, claimed && lane < cutoff);
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
#endif
