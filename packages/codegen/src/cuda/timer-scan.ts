/**
 * Timers on the GPU, the scan (see timers.ts for the whole design): each worker warp looks at its share of
 * the timer rows between its turns and sends every due tick into the owner's partition queue; the control
 * warp keeps the clock (its origin, or the host's published time) and sums the workers' figures for the host.
 */

/**
 * Scan cadence (ns of %globaltimer), overridable with -D. A worker looks at the clock at most every
 * RG_TM_POLL_NS; with its own clock it rescans its rows at most every RG_TM_SCAN_NS (a tick is up to
 * that late; a scan of 2,000 rows costs a worker ~60 µs), with the host's clock at every new epoch.
 */
export const TIMER_CADENCE = {
  RG_TM_POLL_NS: 20_000,
  RG_TM_SCAN_NS: 1_000_000,
  /** A backstop: with its own clock a worker rescans at least this often, whatever due time it expects. */
  RG_TM_RESCAN_NS: 20_000_000,
} as const;

/** The cadence defines (each overridable with -D), at the top of the device section. */
export function timerCadenceDefines(): string {
  return Object.entries(TIMER_CADENCE)
    .map(([k, v]) => `#ifndef ${k}\n#define ${k} ${v}ull\n#endif`)
    .join('\n');
}

/** The scan: sending a due tick, a worker's poll between turns, the control warp's clock and figures. */
export function timerScanSection(G: string, selfId: number, stringKeys: boolean): string {
  const keyOf = stringKeys
    ? '(long long)row->keyLo'
    : '(long long)(((unsigned long long)row->keyHi << 32) | row->keyLo)';
  return String.raw`/* Sends entry id of row slot's tick into its owner's partition queue; false when that queue is full (the next scan retries). */
__device__ static bool rg_${G}_tm_send(rg_kernel* k, const rg_TimerRowHeader* row, rg_TimerEntry* e, unsigned int slot, unsigned int id, unsigned int arm, double now) {
  const long long key = ${keyOf};
  rg_RingHeader* q = rg_queue_of(k, rg_partition(key, k->partitions));
  unsigned int hd;
  for (;;) {
    hd = rg_ld_vol(&q->head);
    if (hd - rg_ld_acq_gpu(&q->tail) >= k->queueCapacity) return false;
    if (atomicCAS(&q->head, hd, hd + 1u) == hd) break;
  }
  rg_SlotHeader* h = (rg_SlotHeader*)rg_queue_slot(q, k->queueCapacity, k->slotSize, hd);
  h->length = 0u;
  h->method = rg_ld_vol(&e->method);
  h->flags = RG_TICK${stringKeys ? ' | RG_STRING_KEY' : ''};
  h->corr = (id << RG_TM_TIMER_SHIFT) | arm;
  h->keyLo = row->keyLo;
  h->keyHi = ${stringKeys ? '0u' : 'row->keyHi'};
  h->sender = ${selfId}u;
  h->grain = ${selfId}u;
  h->_pad = slot;
  h->time = now;
  /* pending before the release: the owner clears it only after taking this tick */
  rg_st_vol(&e->pending, arm + 1u);
  rg_st_rel_gpu(&h->seq, hd + 1u);
  return true;
}

/*
 * One entry as a relaxed look saw it (d: due | period, w: arm | pending | method | active, abi.ts
 * TimerEntry): the earliest due time goes into minDue; an entry that looks due is read again, the row's
 * live flag, then arm, then pending, each with acquire, before due (the owner writes due and period
 * before its release of either: a restart's arm, a tick's cleared pending), so a tick is sent only for
 * a due time no turn has run yet.
 */
__device__ static inline void rg_${G}_tm_look(rg_kernel* k, unsigned char* rowp, unsigned int slot, unsigned int id, bool live, uint4 d, uint4 w,
                                          double now, double* minDue, unsigned int* sent, unsigned int* failed) {
  static_assert(sizeof(rg_TimerEntry) == 32u && RG_TM_AT_ARM == 16u && RG_TM_AT_ACTIVE == 28u && RG_TM_AT_PERIOD == 8u, "TimerEntry: due|period, then arm|pending|method|active (abi.ts)");
  if (!live || w.w == 0u) return;
  const double due = __hiloint2double((int)d.y, (int)d.x);
  if (w.y != 0u) {
    /* a tick in flight: its turn sets the next due time at least a period later (a restart bumps armGen) */
    const double next = due + __hiloint2double((int)d.w, (int)d.z);
    if (next < *minDue) *minDue = next;
    return;
  }
  if (due > now) {
    if (due < *minDue) *minDue = due;
    return;
  }
  rg_TimerEntry* e = rg_tm_entry(rowp, id);
  if (rg_ld_acq_gpu(&((const rg_TimerRowHeader*)rowp)->live) == 0u) return;
  const unsigned int arm = rg_ld_acq_gpu(&e->arm);
  const unsigned int pending = rg_ld_acq_gpu(&e->pending);
  if (rg_ld_vol(&e->active) == 0u) return;
  const double due2 = rg_ld_vol_f64(&e->due);
  if (pending != 0u || due2 > now) {
    /* changed since the look: look again at the next scan */
    if (now < *minDue) *minDue = now;
    return;
  }
  if (rg_${G}_tm_send(k, (const rg_TimerRowHeader*)rowp, e, slot, id, arm, now)) {
    (*sent)++;
    /* Its turn sets the next due time a period on at least: the scan after that must come. Left out, a
       worker whose rows all came due in one scan (slots are handed out in activation order, so a worker's
       rows share a phase) saw no due time ahead and never scanned again. */
    const double next = due2 + rg_ld_vol_f64(&e->period);
    if (next < *minDue) *minDue = next;
  } else {
    (*failed)++;
  }
}

/* A worker's scan state (registers). */
struct rg_tm_scan {
  unsigned long long lastPoll, lastScan;
  double minDue;
  unsigned int gen, epoch, enqueued;
  bool retry, ready, hostClock;
  unsigned long long originNs;
  double originMs;
};
#define RG_TM_WORKER_STATE rg_tm_scan rg_tms = {}; rg_tms.minDue = 0.0;

/*
 * Worker p, between its turns: every RG_TM_POLL_NS, look at the clock; scan this warp's rows when a tick
 * may be due (the earliest due time seen is passed, a timer was started anywhere, the host published a
 * new time, or the last scan found a queue full), and send every due tick. Lanes take rows 32 at a time.
 */
__device__ static void rg_${G}_tm_poll(rg_kernel* k, unsigned int p, unsigned int lane, rg_tm_scan* s, unsigned int mode) {
  if (mode != RG_KS_ACTIVE) return;
  const unsigned long long g = __shfl_sync(RG_FULL, lane == 0u ? rg_tm_clock_ns() : 0ull, 0);
  if (g - s->lastPoll < RG_TM_POLL_NS) return;
  s->lastPoll = g;
  rg_TimerGlobals* tg = rg_tm_globals(k);
  if (!s->ready) {
    /* lane 0 reads after its acquire and hands the values on (a shuffle does not order other lanes' loads) */
    unsigned int r = 0u, host = 0u;
    unsigned long long ons = 0ull;
    double oms = 0.0;
    if (lane == 0u) {
      r = rg_ld_acq_gpu(&tg->ready);
      host = rg_ld_vol(&tg->hostClock);
      ons = ((unsigned long long)rg_ld_vol(&tg->originNsHi) << 32) | rg_ld_vol(&tg->originNsLo);
      oms = rg_ld_vol_f64(&tg->originMs);
    }
    if (__shfl_sync(RG_FULL, r, 0) == 0u) return;
    s->ready = true;
    s->hostClock = __shfl_sync(RG_FULL, host, 0) != 0u;
    s->originNs = __shfl_sync(RG_FULL, ons, 0);
    s->originMs = __shfl_sync(RG_FULL, oms, 0);
  }
  unsigned int gen = 0u, epoch = 0u;
  double now = 0.0;
  if (lane == 0u) {
    gen = rg_ld_vol(&tg->armGen);
    if (s->hostClock) {
      epoch = rg_ld_acq_gpu(&tg->epoch);
      now = rg_ld_vol_f64(&tg->time);
    } else {
      now = s->originMs + (double)(g - s->originNs) * 1e-6;
    }
  }
  gen = __shfl_sync(RG_FULL, gen, 0);
  epoch = __shfl_sync(RG_FULL, epoch, 0);
  now = __shfl_sync(RG_FULL, now, 0);
  bool scan;
  if (s->hostClock) scan = s->retry || gen != s->gen || epoch != s->epoch;
  else scan = g - s->lastScan >= RG_TM_SCAN_NS && (s->retry || gen != s->gen || now >= s->minDue || g - s->lastScan >= RG_TM_RESCAN_NS);
  if (!scan) return;
  s->gen = gen;
  s->lastScan = g;
  const unsigned int share = (k->maxActors + k->partitions - 1u) / k->partitions;
  unsigned int used = rg_ld_vol(&k->g->stateNext);
  if (used > k->maxActors) used = k->maxActors;
  const unsigned int lo = p * share;
  const unsigned int hi = lo + share < used ? lo + share : used;
  double minDue = 1.0 / 0.0;
  unsigned int sent = 0u, failed = 0u;
  /* The workers' loads below come after lane 0's acquire of the clock's epoch (a shuffle does not order memory). */
  __syncwarp();
  /*
   * Two rows a lane per step, each looked at with relaxed 16-byte loads issued together (the header, and
   * the entry as due|period and arm|pending|method|active): a step costs one round trip to memory where
   * ordered loads cost four. Only an entry that looks due is read again in the order that makes its send
   * safe (rg_*_tm_look); a stale look at a not-due entry only moves its tick to the next scan.
   */
  for (unsigned int base = lo; base < hi; base += 64u) {
    const unsigned int s0 = base + lane, s1 = base + 32u + lane;
    unsigned char* r0 = rg_tm_row(k, s0 < hi ? s0 : lo);
    unsigned char* r1 = rg_tm_row(k, s1 < hi ? s1 : lo);
    const uint4 h0 = rg_ld_rlx_gpu_v4(r0), h1 = rg_ld_rlx_gpu_v4(r1);
    for (unsigned int id = 0; id < RG_TM_COUNT; id++) {
      const unsigned char* e0 = (const unsigned char*)rg_tm_entry(r0, id);
      const unsigned char* e1 = (const unsigned char*)rg_tm_entry(r1, id);
      const uint4 d0 = rg_ld_rlx_gpu_v4(e0), w0 = rg_ld_rlx_gpu_v4(e0 + 16), d1 = rg_ld_rlx_gpu_v4(e1), w1 = rg_ld_rlx_gpu_v4(e1 + 16);
      rg_${G}_tm_look(k, r0, s0, id, s0 < hi && h0.z != 0u, d0, w0, now, &minDue, &sent, &failed);
      rg_${G}_tm_look(k, r1, s1, id, s1 < hi && h1.z != 0u, d1, w1, now, &minDue, &sent, &failed);
    }
  }
  for (unsigned int o = 16u; o != 0u; o >>= 1) {
    minDue = fmin(minDue, __shfl_xor_sync(RG_FULL, minDue, o));
    sent += __shfl_xor_sync(RG_FULL, sent, o);
    failed += __shfl_xor_sync(RG_FULL, failed, o);
  }
  s->minDue = minDue;
  s->retry = failed != 0u;
  s->enqueued += sent;
  /* every lane's sends before lane 0's count and release (a shuffle does not order memory) */
  __syncwarp();
  if (lane == 0u) {
    rg_TimerLaneStats* st = rg_tm_stats(k, p);
    rg_st_vol(&st->enqueued, s->enqueued);
    /* every tick due by the epoch's time sent (release: after the enqueued count) */
    if (failed == 0u && s->hostClock) rg_st_rel_gpu(&st->scannedEpoch, epoch);
  }
  if (failed == 0u) s->epoch = epoch;
  __syncwarp();
}
#define RG_TM_WORKER_POLL(k, p, lane, mode) rg_${G}_tm_poll((k), (p), (lane), &rg_tms, (mode))

/* Control warp, at its start: the clock's origin (host Date.now() at launch ↔ %globaltimer now) and source. */
__device__ static void rg_${G}_tm_control_start(rg_kernel* k, unsigned int lane) {
  if (lane == 0u) {
    rg_TimerGlobals* tg = rg_tm_globals(k);
    const rg_TimerHostBlock* hb = (const rg_TimerHostBlock*)k->timerHost;
    const unsigned long long g = rg_tm_clock_ns();
    tg->originNsLo = (unsigned int)g;
    tg->originNsHi = (unsigned int)(g >> 32);
    tg->originMs = *(const volatile double*)&hb->originMs;
    tg->hostClock = rg_ld_vol(&hb->clock);
    __threadfence();
    rg_st_rel_gpu(&tg->ready, 1u);
  }
  __syncwarp();
}
#define RG_TM_CONTROL_START(k, lane) rg_${G}_tm_control_start((k), (lane))

/* Control warp, with its control-block reads: the host's newest published time (a seqlock) into the workers' words. */
__device__ static void rg_${G}_tm_control_clock(rg_kernel* k, unsigned int lane) {
  if (lane == 0u) {
    rg_TimerGlobals* tg = rg_tm_globals(k);
    const rg_TimerHostBlock* hb = (const rg_TimerHostBlock*)k->timerHost;
    if (rg_ld_vol(&tg->hostClock) != 0u) {
      const unsigned int s1 = rg_ld_acq_sys(&hb->seq);
      if ((s1 & 1u) == 0u && (s1 >> 1) != rg_ld_vol(&tg->epoch)) {
        const double time = *(const volatile double*)&hb->time;
        if (rg_ld_acq_sys(&hb->seq) == s1) {
          *(volatile double*)&tg->time = time;
          rg_st_rel_gpu(&tg->epoch, s1 >> 1);
        }
      }
    }
  }
  __syncwarp();
}
#define RG_TM_CONTROL_CLOCK(k, lane) rg_${G}_tm_control_clock((k), (lane))

/*
 * Control warp, when it publishes its counters: the workers' timer figures summed into the host block, and
 * the newest epoch that every worker has scanned and whose sent ticks all ran. Read in that order
 * (scanned epochs, then handled, then enqueued), so equal sums mean every tick due by the epoch ran.
 */
__device__ static void rg_${G}_tm_publish(rg_kernel* k, unsigned int lane) {
  rg_TimerGlobals* tg = rg_tm_globals(k);
  rg_TimerHostBlock* hb = (rg_TimerHostBlock*)k->timerHost;
  const unsigned int epoch = __shfl_sync(RG_FULL, lane == 0u ? rg_ld_acq_gpu(&tg->epoch) : 0u, 0);
  unsigned int behind = 0u, handled = 0u, enqueued = 0u, ticks = 0u, errors = 0u;
  int armed = 0;
  for (unsigned int p = lane; p < k->partitions; p += 32u)
    if ((int)(rg_ld_acq_gpu(&rg_tm_stats(k, p)->scannedEpoch) - epoch) < 0) behind++;
  __threadfence();
  for (unsigned int p = lane; p < k->partitions; p += 32u) handled += rg_ld_acq_gpu(&rg_tm_stats(k, p)->handled);
  __threadfence();
  for (unsigned int p = lane; p < k->partitions; p += 32u) {
    rg_TimerLaneStats* st = rg_tm_stats(k, p);
    enqueued += rg_ld_vol(&st->enqueued);
    ticks += rg_ld_vol(&st->ticks);
    errors += rg_ld_vol(&st->tickErrors);
    armed += (int)rg_ld_vol((const unsigned int*)&st->armed);
  }
  for (unsigned int o = 16u; o != 0u; o >>= 1) {
    behind += __shfl_xor_sync(RG_FULL, behind, o);
    handled += __shfl_xor_sync(RG_FULL, handled, o);
    enqueued += __shfl_xor_sync(RG_FULL, enqueued, o);
    ticks += __shfl_xor_sync(RG_FULL, ticks, o);
    errors += __shfl_xor_sync(RG_FULL, errors, o);
    armed += __shfl_xor_sync(RG_FULL, armed, o);
  }
  /* every lane's acquires before lane 0's releases (a shuffle does not order memory) */
  __syncwarp();
  if (lane == 0u) {
    rg_st_vol(&hb->ticks, ticks);
    rg_st_vol(&hb->tickErrors, errors);
    rg_st_vol((unsigned int*)&hb->armed, (unsigned int)armed);
    __threadfence_system();
    if (behind == 0u && handled == enqueued && rg_ld_vol(&tg->hostClock) != 0u) rg_st_rel_sys(&hb->caughtEpoch, epoch);
    rg_st_rel_sys(&hb->publishes, rg_ld_vol(&hb->publishes) + 1u);
  }
  __syncwarp();
}
#define RG_TM_PUBLISH(k, lane) rg_${G}_tm_publish((k), (lane))`;
}
