/* Ringgrain CUDA runtime: the turn context handlers receive (rg_turn), typed turn errors, index checks. */
/* ---- turn context and typed turn errors ----------------------------------------------------- */
#define RG_OK 0
#define RG_FORWARDED 1
/* Turn errors, generated from abi.ts TURN_ERRORS (RG_E_<name>); RG_E_THROW: the text is in rg_turn.msg. */
/* (the RG_E_<name> defines are in the generated constants section) */

/*
 * Warp cooperation (device.ts rg_coop_*): while lane 0 runs a turn alone on its worker warp, the other
 * 31 lanes wait for bulk work it posts (copies of numeric arrays, element-parallel loops). Null where no
 * warp helps: lane-parallel turns, K2K senders, and every host build.
 */
struct rg_coop;
#if defined(__CUDACC__)
__device__ static void rg_coop_copy(rg_coop* co, unsigned char* d, const unsigned char* s, unsigned int n, bool sys);
#endif
/* Bytes below which a copy stays on lane 0: posting to the warp costs two warp barriers. */
#ifndef RG_COOP_MIN_BYTES
#define RG_COOP_MIN_BYTES 256u
#endif
/* Copies n bytes with the warp's help when one waits (true), else leaves the copy to the caller (false). */
RG_HD static inline bool rg_bulk(rg_coop* co, unsigned char* d, const unsigned char* s, unsigned int n) {
#if defined(__CUDA_ARCH__)
  if (co && n >= RG_COOP_MIN_BYTES) { rg_coop_copy(co, d, s, n, false); return true; }
#endif
  (void)co; (void)d; (void)s; (void)n;
  return false;
}

struct rg_turn {
  long long key;
  double now;
  unsigned int iters;
  unsigned int budget;
  int err;
  unsigned int method;
  unsigned int flags;
  unsigned int corr;
  unsigned int sender;
  unsigned int grain;
  unsigned int sent;
  unsigned int sendBudget;
  const void* routes;
  unsigned int nroutes;
  /* The message of a handler's throw new Error('...') (RG_E_THROW): a string literal of the unit. */
  const char* msg;
  rg_coop* co;
#if defined(RG_TIMERS) && RG_TIMERS
  /* timers.ts: the actor's timer row (0 in a host build), its owner's armed figure, the kernel's start
     generation, and the text of a timer error (a TimerArgumentError with its number) */
  unsigned char* tmRow;
  int* tmArmed;
  unsigned int* tmGen;
  char* tmText;
#endif
#if defined(RG_REMINDERS) && RG_REMINDERS
  /* reminders.ts: the turn's reminder text (its record, or an error text; 0 in a host build) and its kernel (the reply ring) */
  char* remText;
  const void* remKernel;
#endif
};
RG_HD static inline const char* rg_err_text(int e) {
  switch (e) {
    case RG_E_TURN_BUDGET: return "TURN_BUDGET: a loop ran past the turn's iteration budget (turnBudget)";
    case RG_E_INDEX_RANGE: return "INDEX_RANGE: array index out of range or not an integer";
    case RG_E_QUEUE_FULL: return "QUEUE_FULL: the target grain's device queue stayed full; the message was not sent";
    case RG_E_POOL_EXHAUSTED: return "POOL_EXHAUSTED: the target grain's queue was full and every node of its K2K overflow pool was taken; the message was not sent (raise CudaBackend's overflowBytes)";
    case RG_E_NO_ROUTE: return "NO_ROUTE: the target grain class has no kernel on this device";
    case RG_E_INVALID_KEY: return "INVALID_KEY: a ctx.send/ctx.forward key must be a safe integer";
    case RG_E_PAYLOAD_TOO_LARGE: return "PAYLOAD_TOO_LARGE: a K2K message does not fit the target's slot";
    case RG_E_REPLY_MISMATCH: return "reply does not match its schema: an integer field got a value out of range or not an integer";
    case RG_E_NO_REPLY: return "reply does not match its schema: the handler returned no reply";
    default: return "internal error";
  }
}
/* The reply text of a failed turn: the thrown Error's message, as the CPU backend sends e.message, or the typed error's text. */
RG_HD static inline const char* rg_turn_error(const rg_turn* t, int rc) {
  return rc == RG_E_THROW && t->msg ? t->msg : rg_err_text(rc);
}
/* Array index: JS reads undefined out of range; the translation aborts the turn instead (INDEX_RANGE). */
RG_HD static inline unsigned int rg_idx(rg_turn* t, double i, unsigned int n) {
  if (i >= 0.0 && i < (double)n && i == trunc(i)) return (unsigned int)i;
  if (!t->err) t->err = RG_E_INDEX_RANGE;
  return 0;
}
RG_HD static inline unsigned int rg_idxi(rg_turn* t, int i, unsigned int n) {
  if (i >= 0 && (unsigned int)i < n) return (unsigned int)i;
  if (!t->err) t->err = RG_E_INDEX_RANGE;
  return 0;
}
RG_HD static inline unsigned int rg_idxu(rg_turn* t, unsigned int i, unsigned int n) {
  if (i < n) return i;
  if (!t->err) t->err = RG_E_INDEX_RANGE;
  return 0;
}
/* A reply or K2K payload field of an integer kind: an integer in the kind's range, or REPLY_MISMATCH. */
