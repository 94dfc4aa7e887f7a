/**
 * Timers on the GPU: ticks the kernel generates from its own clock, with no host traffic per tick.
 *
 * The table (abi.ts TimerEntry / TimerRowHeader / TimerLaneStats / TimerGlobals): one row per actor
 * state slot, one entry per declared timer. State slots are handed out from one kernel-wide counter, so a
 * slot's actor may belong to any partition: worker warp p scans the rows of slots [p·share, (p+1)·share)
 * and sends each due tick as a slot (flag TICK) into the partition queue of the actor's owner, which runs
 * it as a turn of the actor. So ticks keep the one rule of messages, one turn at a time per actor, run by
 * its owner worker (lane-parallel turns included), and every write to an entry but `pending` is the
 * owner's. A tick counts in the timer figures, never in the message counters (core: ticks are not messages).
 *
 * Semantics follow the CPU backend's timer table (packages/cpu-backend/src/timer-table.ts, dispatcher.ts):
 * - a tick runs at the scan's clock time `now` (ctx.now()); its next due time is core's nextDue(due,
 *   period, now): several missed periods fire once and the phase is kept;
 * - a handler that stops or restarts its own timer moves the arm on: the tick does not re-arm it;
 * - a tick whose arm is not the entry's (stopped or restarted since it was sent), or whose actor was
 *   deactivated, is dropped when its turn comes;
 * - a failing tick is a tellError (`timer "<name>": <message>`) and its timer keeps running;
 * - declared timers with autoStart arm at activation, from the activating message's time.
 *
 * The clock: with TimerHostBlock.clock = 1 the control warp copies the host's published time (a seqlock
 * in mapped host memory) into TimerGlobals; otherwise each worker reads %globaltimer and converts it with
 * the origin taken at the control warp's start (host Date.now() at launch ↔ globaltimer then). The
 * control warp sums the workers' figures into the host block when it publishes its counters, with the
 * epoch every worker has scanned and whose ticks have all been handled (timersCaughtUp).
 */
import { TimerArgumentError, byName, offsetOf, type GrainDef, type TimerDef } from '@ringgrain/core/backend';
import type { Expr, Loc } from '../front/ast.ts';
import { CodegenError } from '../front/errors.ts';
import { siteAt } from '../front/parse.ts';
import { TICK_FLAG, TICK_TIMER_SHIFT, TimerEntry } from './abi.ts';
import { lowerExpr } from './lower-expr.ts';
import type { FnScope } from './scope.ts';
import { asDouble, fmtDouble } from './values.ts';

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

/** Bytes of a turn's timer error text (a TimerArgumentError with its number, or a tick's prefixed error). */
export const TIMER_TEXT_BYTES = 384;

/** C string literal (UTF-8 bytes escaped: the texts hold quotes and the hints' ≥). */
function cStr(text: string): string {
  let out = '"';
  for (const b of new TextEncoder().encode(text)) {
    const ch = String.fromCharCode(b);
    if (b === 0x22 || b === 0x5c) out += `\\${ch}`;
    else if (b >= 0x20 && b < 0x7f && ch !== '?') out += ch;
    else out += `\\${b.toString(8).padStart(3, '0')}`;
  }
  return `${out}"`;
}

/** The text core's TimerArgumentError has for a bad number: split around the number. */
function argumentText(where: string, field: 'periodMs' | 'dueMs'): { pre: string; post: string } {
  const mark = '\u0001';
  const detail = field === 'periodMs' ? `periodMs ${mark} is not a finite number > 0` : `dueMs ${mark} is not a finite number ≥ 0`;
  const msg = new TimerArgumentError(where, field === 'periodMs' ? 'bad-period' : 'bad-due', detail).message;
  const [pre, post] = msg.split(mark) as [string, string];
  return { pre, post };
}

/** Whether the unit has timers: before the prelude (rg_turn carries the timer fields only then). */
export function timerDefine(def: GrainDef): string {
  return `#define RG_TIMERS ${def.timers.length ? 1 : 0}`;
}

/** The handler-side timer functions (host and device builds): placed after the structs, before the handlers. */
export function timerHandlerSection(def: GrainDef): string {
  const timers = def.timers;
  if (timers.length === 0) return '';
  const sw = (ret: string, f: (t: TimerDef) => string, dflt: string) =>
    `  switch (id) {\n${timers.map((t) => `    case ${t.id}u: return ${f(t)};`).join('\n')}\n    default: return ${dflt};\n  }`;
  return String.raw`/* ---- timers: the handler side (timers.ts) ---------------------------------------------------------------- */
#define RG_TM_COUNT ${timers.length}u
#define RG_TICK ${TICK_FLAG}u
#define RG_TM_TIMER_SHIFT ${TICK_TIMER_SHIFT}u
#define RG_TM_ARM_MASK ((1u << RG_TM_TIMER_SHIFT) - 1u)
#define RG_TM_TEXT_BYTES ${TIMER_TEXT_BYTES}u
/* Declared timers of ${def.name} (its grain spec, checked by core): period, first delay, tick method, name. */
RG_HD static inline double rg_tm_decl_period(unsigned int id) {
${sw('double', (t) => fmtDouble(t.periodMs), '0.0')}
}
RG_HD static inline double rg_tm_decl_due(unsigned int id) {
${sw('double', (t) => fmtDouble(t.dueMs), '0.0')}
}
RG_HD static inline unsigned int rg_tm_method(unsigned int id) {
${sw('unsigned int', (t) => `${t.method.id}u`, '0u')}
}
RG_HD static inline const char* rg_tm_name(unsigned int id) {
${sw('const char*', (t) => cStr(t.name), '""')}
}
RG_HD static inline rg_TimerEntry* rg_tm_entry(unsigned char* row, unsigned int id) {
  return (rg_TimerEntry*)(row + sizeof(rg_TimerRowHeader) + (unsigned long long)id * sizeof(rg_TimerEntry));
}
/* core nextDue: the first point of the period grid after now (several missed periods fire once). */
RG_HD static inline double rg_tm_next_due(double due, double period, double now) {
  if (now < due) return due;
  return due + period * (floor((now - due) / period) + 1.0);
}
/* Appends s to out[n..cap-1) (always NUL-terminated). */
RG_HD static unsigned int rg_tm_cat(char* out, unsigned int n, unsigned int cap, const char* s) {
  while (*s && n + 1u < cap) out[n++] = *s++;
  out[n] = 0;
  return n;
}
/* Appends an unsigned integer in decimal. */
RG_HD static unsigned int rg_tm_u64(char* out, unsigned int n, unsigned int cap, unsigned long long v) {
  char d[24];
  unsigned int k = 0;
  do { d[k++] = (char)('0' + v % 10u); v /= 10u; } while (v != 0u);
  while (k > 0u && n + 1u < cap) out[n++] = d[--k];
  out[n] = 0;
  return n;
}
/*
 * Appends v as JavaScript's String(v) writes it for the values a bad argument has: NaN, ±Infinity, safe
 * integers, and other numbers with up to 15 significant digits (JS prints the shortest decimal that
 * reads back as v: for a value that needs 16 or 17 digits, or an integer past 2^53, the digits here may
 * differ in the last places; the text is a diagnostic).
 */
RG_HD static unsigned int rg_tm_num(char* out, unsigned int n, unsigned int cap, double v) {
  if (v != v) return rg_tm_cat(out, n, cap, "NaN");
  if (v < 0.0) { n = rg_tm_cat(out, n, cap, "-"); v = -v; }
  if (v - v != 0.0) return rg_tm_cat(out, n, cap, "Infinity");
  const double ip = (double)(unsigned long long)(v <= 9007199254740991.0 ? v : 0.0);
  if (v <= 9007199254740991.0 && ip == v) return rg_tm_u64(out, n, cap, (unsigned long long)v);
  if (v >= 1e15 || v < 1e-6) {
    /* d.ddd…e±x: rare for a timer argument */
    int e = 0;
    while (v >= 10.0) { v /= 10.0; e++; }
    while (v < 1.0) { v *= 10.0; e--; }
    unsigned long long m = (unsigned long long)(v * 1e14 + 0.5);
    if (m >= 1000000000000000ull) { m /= 10u; e++; } /* 9.99…95 rounded up to 10 */
    n = rg_tm_u64(out, n, cap, m / 100000000000000ull);
    m %= 100000000000000ull;
    if (m != 0u) {
      char f[15];
      for (int i = 13; i >= 0; i--) { f[i] = (char)('0' + m % 10u); m /= 10u; }
      int last = 13;
      while (last > 0 && f[last] == '0') last--;
      f[last + 1] = 0;
      n = rg_tm_cat(out, n, cap, ".");
      n = rg_tm_cat(out, n, cap, f);
    }
    n = rg_tm_cat(out, n, cap, e < 0 ? "e-" : "e+");
    return rg_tm_u64(out, n, cap, (unsigned long long)(e < 0 ? -e : e));
  }
  unsigned long long whole = (unsigned long long)v;
  unsigned int digits = 1u;
  for (unsigned long long w = whole; w >= 10u; w /= 10u) digits++;
  unsigned int fd = whole == 0u ? 15u : 15u - digits;
  unsigned long long scale = 1u;
  for (unsigned int i = 0; i < fd; i++) scale *= 10u;
  unsigned long long frac = (unsigned long long)((v - (double)whole) * (double)scale + 0.5);
  if (frac >= scale) { whole++; frac -= scale; }
  n = rg_tm_u64(out, n, cap, whole);
  if (frac == 0u) return n;
  char f[24];
  for (int i = (int)fd - 1; i >= 0; i--) { f[i] = (char)('0' + frac % 10u); frac /= 10u; }
  int last = (int)fd - 1;
  while (last > 0 && f[last] == '0') last--;
  f[last + 1] = 0;
  n = rg_tm_cat(out, n, cap, ".");
  return rg_tm_cat(out, n, cap, f);
}
/* Fails the turn with core's TimerArgumentError text, its number written in (pre, v, post). */
RG_HD static int rg_tm_fail(rg_turn* t, const char* pre, double v, const char* post) {
  if (t->tmText) {
    unsigned int n = rg_tm_cat(t->tmText, 0u, RG_TM_TEXT_BYTES, pre);
    n = rg_tm_num(t->tmText, n, RG_TM_TEXT_BYTES, v);
    rg_tm_cat(t->tmText, n, RG_TM_TEXT_BYTES, post);
    t->msg = t->tmText;
  } else {
    t->msg = pre;
  }
  t->err = RG_E_THROW;
  return t->err;
}
/* No timer row: a host build of the unit (tests of codecs and handlers); timers run only in the ring kernel. */
RG_HD static int rg_tm_no_row(rg_turn* t) {
  t->msg = "timers run only in the ring kernel (a host build of the unit has no timer table)";
  t->err = RG_E_THROW;
  return t->err;
}
/*
 * Writes entry id of the turn's actor (the owner's write): due, period and the active flag first, then
 * the arm with release, so a scanner that reads the new arm reads these values. The armed figure and the
 * kernel's start generation (armGen: scanners look again at once) move with it.
 */
RG_HD static void rg_tm_write(rg_turn* t, unsigned int id, double due, double period, unsigned int active) {
  rg_TimerEntry* e = rg_tm_entry(t->tmRow, id);
  const unsigned int was = e->active;
  e->due = due;
  e->period = period;
  e->method = rg_tm_method(id);
  e->active = active;
#if defined(__CUDA_ARCH__)
  __threadfence();
  *(volatile unsigned int*)&e->arm = (e->arm + 1u) & RG_TM_ARM_MASK;
  if (was != active) atomicAdd(t->tmArmed, active ? 1 : -1);
  if (active) atomicAdd(t->tmGen, 1u);
#else
  e->arm = (e->arm + 1u) & RG_TM_ARM_MASK;
  if (was != active) *t->tmArmed += active ? 1 : -1;
#endif
}
/*
 * ctx.startTimer(name, opts) of timer id: core's startArgs (the declared period and first delay unless
 * opts gives them; a given period alone also makes the first delay), checked as core checks them
 * (nothing changes on a bad value), then the timer (re)starts due at ctx.now() + dueMs.
 */
RG_HD static int rg_tm_start(rg_turn* t, unsigned int id, bool hasPeriod, double period, bool hasDue, double due,
                             const char* badPeriodPre, const char* badPeriodPost, const char* badDuePre, const char* badDuePost) {
  const double p = hasPeriod ? period : rg_tm_decl_period(id);
  if (!(p > 0.0 && p - p == 0.0)) return rg_tm_fail(t, badPeriodPre, p, badPeriodPost);
  const double d = hasDue ? due : (hasPeriod ? p : rg_tm_decl_due(id));
  if (!(d >= 0.0 && d - d == 0.0)) return rg_tm_fail(t, badDuePre, d, badDuePost);
  if (!t->tmRow) return rg_tm_no_row(t);
  rg_tm_write(t, id, t->now + d, p, 1u);
  return RG_OK;
}
/* ctx.stopTimer(name): a stopped timer stays stopped (its tick in flight, if any, is dropped). */
RG_HD static int rg_tm_stop(rg_turn* t, unsigned int id) {
  if (!t->tmRow) return rg_tm_no_row(t);
  rg_TimerEntry* e = rg_tm_entry(t->tmRow, id);
  if (e->active) rg_tm_write(t, id, e->due, e->period, 0u);
  return RG_OK;
}`;
}

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

/** The device side: tick turns, activation, the scan, the clock, the figures. Emitted in the device loop before rg_*_turn. */
export function timerDeviceSection(G: string, selfId: number, def: GrainDef, stringKeys: boolean): string {
  if (def.timers.length === 0) return NO_TIMER_HOOKS;
  const cadence = Object.entries(TIMER_CADENCE)
    .map(([k, v]) => `#ifndef ${k}\n#define ${k} ${v}ull\n#endif`)
    .join('\n');
  const keyOf = stringKeys ? '(long long)row->keyLo' : '(long long)(((unsigned long long)row->keyHi << 32) | row->keyLo)';
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
${def.timers.filter((tm) => tm.autoStart).map((tm) => `  rg_tm_write(&t, ${tm.id}u, now + ${fmtDouble(tm.dueMs)}, ${fmtDouble(tm.periodMs)}, 1u); /* ${tm.name} */`).join('\n')}
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

/* Sends entry id of row slot's tick into its owner's partition queue; false when that queue is full (the next scan retries). */
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

type CallExpr = Extract<Expr, { kind: 'call' }>;

/** ctx.startTimer / ctx.stopTimer as a statement of a handler: writes into the actor's timer row. */
export function lowerTimerCall(fn: FnScope, e: CallExpr, op: 'startTimer' | 'stopTimer'): string {
  const grain = fn.grain;
  const fail = (loc: Loc, detail: string, hint: string): never => {
    throw new CodegenError('CODEGEN_TIMER', `ctx.${op}`, detail, siteAt(fn.site, loc), hint);
  };
  if (!fn.method) fail(e.loc, `ctx.${op} outside a handler`, 'start and stop timers in a handler (helpers have no ctx)');
  const declared = grain.timers.map((t) => t.name).join(', ') || '(none)';
  const [ne, oe, ...rest] = e.args;
  if (!ne) return fail(e.loc, `ctx.${op} needs the timer's name`, `write ctx.${op}('${grain.timers[0]?.name ?? 'name'}'${op === 'startTimer' ? ', { periodMs, dueMs }' : ''})`);
  if (ne.kind !== 'str') return fail(ne.loc, `ctx.${op} needs the timer's name as a string literal (the GPU table has one column per declared timer, chosen when the handler is translated)`, `write one of ${declared} literally; branch with if/else to choose between timers`);
  if (rest.length > 0 || (op === 'stopTimer' && oe)) fail(e.loc, `ctx.${op} takes ${op === 'startTimer' ? '(name, opts?)' : '(name)'}, got ${e.args.length} arguments`, `write ctx.${op}('${ne.value}'${op === 'startTimer' ? ', { periodMs, dueMs }' : ''})`);
  const where = `${grain.name}.${op}(${JSON.stringify(ne.value)})`;
  let timer: TimerDef;
  try {
    timer = byName(where, 'timer', grain.timers, ne.value);
  } catch (err) {
    // An undeclared name fails the turn at run time, with core's TimerArgumentError text, as on the CPU.
    fn.mayFail = true;
    return `t->msg = ${cStr((err as Error).message)};\nt->err = RG_E_THROW;`;
  }
  fn.mayFail = true;
  if (op === 'stopTimer') return `rg_tm_stop(t, ${timer.id}u);`;
  let period: string | undefined;
  let due: string | undefined;
  if (oe) {
    if (oe.kind !== 'object') return fail(oe.loc, 'ctx.startTimer needs its options as an object literal', `write ctx.startTimer('${ne.value}', { periodMs: ..., dueMs: ... }) (either field may be left out); choose between two option sets with if/else`);
    for (const p of oe.props) {
      if (p.name !== 'periodMs' && p.name !== 'dueMs') fail(p.loc, `ctx.startTimer has no option "${p.name}"`, 'the options are periodMs and dueMs');
      const v = asDouble(fn.site, p.value.loc, lowerExpr(p.value, fn), `ctx.startTimer ${p.name}`);
      if (p.name === 'periodMs') period = v;
      else due = v;
    }
  }
  const bp = argumentText(where, 'periodMs');
  const bd = argumentText(where, 'dueMs');
  fn.mayFail = true;
  return `rg_tm_start(t, ${timer.id}u, ${period !== undefined}, ${period ?? '0.0'}, ${due !== undefined}, ${due ?? '0.0'}, ${cStr(bp.pre)}, ${cStr(bp.post)}, ${cStr(bd.pre)}, ${cStr(bd.post)});`;
}
