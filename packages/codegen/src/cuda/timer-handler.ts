/**
 * Timers on the GPU, the handler side (see timers.ts for the whole design): the functions a handler's
 * ctx.startTimer / ctx.stopTimer call, in host and device builds: the declared timers' table, core's
 * argument checks with the TimerArgumentError text, and the owner's write of an entry.
 */
import type { GrainDef, TimerDef } from '@ringgrain/core/backend';
import { TICK_FLAG, TICK_TIMER_SHIFT } from './abi.ts';
import { cStr } from './timer-args.ts';
import { fmtDouble } from './values.ts';

/** Bytes of a turn's timer error text (a TimerArgumentError with its number, or a tick's prefixed error). */
export const TIMER_TEXT_BYTES = 384;

/** The handler-side timer functions (host and device builds): placed after the structs, before the handlers. */
export function timerHandlerSection(def: GrainDef): string {
  const timers = def.timers;
  if (timers.length === 0) return '';
  const sw = (ret: string, f: (t: TimerDef) => string, dflt: string) =>
    `  switch (id) {\n${timers.map((t) => `    case ${t.id}u: return ${f(t)};`).join('\n')}\n` +
    `    default: return ${dflt};\n  }`;
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
