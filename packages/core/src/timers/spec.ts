/**
 * Timers and reminders as a grain spec declares them, checked once when the class is defined. Both are
 * plain data (a method id, a period, a first delay) so a kernel — a worker thread, or later a GPU kernel
 * from its own clock — can run them from a table, with no closure and no host message per tick.
 */
import type { MethodDef } from '../grain.ts';
import { MAX_TIMERS, TimerArgumentError, TimerSpecError } from './errors.ts';

/** A timer of a grain spec: every `periodMs` the actor gets a turn of `method` (request `t.struct({})`). */
export interface TimerSpec {
  readonly method: string;
  readonly periodMs: number;
  /** Delay of the first tick after the timer starts (default: `periodMs`). */
  readonly dueMs?: number;
  /** Start when the actor activates (after onActivate); default true. False: only `ctx.startTimer` starts it. */
  readonly autoStart?: boolean;
}

/** A reminder of a grain spec: persisted per actor once set (`ctx.setReminder`, `system.reminders(G).set`). */
export interface ReminderSpec {
  readonly method: string;
}

export interface TimerDef {
  /** Index in the class's timers: the column of the per-actor timer table. */
  readonly id: number;
  readonly name: string;
  readonly method: MethodDef;
  readonly periodMs: number;
  readonly dueMs: number;
  readonly autoStart: boolean;
}

export interface ReminderDef {
  readonly id: number;
  readonly name: string;
  readonly method: MethodDef;
}

/** Optional period and first delay given when a timer or reminder is started or set. */
export interface TimerStart {
  readonly periodMs?: number;
  readonly dueMs?: number;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Whether `ms` is a valid period (finite, > 0). */
export function validPeriod(ms: unknown): ms is number {
  return typeof ms === 'number' && Number.isFinite(ms) && ms > 0;
}

/** Whether `ms` is a valid first delay (finite, ≥ 0). */
export function validDue(ms: unknown): ms is number {
  return typeof ms === 'number' && Number.isFinite(ms) && ms >= 0;
}

function tickMethod(grain: string, what: string, name: string, methods: ReadonlyMap<string, MethodDef>): MethodDef {
  const m = methods.get(name);
  if (!m)
    throw new TimerSpecError(
      grain,
      what,
      'unknown-method',
      `method ${JSON.stringify(name)} is not one of the grain's methods`,
    );
  if (m.request.fieldNames.length !== 0)
    throw new TimerSpecError(
      grain,
      what,
      'request-not-empty',
      `method "${name}" takes fields (${m.request.fieldNames.join(', ')}); a tick's message is empty`,
    );
  return m;
}

function checkCount(grain: string, kind: string, n: number): void {
  if (n > MAX_TIMERS) throw new TimerSpecError(grain, kind, 'too-many', `${n} declared; at most ${MAX_TIMERS}`);
}

export function timerDefs(
  grain: string,
  spec: Readonly<Record<string, TimerSpec>> | undefined,
  methods: ReadonlyMap<string, MethodDef>,
): TimerDef[] {
  const entries = Object.entries(spec ?? {});
  checkCount(grain, 'timers', entries.length);
  return entries.map(([name, s], id) => {
    const what = `timer "${name}"`;
    if (!NAME.test(name)) throw new TimerSpecError(grain, what, 'bad-name', 'the name is not an identifier');
    const method = tickMethod(grain, what, s?.method, methods);
    if (!validPeriod(s.periodMs))
      throw new TimerSpecError(grain, what, 'bad-period', `periodMs ${String(s.periodMs)} is not a finite number > 0`);
    const dueMs = s.dueMs ?? s.periodMs;
    if (!validDue(dueMs))
      throw new TimerSpecError(grain, what, 'bad-due', `dueMs ${String(s.dueMs)} is not a finite number ≥ 0`);
    return { id, name, method, periodMs: s.periodMs, dueMs, autoStart: s.autoStart ?? true };
  });
}

export function reminderDefs(
  grain: string,
  spec: Readonly<Record<string, ReminderSpec>> | undefined,
  methods: ReadonlyMap<string, MethodDef>,
): ReminderDef[] {
  const entries = Object.entries(spec ?? {});
  checkCount(grain, 'reminders', entries.length);
  return entries.map(([name, s], id) => {
    const what = `reminder "${name}"`;
    if (!NAME.test(name)) throw new TimerSpecError(grain, what, 'bad-name', 'the name is not an identifier');
    return { id, name, method: tickMethod(grain, what, s?.method, methods) };
  });
}

/**
 * The period and first delay of a start or set call: the declared ones unless `opts` overrides them.
 * Throws TimerArgumentError (nothing changes) on a bad value.
 */
export function startArgs(
  where: string,
  opts: TimerStart | undefined,
  fallback: { periodMs?: number; dueMs?: number },
): { periodMs: number; dueMs: number } {
  const periodMs = opts?.periodMs ?? fallback.periodMs;
  if (!validPeriod(periodMs))
    throw new TimerArgumentError(where, 'bad-period', `periodMs ${String(periodMs)} is not a finite number > 0`);
  const dueMs = opts?.dueMs ?? (opts?.periodMs !== undefined ? periodMs : (fallback.dueMs ?? periodMs));
  if (!validDue(dueMs))
    throw new TimerArgumentError(where, 'bad-due', `dueMs ${String(dueMs)} is not a finite number ≥ 0`);
  return { periodMs, dueMs };
}

/**
 * The next due time of a timer or reminder that was due at `due` and fired at `now` (≥ due): the first
 * point of its period grid after `now`. A tick that fell behind (a busy lane, a clock that jumped) fires
 * once and skips the periods it missed: no burst of catch-up ticks, and the phase is kept.
 */
export function nextDue(due: number, periodMs: number, now: number): number {
  if (now < due) return due;
  return due + periodMs * (Math.floor((now - due) / periodMs) + 1);
}

/** The declared timer or reminder named `name`, or a TimerArgumentError. */
export function byName<T extends { readonly name: string }>(
  where: string,
  kind: 'timer' | 'reminder',
  defs: readonly T[],
  name: string,
): T {
  const d = defs.find((x) => x.name === name);
  if (!d)
    throw new TimerArgumentError(
      where,
      'unknown-timer',
      `no ${kind} named ${JSON.stringify(name)} is ` +
        `declared${defs.length ? ` (declared: ${defs.map((x) => x.name).join(', ')})` : ''}`,
    );
  return d;
}
