/* Ringgrain CUDA runtime: the reply ring (pinned host memory): claim, header, staged out, error texts. */
#if defined(__CUDACC__)
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
  h->sender = RG_SELF_ID;
  h->grain = RG_SELF_ID;
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

/*
 * A refused turn's reply as data (core turn-error.ts): msgpack [code, [field]], from which the host builds
 * the typed error (code RG_TE_*). 12 bytes, so it fits the smallest slot. Staged or in place as rg_reply_text.
 */
/* __noinline__ (this and rg_reply_text): refusals and failed turns only; inlined at each of a turn's error exits they
   were ~8% of SIR Person's PTX (nvcc -ptx sm_90: 26,083 → 24,000 lines, its kernel 29,000 → 26,808 SASS
   instructions, 168 registers, a 336-byte stack frame and no spills in both). */
__device__ static __noinline__ void rg_reply_code1(rg_kernel* k, unsigned char* stage, unsigned int cap, unsigned int method, unsigned int flags, unsigned int corr, unsigned int code, double field) {
  unsigned int idx = 0u;
  unsigned char* out = stage ? stage : rg_reply_claim(k, &idx);
  rg_wr w = {out + RG_HDR, 0u, (stage ? cap : k->slotSize) - RG_HDR};
  rg_wr_arrhdr(&w, 2u);
  rg_wr_int(&w, (long long)code);
  rg_wr_arrhdr(&w, 1u);
  rg_wr_float64(&w, field);
  if (stage) {
    rg_reply_out(k, stage, method, flags, corr, w.pos);
    return;
  }
  rg_SlotHeader* h = (rg_SlotHeader*)out;
  rg_reply_header(h, method, flags, corr, w.pos);
  RG_REPLY_RELEASE(&h->seq, idx + 1u);
}

/*
 * An error or rejection reply as data (core turn-error.ts): [HANDLER, [text]] for a failed turn (RG_ERROR),
 * [DECODE, [text]] for a refused message (RG_REJECTED); the text is cut to fit the slot. Staged in 'stage'
 * (cap bytes) when given, else written in place.
 */
__device__ static __noinline__ void rg_reply_text(rg_kernel* k, unsigned char* stage, unsigned int cap, unsigned int method, unsigned int flags, unsigned int corr, const char* text) {
  /* The reply fits a reply slot, not only the stage it is assembled in (which may be larger). */
  if (!stage || cap > k->slotSize) cap = k->slotSize;
  const unsigned int code = (flags & RG_REJECTED) ? RG_TE_DECODE : RG_TE_HANDLER;
  /* 3 bytes before the text (the array headers, the code) and its header of at most 3 */
  unsigned int n = rg_strlen(text);
  if (n > cap - RG_HDR - 6u) n = cap - RG_HDR - 6u;
  if (stage) {
    rg_wr w = {stage + RG_HDR, 0u, cap - RG_HDR};
    rg_wr_turn_error(&w, code, text, n);
    rg_reply_out(k, stage, method, flags, corr, w.pos);
    return;
  }
  unsigned int idx;
  unsigned char* slot = rg_reply_claim(k, &idx);
  rg_wr w = {slot + RG_HDR, 0u, k->slotSize - RG_HDR};
  rg_wr_turn_error(&w, code, text, n);
  rg_SlotHeader* h = (rg_SlotHeader*)slot;
  rg_reply_header(h, method, flags, corr, w.pos);
  RG_REPLY_RELEASE(&h->seq, idx + 1u);
}
#endif
