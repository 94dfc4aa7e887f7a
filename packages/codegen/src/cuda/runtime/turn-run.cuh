/* Ringgrain CUDA runtime: a turn (validate, decode, activate, onActivate, handle, reply), and lane-parallel turns (up to 32 actors a warp at once). After the unit's timer section. */
#if defined(__CUDACC__)
#if RG_HAS_ON_ACTIVATE
/*
 * onActivate (where DeviceGlobals.hooksOn: a class with persistence, as on the CPU backend), run as a
 * turn of an actor the turn in progress just activated: after its declared timers
 * were armed (so the hook may stop or restart them) and before the message's own turn, with the
 * message's clock (the CPU backend's order). A failure counts as a handler error and goes to the host as
 * a failed tell under the hook's method id (core reports it as a tellError); the message still runs, as
 * on the CPU. 'stage' may be written: the message was decoded into the scratch before activation.
 */
/* __noinline__: it runs once per activation; inlined, it would add its registers to every turn. */
__device__ static __noinline__ void RG_G(on_activate)(rg_kernel* k, unsigned int* ctr, RG_G(state)* st, long long key, double now, unsigned int part, unsigned char* stage, unsigned int cap, rg_coop* co) {
  rg_turn t = {};
  rg_turn_init(&t, k, key, now, RG_HOOK_ON_ACTIVATE, 0u, 0u, RG_HOST_SENDER, RG_SELF_ID, co);
  RG_TM_TURN(k, &t, st, part);
  RG_REM_TURN(k, &t);
  const bool writes = RG_G(hook_writes)(RG_HOOK_ON_ACTIVATE);
  if (writes && k->metaOn) rg_meta_enter(k->states, k->maxActors, st);
  const int rc = RG_G(hook)(&t, st, RG_HOOK_ON_ACTIVATE);
  if (writes && k->metaOn) rg_meta_touch(k->states, k->maxActors, st, now);
  ctr[RG_C_K2K_SENT] += t.sent;
  if (rc > RG_FORWARDED) {
    ctr[RG_C_HANDLER_ERRORS]++;
    rg_reply_text(k, stage, cap, RG_HOOK_ON_ACTIVATE, RG_REPLY | RG_ERROR, 0u, rg_turn_error(&t, rc));
  }
}
#define RG_ON_ACTIVATE(k, ctr, acts, st, key, now, part, stage, cap, co) \
  do { if ((k)->hooksOn && (ctr)[RG_C_ACTIVATIONS] != (acts)) RG_G(on_activate)((k), (ctr), (st), (key), (now), (part), (stage), (cap), (co)); } while (0)
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
/* residency-load.cuh: a class that loads parks the messages of an actor whose state is not here yet. */
__device__ static const char* RG_G(res_wait)(rg_kernel* k, unsigned int* ctr, long long key, unsigned int part, const unsigned char* slot, double now, bool alone, rg_coop* co);
/* residency-evict.cuh: a full table in a class with idleMs deactivates idle actors to make room. */
__device__ static RG_G(state)* RG_G(res_room_activate)(rg_kernel* k, unsigned int* ctr, long long key, unsigned int part, double now, bool alone, rg_coop* co);
__device__ static __noinline__ void RG_G(turn)(rg_kernel* k, unsigned int* ctr, unsigned char* slot, unsigned char* stage, unsigned int cap, unsigned int part, unsigned char* scratch, rg_coop* co) {
  const rg_SlotHeader* h = (const rg_SlotHeader*)stage;
  RG_TM_TICK_TURN(k, ctr, slot, stage, cap, part, scratch, co); /* a timer tick: not a message (timers.ts) */
  const unsigned int len = h->length, method = h->method, flags = h->flags, corr = h->corr, sender = h->sender;
  const long long key = RG_KEY_OF(h->keyLo, h->keyHi);
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
  RG_G(req)* req = (RG_G(req)*)scratch;
  RG_G(rep)* rep = (RG_G(rep)*)(scratch + RG_SCRATCH_REPLY_AT);
  const char* why = 0;
  bool full = false;
  /* A one-lane turn (lane turns pass their queue slot as the stage): it may deactivate its worker's idle actors to make room. */
  const bool alone = stage != slot;
  if (len > k->slotSize - RG_HDR) why = "message length exceeds the slot";
  else if (h->grain != RG_SELF_ID) why = "message for another grain class";
  else if (method >= RG_METHOD_COUNT) why = "unknown method id";
#if RG_STRING_KEYS
  else if (!(flags & RG_STRING_KEY)) why = "grain has string keys but got an integer key";
#else
  else if ((flags & RG_STRING_KEY)) why = "grain has integer keys but got a string key";
#endif
  /* an actor waiting for its stored state: the message waits too, in order, before it is decoded (residency.cuh) */
  else if (k->loadOn && (why = RG_G(res_wait)(k, ctr, key, part, slot, now, alone, co)) != 0) {
    if (why == RG_RES_PARKED) return;
    if (why == RG_RES_FULL) {
      why = 0;
      full = true;
    }
  }
  else if (!RG_G(decode)(method, (RG_HDR + len <= cap ? stage : slot) + RG_HDR, len, req, co)) why = "malformed payload: it does not match the method's request schema";
  RG_STAMP(RG_S_W_DECODED);
  RG_WS_MARK(1);
  RG_G(state)* st = 0;
  if (!why && !full) {
    const unsigned int acts = ctr[RG_C_ACTIVATIONS];
    st = RG_G(activate)(k, ctr, key, part);
    if (!st && k->res) st = RG_G(res_room_activate)(k, ctr, key, part, now, alone, co);
    if (!st) full = true;
    else {
      RG_TM_ACTIVATED(k, ctr, acts, st, key, now, part); /* declared timers start (timers.ts) */
      RG_ON_ACTIVATE(k, ctr, acts, st, key, now, part, stage, cap, co); /* then the class's onActivate */
    }
  }
  RG_STAMP(RG_S_W_ACTIVATED);
  RG_WS_MARK(2);
  if (why || full) {
    ctr[RG_C_REJECTED]++;
    /* A full actor table is the runtime's own error: sent as its code and maxActors (host: StateTableFullError). */
    if (full) rg_reply_code1(k, stage, cap, method, RG_REPLY | RG_REJECTED, corr, RG_TE_STATE_TABLE_FULL, (double)k->maxActors);
    else rg_reply_text(k, stage, cap, method, RG_REPLY | RG_REJECTED, corr, why);
    return;
  }
  rg_turn t = {};
  rg_turn_init(&t, k, key, now, method, flags, corr, sender, RG_SELF_ID, co);
  RG_TM_TURN(k, &t, st, part);
  RG_REM_TURN(k, &t);
  const bool writes = RG_G(writes_state)(method);
  /* Only a class with persistent state keeps marks: the fences cost every K2K hop (metaOn, abi.ts). */
  if (writes && k->metaOn) rg_meta_enter(k->states, k->maxActors, st); /* a gather now leaves this actor to the next one (state-meta.ts) */
  const int rc = RG_G(handle)(&t, st, req, rep);
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
  if (!RG_G(encode_reply)(method, rep, &m)) {
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
  RG_G(encode_reply)(method, rep, &w);
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
__device__ static void RG_G(lane_turns)(rg_kernel* k, unsigned int n, unsigned char* mine, unsigned int p, unsigned int lane, unsigned int* ctr, unsigned char* scratch RG_WS_PARAM) {
  const bool live = lane < n;
  const rg_SlotHeader* h = (const rg_SlotHeader*)mine;
  const unsigned int flags = live ? h->flags : RG_SKIP;
  const long long key = live ? RG_KEY_OF(h->keyLo, h->keyHi) : 0ll;
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
    if (go) RG_G(turn)(k, counts, mine, mine, k->slotSize, p, own, 0);
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
#endif
