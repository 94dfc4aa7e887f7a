/**
 * Timers on the GPU, the device side of a turn (see timers.ts for the whole design): the table's accessors,
 * a turn's timer context, arming at activation, stopping at deactivation, and the tick's turn; then the scan
 * (timer-scan.ts). A class without timers gets the empty hooks.
 */
import { offsetOf, type GrainDef } from '@ringgrain/core/backend';
import { TimerEntry } from './abi.ts';
import { timerCadenceDefines, timerScanSection } from './timer-scan.ts';
import { fmtDouble } from './values.ts';

/** The persistent loop's timer hooks of a class without timers: all empty. */
export const NO_TIMER_HOOKS = `/* No timers declared: the timer hooks of the persistent loop are empty. */
#define RG_TM_TURN(k, t, st, part) ((void)0)
#define RG_TM_TICK_TURN(k, ctr, slot, stage, cap, part, scratch, co) ((void)0)
#define RG_TM_ACTIVATED(k, ctr, acts, st, key, now, part) ((void)0)
#define RG_TM_ARM(k, st, key, now, part) ((void)0)
#define RG_TM_DEACTIVATE(k, st, part) ((void)0)
#define RG_TM_WORKER_STATE
#define RG_TM_WORKER_POLL(k, p, lane, mode) ((void)0)
#define RG_TM_CONTROL_START(k, lane) ((void)0)
#define RG_TM_CONTROL_CLOCK(k, lane) ((void)0)
#define RG_TM_PUBLISH(k, lane) ((void)0)`;

/**
 * The device side: tick turns, activation, the scan, the clock, the figures. Emitted in the device loop before
 * rg_*_turn.
 */
export function timerDeviceSection(G: string, selfId: number, def: GrainDef, stringKeys: boolean): string {
  if (def.timers.length === 0) return NO_TIMER_HOOKS;
  const cadence = timerCadenceDefines();
  return String.raw`/* ---- timers: the device side (timers.ts) ------------------------------------------------------------ */
${cadence}
#define RG_TM_AT_PERIOD ${offsetOf(TimerEntry, 'period')}u
#define RG_TM_AT_ARM ${offsetOf(TimerEntry, 'arm')}u
#define RG_TM_AT_ACTIVE ${offsetOf(TimerEntry, 'active')}u
__device__ static inline unsigned long long rg_tm_clock_ns() {
  unsigned long long v;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(v));
  return v;
}
__device__ static inline rg_TimerGlobals* rg_tm_globals(rg_kernel* k) { return (rg_TimerGlobals*)k->timers; }
__device__ static inline rg_TimerLaneStats* rg_tm_stats(rg_kernel* k, unsigned int p) {
  return (rg_TimerLaneStats*)(k->timers + sizeof(rg_TimerGlobals)) + p;
}
/* abi.ts timerLayout: rows start at the first 128-byte boundary after the stats. */
__device__ static inline unsigned char* rg_tm_row(rg_kernel* k, unsigned int slot) {
  const unsigned long long at = (sizeof(rg_TimerGlobals) + sizeof(rg_TimerLaneStats) * (unsigned long long)k->partitions + 127u) / 128u * 128u;
  return k->timers + at + (unsigned long long)slot * (sizeof(rg_TimerRowHeader) + RG_TM_COUNT * sizeof(rg_TimerEntry));
}
__device__ static inline unsigned int rg_tm_slot_of(rg_kernel* k, const rg_${G}_state* st) {
  return (unsigned int)(((const unsigned char*)st - k->states) / sizeof(rg_${G}_state));
}
__device__ static inline double rg_ld_vol_f64(const double* p) { return *(const volatile double*)p; }

/* A turn's timer context: its actor's row, its owner's figures, the text of a timer error. */
#define RG_TM_TURN(k, t, st, part) \
  char rg_tm_text[RG_TM_TEXT_BYTES]; \
  (t)->tmText = rg_tm_text; \
  (t)->tmRow = (st) ? rg_tm_row((k), rg_tm_slot_of((k), (st))) : (unsigned char*)0; \
  (t)->tmArmed = &rg_tm_stats((k), (part))->armed; \
  (t)->tmGen = &rg_tm_globals(k)->armGen

/*
 * A new actor (the activating turn created its state): its row goes live with its key, and its declared
 * autoStart timers start from the activating message's time (as the CPU backend's armDeclared).
 */
__device__ static void rg_${G}_tm_activated(rg_kernel* k, rg_${G}_state* st, long long key, double now, unsigned int part) {
  rg_turn t = {};
  RG_TM_TURN(k, &t, st, part);
  RG_REM_TURN(k, &t);
  t.now = now;
  rg_TimerRowHeader* row = (rg_TimerRowHeader*)t.tmRow;
  row->keyLo = (unsigned int)(unsigned long long)key;
  row->keyHi = (unsigned int)((unsigned long long)key >> 32);
${def.timers
  .filter((tm) => tm.autoStart)
  .map(
    (tm) =>
      `  rg_tm_write(&t, ${tm.id}u, now + ${fmtDouble(tm.dueMs)}, ${fmtDouble(tm.periodMs)}, 1u); /* ${tm.name} */`,
  )
  .join('\n')}
  __threadfence();
  rg_st_rel_gpu(&row->live, 1u);
}
/* Any path that makes a new actor (a turn's activation, a state the host uploads) arms its declared timers. */
#define RG_TM_ARM(k, st, key, now, part) rg_${G}_tm_activated((k), (st), (key), (now), (part))
#define RG_TM_ACTIVATED(k, ctr, acts, st, key, now, part) \
  do { if ((ctr)[RG_C_ACTIVATIONS] != (acts)) RG_TM_ARM((k), (st), (key), (now), (part)); } while (0)

/*
 * An actor leaves (deactivation frees its slot): every timer stops (their ticks in flight are dropped)
 * and the row is no longer scanned. Timers live as long as the activation (the CPU backend's stopAll).
 */
__device__ static void rg_${G}_tm_deactivated(rg_kernel* k, rg_${G}_state* st, unsigned int part) {
  rg_turn t = {};
  RG_TM_TURN(k, &t, st, part);
  RG_REM_TURN(k, &t);
  rg_st_rel_gpu(&((rg_TimerRowHeader*)t.tmRow)->live, 0u);
  for (unsigned int id = 0; id < RG_TM_COUNT; id++) rg_tm_stop(&t, id);
}
/* The hook a deactivation calls (by the actor's owner, before its slot is reused); empty without timers. */
#define RG_TM_DEACTIVATE(k, st, part) rg_${G}_tm_deactivated((k), (st), (part))

/*
 * A tick's turn, run by the actor's owner worker (lane 0 of a one-lane turn, or a lane of a lane-parallel
 * wave). The slot carries the actor's state slot (_pad), the timer id and arm (corr), and the scan's
 * clock time (time).
 */
__device__ static void rg_${G}_tick(rg_kernel* k, unsigned int* ctr, const rg_SlotHeader* h, unsigned char* stage, unsigned int cap, unsigned int part, unsigned char* scratch, rg_coop* co) {
  const unsigned int slot = h->_pad, id = h->corr >> RG_TM_TIMER_SHIFT, arm = h->corr & RG_TM_ARM_MASK, method = h->method;
  const double now = h->time;
  const long long key = ${stringKeys ? '(long long)h->keyLo' : '(long long)(((unsigned long long)h->keyHi << 32) | h->keyLo)'};
  rg_TimerLaneStats* stats = rg_tm_stats(k, part);
  if (id >= RG_TM_COUNT || slot >= k->maxActors) {
    /* not a slot our scanner wrote (it names a row and column it scanned): count it out, touch nothing */
    atomicAdd(&stats->handled, 1u);
    return;
  }
  unsigned char* rowp = rg_tm_row(k, slot);
  rg_TimerEntry* e = rg_tm_entry(rowp, id);
  const bool live = ((rg_TimerRowHeader*)rowp)->live != 0u && e->active != 0u && e->arm == arm;
  if (live) {
    rg_${G}_state* st = (rg_${G}_state*)(k->states + (unsigned long long)slot * sizeof(rg_${G}_state));
    rg_${G}_req* req = (rg_${G}_req*)scratch;
    rg_${G}_rep* rep = (rg_${G}_rep*)(scratch + RG_SCRATCH_REPLY_AT);
    /* A tick's request is the empty struct: nothing to decode. */
    rg_zero(req, sizeof(rg_${G}_req));
    rg_turn t = {};
    rg_turn_init(&t, k, key, now, method, h->flags, 0u, ${selfId}u, ${selfId}u, co);
    RG_TM_TURN(k, &t, st, part);
    RG_REM_TURN(k, &t);
    /* A tick is a turn of the actor: the same last-turn clock and dirty mark as a message's (state-meta.ts). */
    const bool writes = rg_${G}_writes_state(method);
    if (writes && k->metaOn) rg_meta_enter(k->states, k->maxActors, st);
    const int rc = rg_${G}_handle(&t, st, req, rep);
    if (k->metaOn) {
      if (writes) rg_meta_touch(k->states, k->maxActors, st, now);
      else rg_meta_seen(k->states, k->maxActors, st, now);
    }
    ctr[RG_C_K2K_SENT] += t.sent;
    atomicAdd(&stats->ticks, 1u);
    /* A tick's reply is nobody's: a handler of a method with a reply schema that returns none did not fail
       (the CPU backend ignores what a tick's handler returns). */
    if (rc > RG_FORWARDED && rc != RG_E_NO_REPLY) {
      atomicAdd(&stats->tickErrors, 1u);
      /* Nobody awaits a tick: its failure goes to the host as a failed tell's does (a tellError). */
      char text[RG_TM_TEXT_BYTES];
      unsigned int n = rg_tm_cat(text, 0u, RG_TM_TEXT_BYTES, "timer \"");
      n = rg_tm_cat(text, n, RG_TM_TEXT_BYTES, rg_tm_name(id));
      n = rg_tm_cat(text, n, RG_TM_TEXT_BYTES, "\": ");
      rg_tm_cat(text, n, RG_TM_TEXT_BYTES, rg_turn_error(&t, rc));
      rg_reply_text(k, stage, cap, method, RG_REPLY | RG_ERROR, 0u, text);
    }
    /* The tick stopped or restarted its own timer (the arm moved on): it is scheduled already. */
    if (e->arm == arm && e->active != 0u) e->due = rg_tm_next_due(e->due, e->period, now);
  }
  /* The new due time before the scanner may look at the entry again (it reads pending with acquire, then due). */
  rg_st_rel_gpu(&e->pending, 0u);
  /* handled after it, fenced: the control warp's acquire of handled then also orders this tick's writes
     before the caught-up epoch it publishes, and so before the scans of the host's next time */
  __threadfence();
  atomicAdd(&stats->handled, 1u);
}
#define RG_TM_TICK_TURN(k, ctr, slot, stage, cap, part, scratch, co) \
  do { if (((const rg_SlotHeader*)(stage))->flags & RG_TICK) { rg_${G}_tick((k), (ctr), (const rg_SlotHeader*)(stage), (stage), (cap), (part), (scratch), (co)); return; } } while (0)

${timerScanSection(G, selfId, stringKeys)}`;
}
