/* Ringgrain CUDA runtime: the kernel's parameters as one struct (rg_kernel), its address helpers, the turn context's fill, and the warp's job dispatch (rg_coop_run). */
#if defined(__CUDACC__)

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
  /* Actor residency (residency.cuh): the area (DeviceGlobals.residencyLo/Hi; 0: none), the request the
     control warp published last, and DeviceGlobals.loadOn (a missing actor's messages wait for its state). */
  rg_ResidencyGlobals* res;
  unsigned int resPublished;
  unsigned int loadOn;
  /* The last actor this thread's lookups found (RG_LATENCY, directory.cuh): its key and state; 0: none. */
  long long lastKey;
  unsigned char* lastState;
  /* An ingress warp's last lone claim (RG_LATENCY, ingress.cuh): its queue (~0u: none), the head it left, the tail it acquired. */
  unsigned int claimPart, claimHead, claimTail;
  long long claimAt;
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
RG_LOOP_CASES
    default: break;
  }
}
__device__ static void rg_coop_chunk(const rg_coop* co, unsigned int lane, unsigned int from, unsigned int to) {
  switch (co->id) {
RG_CHUNK_CASES
    default: break;
  }
}
__device__ static bool rg_coop_bulk_ok(unsigned int id) {
  switch (id) {
RG_BULK_OK_CASES
    default: return false;
  }
}

#endif
