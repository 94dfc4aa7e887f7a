/**
 * Reminders on the GPU: `ctx.setReminder(name, { periodMs, dueMs })` and `ctx.clearReminder(name)` in a
 * handler or hook. As on the CPU backend (cpu-backend dispatcher.ts `reminder`), the turn checks the
 * arguments with core's texts (byName, startArgs: a bad one fails the turn with the TimerArgumentError
 * text, nothing recorded) and sends the host a kernel record: a reply-ring slot with method
 * KERNEL_RECORD.reminder, corr 0, whose payload is a msgpack str holding the request as JSON
 * (`{"op":"set","key":…,"name":…,"periodMs":…,"dueAt":…}`, dueAt = ctx.now() + dueMs). Core's reminder
 * service stores and fires it (reminders live in the store, not on the device). The JSON numbers are
 * written exactly: an integer's digits, or the exact decimal expansion of a binary fraction (at most 60
 * fractional bits, which covers every time ≥ 1/256 ms); a value with finer bits fails the turn rather
 * than be rounded. String keys cannot be named on the device (interned ids): such a class is refused.
 */
import { KERNEL_RECORD, TimerArgumentError, type GrainDef } from '@ringgrain/core/backend';
import type { Expr } from '../front/ast.ts';
import type { FnScope } from './scope.ts';
import { badNumberTexts, cStr, checkNamedCall, failTurn, lowerTimeOptions } from './timer-args.ts';

/** Bytes of a turn's reminder text buffer: the record's JSON (≤ 255 bytes: a msgpack str8), or an error text. */
export const REMINDER_TEXT_BYTES = 256;

/** Whether the unit has reminders: before the prelude (rg_turn carries the reminder fields only then). */
export function reminderDefine(def: GrainDef): string {
  return `#define RG_REMINDERS ${def.reminders.length ? 1 : 0}`;
}

/** The handler side (host and device builds): JSON writing, the argument checks, the record. Before the handlers. */
export function reminderHandlerSection(def: GrainDef): string {
  if (def.reminders.length === 0) return '';
  return String.raw`/* ---- reminders: the handler side (reminders.ts) ---------------------------------------------------- */
#define RG_REM_TEXT_BYTES ${REMINDER_TEXT_BYTES}u
#define RG_REM_RECORD ${KERNEL_RECORD.reminder >>> 0}u
/* A text being written into t->remText: its length, and whether anything did not fit. */
struct rg_rem_out { char* s; unsigned int n; bool over; };
RG_HD static void rg_rem_cat(rg_rem_out* o, const char* s) {
  while (*s) {
    if (o->n + 1u >= RG_REM_TEXT_BYTES) { o->over = true; break; }
    o->s[o->n++] = *s++;
  }
  o->s[o->n] = 0;
}
RG_HD static void rg_rem_ch(rg_rem_out* o, char c) {
  const char s[2] = {c, 0};
  rg_rem_cat(o, s);
}
RG_HD static void rg_rem_u64(rg_rem_out* o, unsigned long long v) {
  char d[21];
  unsigned int k = 20u;
  d[k] = 0;
  do { d[--k] = (char)('0' + v % 10u); v /= 10u; } while (v != 0u);
  rg_rem_cat(o, d + k);
}
/*
 * v (finite) as a JSON number that reads back as exactly v: an integer's digits, or the exact decimal
 * expansion of its binary fraction. false (nothing usable written): |v| ≥ 2^64, or bits below 2^-60.
 */
RG_HD static bool rg_rem_num(rg_rem_out* o, double v) {
  if (v < 0.0) { rg_rem_ch(o, '-'); v = -v; }
  if (!(v < 18446744073709551616.0)) return false;
  const unsigned long long whole = (unsigned long long)v;
  const double frac = v - (double)whole; /* exact: whole ≥ v / 2 or whole = 0 */
  rg_rem_u64(o, whole);
  if (frac == 0.0) return true;
  const double scaled = frac * 1152921504606846976.0; /* · 2^60, exact */
  unsigned long long f = (unsigned long long)scaled;
  if ((double)f != scaled) return false;
  rg_rem_ch(o, '.');
  /* each step takes one factor 2 out of the denominator 2^60: at most 60 digits, the last nonzero */
  while (f != 0ull) {
    f *= 10ull;
    rg_rem_ch(o, (char)('0' + (f >> 60)));
    f &= (1ull << 60) - 1ull;
  }
  return true;
}
/* Fails the turn with text (pre, v as JavaScript writes NaN, ±Infinity and exact numbers, post). */
RG_HD static int rg_rem_fail(rg_turn* t, const char* pre, double v, const char* post) {
  if (!t->remText) {
    t->msg = pre;
  } else {
    rg_rem_out o = {t->remText, 0u, false};
    rg_rem_cat(&o, pre);
    if (v != v) rg_rem_cat(&o, "NaN");
    else if (v - v != 0.0) rg_rem_cat(&o, v < 0.0 ? "-Infinity" : "Infinity");
    else if (!rg_rem_num(&o, v)) rg_rem_cat(&o, "(a number)");
    rg_rem_cat(&o, post);
    t->msg = t->remText;
  }
  t->err = RG_E_THROW;
  return t->err;
}
#if defined(__CUDACC__)
/* The record in t->remText (n bytes) onto the reply ring (device section below). */
__device__ static int rg_rem_emit(rg_turn* t, unsigned int n);
#endif
/* Sends the record composed in o, or fails the turn when it did not fit (or no ring kernel runs it). */
RG_HD static int rg_rem_send(rg_turn* t, rg_rem_out* o) {
  if (o->over) {
    t->msg = "ctx.setReminder / clearReminder: the reminder record (JSON) is longer than 255 bytes: use a shorter reminder name";
    t->err = RG_E_THROW;
    return t->err;
  }
#if defined(__CUDA_ARCH__)
  return rg_rem_emit(t, o->n);
#elif defined(RG_REM_HOST_EMIT)
  return RG_REM_HOST_EMIT(t, o->n); /* a host test's stand-in for the reply ring */
#else
  t->msg = "reminders are recorded only by the ring kernel (a host build of the unit has no reply ring)";
  t->err = RG_E_THROW;
  return t->err;
#endif
}
RG_HD static int rg_rem_head(rg_turn* t, rg_rem_out* o, const char* op, const char* nameJson) {
  if (!t->remText) {
    t->msg = "reminders are recorded only by the ring kernel (this turn has no reminder buffer)";
    t->err = RG_E_THROW;
    return t->err;
  }
  o->s = t->remText;
  o->n = 0u;
  o->over = false;
  rg_rem_cat(o, "{\"op\":\"");
  rg_rem_cat(o, op);
  rg_rem_cat(o, "\",\"key\":");
  if (t->key < 0) { rg_rem_ch(o, '-'); rg_rem_u64(o, 0ull - (unsigned long long)t->key); }
  else rg_rem_u64(o, (unsigned long long)t->key);
  rg_rem_cat(o, ",\"name\":");
  rg_rem_cat(o, nameJson);
  return RG_OK;
}
/*
 * ctx.setReminder(name, { periodMs, dueMs }): core's startArgs with no declared defaults (dueMs defaults
 * to periodMs), then the record with dueAt = ctx.now() + dueMs.
 */
RG_HD static int rg_rem_set(rg_turn* t, const char* nameJson, double period, bool hasDue, double due,
                            const char* badPeriodPre, const char* badPeriodPost, const char* badDuePre, const char* badDuePost) {
  if (!(period > 0.0 && period - period == 0.0)) return rg_rem_fail(t, badPeriodPre, period, badPeriodPost);
  const double d = hasDue ? due : period;
  if (!(d >= 0.0 && d - d == 0.0)) return rg_rem_fail(t, badDuePre, d, badDuePost);
  rg_rem_out o;
  if (rg_rem_head(t, &o, "set", nameJson) != RG_OK) return t->err;
  rg_rem_cat(&o, ",\"periodMs\":");
  const bool exact = rg_rem_num(&o, period);
  rg_rem_cat(&o, ",\"dueAt\":");
  if (!exact || !rg_rem_num(&o, t->now + d)) {
    t->msg = "ctx.setReminder: periodMs or the due time has binary digits below 2^-60 ms (or is 2^64 ms or more): the GPU records reminder times exactly only within that range";
    t->err = RG_E_THROW;
    return t->err;
  }
  rg_rem_ch(&o, '}');
  return rg_rem_send(t, &o);
}
/* ctx.clearReminder(name). */
RG_HD static int rg_rem_clear(rg_turn* t, const char* nameJson) {
  rg_rem_out o;
  if (rg_rem_head(t, &o, "clear", nameJson) != RG_OK) return t->err;
  rg_rem_ch(&o, '}');
  return rg_rem_send(t, &o);
}`;
}

/**
 * The device side: the turn's reminder buffer, and the record onto the reply ring. After reply.cuh, before
 * turn-run.cuh.
 */
export function reminderDeviceSection(def: GrainDef): string {
  if (def.reminders.length === 0) return '/* No reminders declared. */\n#define RG_REM_TURN(k, t) ((void)0)';
  return String.raw`/* ---- reminders: the device side (reminders.ts) ---------------------------------------------------- */
/* A turn's reminder buffer (its record or its error text lives until the turn's reply is written). */
#define RG_REM_TURN(k, t) \
  char rg_rem_text[RG_REM_TEXT_BYTES]; \
  (t)->remText = rg_rem_text; \
  (t)->remKernel = (k)
/*
 * The record as a reply-ring slot: method KERNEL_RECORD.reminder, REPLY, corr 0, the JSON as a msgpack
 * str8, released at system scope like every reply (the host's reply pump hands it to the reminder service).
 */
__device__ static int rg_rem_emit(rg_turn* t, unsigned int n) {
  const rg_kernel* k = (const rg_kernel*)t->remKernel;
  if (RG_HDR + 2u + n > k->slotSize) {
    t->msg = "PAYLOAD_TOO_LARGE: the reminder record does not fit a reply slot; raise slotSize";
    t->err = RG_E_THROW;
    return t->err;
  }
  unsigned int idx;
  unsigned char* slot = rg_reply_claim((rg_kernel*)k, &idx);
  unsigned char* p = slot + RG_HDR;
  p[0] = 0xd9u;
  p[1] = (unsigned char)n;
  for (unsigned int i = 0; i < n; i++) p[2u + i] = (unsigned char)t->remText[i];
  rg_SlotHeader* h = (rg_SlotHeader*)slot;
  rg_reply_header(h, RG_REM_RECORD, RG_REPLY, 0u, 2u + n);
  RG_REPLY_RELEASE(&h->seq, idx + 1u);
  return RG_OK;
}`;
}

type CallExpr = Extract<Expr, { kind: 'call' }>;

/** ctx.setReminder / ctx.clearReminder as a statement of a handler or hook. */
export function lowerReminderCall(fn: FnScope, e: CallExpr, op: 'setReminder' | 'clearReminder'): string {
  const call = checkNamedCall(fn, e, {
    op,
    noun: 'reminder',
    declared: fn.grain.reminders,
    verbs: 'set and clear reminders',
    literalWhy: 'the record names it',
    opts: op === 'setReminder' ? 'required' : 'none',
    refuse:
      fn.grain.keyKind === 'string'
        ? {
            detail: `ctx.${op} in a class with string keys`,
            hint:
              'the GPU holds string keys as interned ids, which cannot name a stored reminder: give the ' +
              'class integer keys, or place it on the cpu backend',
          }
        : undefined,
  });
  if (!call.entry) return call.undeclared;
  const nameJson = cStr(JSON.stringify(call.name));
  if (op === 'clearReminder') return `rg_rem_clear(t, ${nameJson});`;
  const { period, due } = lowerTimeOptions(fn, call, op, call.opts ?? e, 'dueMs may be left out');
  fn.mayFail = true;
  if (period === undefined) {
    // core's startArgs: no period given and none declared (a reminder declares none).
    return failTurn(
      new TimerArgumentError(call.where, 'bad-period', 'periodMs undefined is not a finite number > 0').message,
    );
  }
  return `rg_rem_set(t, ${nameJson}, ${period}, ${due !== undefined}, ${due ?? '0.0'}, ${badNumberTexts(call.where)});`;
}
