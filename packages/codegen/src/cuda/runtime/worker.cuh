/* Ringgrain CUDA runtime: the worker warps (one consumer per partition queue and overflow list) and their counter rows. */
#if defined(__CUDACC__)
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
__device__ static void RG_G(worker)(rg_kernel* k, unsigned int p, unsigned int lane) {
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
  unsigned int resTick = 0u;
  for (;;) {
    RG_TM_WORKER_POLL(k, p, lane, mode); /* due timer ticks into their owners' queues (timers.ts) */
    /* A residency request (residency.cuh): looked at every 64th round, and at every idle one, so a worker
       busy with messages serves it too. Lane 0 serves it; the others help its hooks' parallel loops. */
    /* A room request (a full table: residency.cuh) the same way: this worker's idle actors deactivated, answered. */
    if (k->res && ((++resTick & 63u) == 0u || idle != 0u) && __shfl_sync(RG_FULL, lane == 0u ? (rg_res_pending(k, p) ? 1u : 0u) | (rg_res_room_pending(k, p) ? 2u : 0u) : 0u, 0) != 0u) {
      if (lane == 0u) {
        if (rg_res_room_pending(k, p)) RG_G(res_room_service)(k, ctr, p, co, true);
        const unsigned int served = rg_res_pending(k, p) ? RG_G(res_service)(k, ctr, p, stage, RG_STAGE_BYTES, scratch, co) : 0u;
        RG_COOP_END(co);
        rg_row_sent(row, ctr);
        __threadfence();
        rg_row_done(row, ctr);
        if (served) rg_res_ack(k, p, served);
      } else {
        RG_COOP_HELP(co, lane);
      }
      __syncwarp();
      continue;
    }
    if (mode == RG_KS_ACTIVE || mode == RG_MODE_DRAIN) {
      unsigned char* slot = rg_queue_slot(q, k->queueCapacity, k->slotSize, tail);
#if RG_LATENCY
      /* The overflow link, peeked (volatile) before the queue poll's acquire, so both loads take one round
         trip: an idle poll paid three (the seq's acquire, then the link's, then the head). A node seen here
         is taken below exactly as before (the link's acquire, then the head); one not seen yet, at a later poll. */
      const unsigned int ovPeek = lane == 0u && k->overflowNodes != 0u ? rg_ld_vol((const unsigned int*)rg_ov_node(k->overflow, k->partitions, nodeBytes, ovHead)) : 0u;
#endif
#if RG_TURN_LANES > 1
      /* One poll sees how many are waiting: lane i acquires slot tail + i's seq (one L2 round trip for all). */
#if RG_LATENCY
      /* Idle for a while: every lane acquires slot tail's seq (one L2 request a poll instead of 32, so hundreds
         of idle workers do not load the L2 that a hop's round trips go through); a message seen by every
         lane is taken as a lone one, and the next poll is wide again. */
      const bool narrow = idle >= RG_NARROW_AFTER;
      unsigned char* mine = rg_queue_slot(q, k->queueCapacity, k->slotSize, tail + (narrow ? 0u : lane));
      unsigned int ready = __ballot_sync(RG_FULL, (narrow || lane < k->queueCapacity) && rg_ld_acq_gpu(&((rg_SlotHeader*)mine)->seq) == tail + (narrow ? 0u : lane) + 1u);
      if (narrow) ready = ready == RG_FULL ? 1u : 0u;
#else
      unsigned char* mine = rg_queue_slot(q, k->queueCapacity, k->slotSize, tail + lane);
      const unsigned int ready = __ballot_sync(RG_FULL, lane < k->queueCapacity && rg_ld_acq_gpu(&((rg_SlotHeader*)mine)->seq) == tail + lane + 1u);
#endif
      /* __syncwarp: lane 0's acquire is ordered before every lane's loads of slot tail (the stage copy). */
      __syncwarp();
      if (ready & 1u) {
        const unsigned int n = ready == RG_FULL ? 32u : (unsigned int)(__ffs(~ready) - 1);
        /* Nearly full while the class makes room: one turn at a time (residency-evict.cuh rg_res_tight). */
        if (n > 1u && !(k->res && __shfl_sync(RG_FULL, lane == 0u ? (unsigned int)rg_res_tight(k) : 0u, 0) != 0u)) {
          /* More than one message waiting: up to 32 turns at once, one per lane (rg_*_lane_turns). */
#ifdef RG_WAVE_STATS
          const long long b0 = clock64();
#endif
          RG_G(lane_turns)(k, n, mine, p, lane, ctr, scratch RG_WS_ARG);
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
          RG_G(turn)(k, ctr, slot, stage, RG_STAGE_BYTES, p, scratch, co);
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
#if RG_LATENCY
      if (k->overflowNodes != 0u && __shfl_sync(RG_FULL, ovPeek, 0) != 0u) {
#else
      if (k->overflowNodes != 0u) {
#endif
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
          if (n > 1u && !(k->res && __shfl_sync(RG_FULL, lane == 0u ? (unsigned int)rg_res_tight(k) : 0u, 0) != 0u)) {
            const unsigned int mineRef = refs[lane < n ? lane : 0u];
            const unsigned int last = refs[n - 1u];
            unsigned char* mine = rg_ov_node(k->overflow, k->partitions, nodeBytes, mineRef) + RG_OV_NODE_HDR;
            RG_G(lane_turns)(k, n, mine, p, lane, ctr, scratch RG_WS_ARG);
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
            RG_G(turn)(k, ctr, node, stage, RG_STAGE_BYTES, p, scratch, co);
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
#endif
