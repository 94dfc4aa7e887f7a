/* Ringgrain CUDA runtime: control (the host handshake, modes, counter publication, drain) and the ingress warps of host lanes 1..n. */
#if defined(__CUDACC__)
__device__ static unsigned int RG_G(completed)(rg_kernel* k) {
  unsigned int sum = 0;
  for (unsigned int r = 1; r <= k->partitions; r++) sum += k->counters[r * RG_NCOUNTERS + RG_C_PROCESSED] + k->counters[r * RG_NCOUNTERS + RG_C_REJECTED];
  return sum;
}

/* Every partition queue empty, and no turn completed while we looked (a turn may send K2K). */
__device__ static bool RG_G(drained)(rg_kernel* k) {
  const unsigned int before = RG_G(completed)(k);
  for (unsigned int p = 0; p < k->partitions; p++) {
    rg_RingHeader* q = rg_queue_of(k, p);
    if (rg_ld_vol(&q->head) != rg_ld_acq_gpu(&q->tail)) return false;
    if (k->overflowNodes != 0u && rg_ld_acq_gpu(rg_ov_counts(k->overflow, k->partitions) + p) != 0u) return false;
  }
  return RG_G(completed)(k) == before;
}

#if !RG_LATENCY
/* Lane c of warp 0: column c of the counter rows (each row has one writer), summed; 0 past the columns. */
__device__ static unsigned int RG_G(column)(rg_kernel* k, unsigned int lane) {
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
#endif

#if RG_LATENCY
__device__ static inline bool rg_done_column(unsigned int c) { return c == RG_C_PROCESSED || c == RG_C_REJECTED; }
/*
 * The columns that are (done) or are not (!done) the finished ones, summed with the whole warp: lane i adds
 * rows i, i + 32, ... two rows' loads in flight at once, then the lanes' sums are added across the warp;
 * lane c returns column c (0 for a column of the other kind). About P/64 dependent L2 round trips, where a
 * lane per column (RG_G(column)) waited for P/4: at 32 partitions that was ~18 round trips a publication, at
 * 1,024 ~500, while a message in the host ring waited for this warp.
 */
__device__ static __noinline__ unsigned int RG_G(columns)(rg_kernel* k, unsigned int lane, bool done) {
  unsigned int acc[RG_NCOUNTERS];
#pragma unroll
  for (unsigned int c = 0; c < RG_NCOUNTERS; c++) acc[c] = 0u;
  const unsigned int rows = k->partitions + 1u;
  for (unsigned int r = lane; r < rows; r += 64u) {
    const bool two = r + 32u < rows;
    const volatile unsigned int* a = k->counters + r * RG_NCOUNTERS;
    const volatile unsigned int* b = k->counters + (two ? r + 32u : r) * RG_NCOUNTERS;
    unsigned int va[RG_NCOUNTERS], vb[RG_NCOUNTERS];
#pragma unroll
    for (unsigned int c = 0; c < RG_NCOUNTERS; c++) {
      va[c] = rg_done_column(c) == done ? a[c] : 0u;
      vb[c] = rg_done_column(c) == done && two ? b[c] : 0u;
    }
#pragma unroll
    for (unsigned int c = 0; c < RG_NCOUNTERS; c++) acc[c] += va[c] + vb[c];
  }
  unsigned int mine = 0u;
#pragma unroll
  for (unsigned int c = 0; c < RG_NCOUNTERS; c++) {
    if (rg_done_column(c) != done) continue;
    unsigned int v = acc[c];
    for (unsigned int o = 16u; o != 0u; o >>= 1) v += __shfl_xor_sync(RG_FULL, v, o);
    if (lane == c) mine = v;
  }
  return mine;
}
#endif

/*
 * Messages claimed into the partition queues and overflow lists and not yet finished: a queue's tail
 * moves past a message only after its turn stored what it sent (rg_row_sent), and an overflow count
 * falls after that too, so a turn under way is counted here. Lane-strided, summed over the warp.
 */
__device__ static unsigned int RG_G(queued)(rg_kernel* k, unsigned int lane) {
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
__device__ static void RG_G(publish)(rg_kernel* k, unsigned int lane, unsigned int* pubSeen) {
  const unsigned int req = __shfl_sync(RG_FULL, lane == 0u ? rg_ld_acq_sys(&k->control->publishRequest) : 0u, 0);
  const bool answer = req != *pubSeen;
  const bool done = lane == RG_C_PROCESSED || lane == RG_C_REJECTED;
#if RG_LATENCY
  unsigned int v = RG_G(columns)(k, lane, true);
  /* Every lane read finished columns: they come before its own and the others' reads of the rest. */
  __syncwarp();
  __threadfence();
#else
  unsigned int v = done ? RG_G(column)(k, lane) : 0u;
  __syncwarp();
#endif
  unsigned int queued = 0u;
  if (answer) {
    queued = RG_G(queued)(k, lane);
    /* The queue reads come before the sent columns' reads (with the workers' release of their tails). */
    __threadfence();
  }
#if RG_LATENCY
  {
    const unsigned int sent = RG_G(columns)(k, lane, false);
    if (!done) v = sent;
  }
#else
  if (!done) v = RG_G(column)(k, lane);
#endif
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
__device__ static void RG_G(set_mode)(rg_kernel* k, unsigned int mode, unsigned int* gen, unsigned int lane) {
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
__device__ static void RG_G(ack)(rg_kernel* k, unsigned int observed, unsigned int epoch, unsigned int lane) {
  if (lane < k->lanes) {
    rg_ControlBlock* c = rg_cb(k, lane);
    rg_st_vol(&c->observed, observed);
    rg_st_rel_sys(&c->ackEpoch, epoch);
  }
  __syncwarp();
}

__device__ static void RG_G(beat)(rg_kernel* k, unsigned int beat, unsigned int lane) {
  if (lane < k->lanes) rg_st_vol(&rg_cb(k, lane)->heartbeat, beat);
}

/*
 * Control + ingress: warp 0. Handshake (core protocol.ts KernelState): the host writes requested + requestEpoch
 * on every lane's control block, lane 0 reads lane 0's and acknowledges on every lane with observed +
 * ackEpoch. ACTIVE moves messages; PAUSED moves none (they wait in the host rings, in order); STOP stops
 * taking messages from the host rings (what is left there the host counts as rejected), finishes the
 * turns already taken into device queues, then acknowledges STOPPED and exits.
 */
__device__ static void RG_G(control)(rg_kernel* k, unsigned int lane) {
  rg_ControlBlock* cb = k->control;
  volatile unsigned int* ctr = k->counters;
  unsigned int epoch = __shfl_sync(RG_FULL, lane == 0u ? rg_ld_acq_sys(&cb->requestEpoch) : 0u, 0);
  unsigned int hostTail = __shfl_sync(RG_FULL, lane == 0u ? rg_ld_vol(&((rg_RingHeader*)k->inbound)->tail) : 0u, 0);
  unsigned int gen = 0u;
  if (lane == 0u) rg_st_vol(&k->g->mode, RG_KS_IDLE);
  if (lane < k->lanes) rg_st_vol(&rg_cb(k, lane)->faultCode, 0u);
  RG_G(ack)(k, RG_KS_IDLE, epoch, lane);
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
      if (lane == 0u && k->res) rg_res_control(k); /* residency requests (residency.cuh) */
      if (e != epoch && mode != RG_MODE_DRAIN) {
        epoch = e;
        if (req == RG_KS_ACTIVE || req == RG_KS_PAUSED) {
          mode = req;
          RG_G(set_mode)(k, req, &gen, lane);
          RG_G(ack)(k, req, epoch, lane);
        } else if (req == RG_KS_STOP) {
          mode = RG_MODE_DRAIN;
          RG_G(set_mode)(k, RG_MODE_DRAIN, &gen, lane);
        }
      }
    }
    const unsigned int moved = mode == RG_KS_ACTIVE ? RG_G(ingress)(k, k->inbound, &hostTail, &wide, ctr, lane) : 0u;
    /* Idle host rings: publish every 64 polls too (K2K work may go on; a barrier waits for a publication to see it end). */
    if ((moved == 0u && (idle == 8u || (iter & 63u) == 0u)) || (iter % RG_PUBLISH_EVERY) == 0u) {
      RG_G(publish)(k, lane, &pubSeen);
      RG_G(beat)(k, ++beat, lane);
    }
    if (mode == RG_MODE_DRAIN) {
      const bool done = __shfl_sync(RG_FULL, lane == 0u ? (unsigned int)RG_G(drained)(k) : 0u, 0) != 0u;
      if (done && k->res) {
        /* Core deactivates and flushes a stopped kernel's actors: serve its requests until the host's EXIT. */
        if (lane == 0u) rg_st_vol(&k->g->mode, RG_MODE_RESIDENT);
        RG_G(publish)(k, lane, &pubSeen);
        RG_G(ack)(k, RG_KS_STOPPED, epoch, lane);
        for (unsigned int n = 1u;; n++) {
          if (__shfl_sync(RG_FULL, lane == 0u ? (unsigned int)rg_res_stopped(k) : 0u, 0) != 0u) break;
          if ((n & 255u) == 0u) RG_G(publish)(k, lane, &pubSeen);
          __nanosleep(RG_INGRESS_IDLE_NS);
        }
        if (lane == 0u) rg_st_vol(&k->g->mode, RG_MODE_EXIT);
        RG_G(publish)(k, lane, &pubSeen);
        return;
      }
      if (done) {
        if (lane == 0u) rg_st_vol(&k->g->mode, RG_MODE_EXIT);
        RG_G(publish)(k, lane, &pubSeen);
        RG_G(ack)(k, RG_KS_STOPPED, epoch, lane);
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
        RG_G(publish)(k, lane, &pubSeen);
        RG_G(beat)(k, ++beat, lane);
      }
    }
  }
}

/* Ingress warp of host lane l (1..lanes-1): it says which mode generation it acts under before each round. */
__device__ static void RG_G(lane_ingress)(rg_kernel* k, unsigned int l, unsigned int lane) {
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
    const unsigned int moved = mode == RG_KS_ACTIVE ? RG_G(ingress)(k, ring, &hostTail, &wide, ctr, lane) : 0u;
    if (moved != 0u) idle = 0;
    else if (idle < RG_INGRESS_SPIN) idle++;
    else __nanosleep(RG_INGRESS_IDLE_NS);
  }
}
#endif
