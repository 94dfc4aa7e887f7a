/** Timer and reminder declarations (checked when the class is defined) and the schedule arithmetic. */
import { describe, expect, it } from 'vitest';
import {
  Grain,
  MAX_TIMERS,
  TimerArgumentError,
  TimerSpecError,
  nextDue,
  startArgs,
  t,
  type TimerSpec,
} from '../src/entries/internal.ts';

const methods = {
  onTick: { request: t.struct({}) },
  withField: { request: t.struct({ n: t.f64 }) },
};

function define(timers: Record<string, TimerSpec>): unknown {
  return Grain({ name: 'T', module: import.meta.url, state: t.struct({ n: t.u32 }), methods, timers });
}

function specError(fn: () => unknown): TimerSpecError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(TimerSpecError);
    return e as TimerSpecError;
  }
  throw new Error('expected a TimerSpecError');
}

describe('timer declarations', () => {
  it('a valid declaration becomes plain data: method id, period, first delay, autoStart', () => {
    const C = Grain({
      name: 'T',
      module: import.meta.url,
      state: t.struct({ n: t.u32 }),
      methods,
      timers: {
        a: { method: 'onTick', periodMs: 100 },
        b: { method: 'onTick', periodMs: 5, dueMs: 0, autoStart: false },
      },
      reminders: { r: { method: 'onTick' } },
    });
    expect(
      C.grain.timers.map((x) => ({
        id: x.id,
        name: x.name,
        method: x.method.id,
        periodMs: x.periodMs,
        dueMs: x.dueMs,
        autoStart: x.autoStart,
      })),
    ).toEqual([
      { id: 0, name: 'a', method: 0, periodMs: 100, dueMs: 100, autoStart: true },
      { id: 1, name: 'b', method: 0, periodMs: 5, dueMs: 0, autoStart: false },
    ]);
    expect(C.grain.reminders.map((r) => [r.id, r.name, r.method.name])).toEqual([[0, 'r', 'onTick']]);
  });

  it('bad declarations are TimerSpecError with a problem code, the timer named, and a hint', () => {
    const unknown = specError(() => define({ a: { method: 'nope', periodMs: 1 } }));
    expect(unknown.problem).toBe('unknown-method');
    expect(unknown.code).toBe('TIMER_SPEC');
    expect(unknown.message).toContain('grain "T", timer "a": method "nope" is not one of the grain\'s methods');
    expect(unknown.hint).toMatch(/name one of the grain's message methods/);
    expect(specError(() => define({ a: { method: 'withField', periodMs: 1 } })).problem).toBe('request-not-empty');
    for (const periodMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      const e = specError(() => define({ a: { method: 'onTick', periodMs } }));
      expect(e.problem, String(periodMs)).toBe('bad-period');
    }
    expect(specError(() => define({ a: { method: 'onTick', periodMs: 1, dueMs: -1 } })).problem).toBe('bad-due');
    expect(specError(() => define({ a: { method: 'onTick', periodMs: 1, dueMs: Number.NaN } })).problem).toBe(
      'bad-due',
    );
    expect(specError(() => define({ 'not a name': { method: 'onTick', periodMs: 1 } })).problem).toBe('bad-name');
    const many = Object.fromEntries(
      Array.from({ length: MAX_TIMERS + 1 }, (_, i) => [`t${i}`, { method: 'onTick', periodMs: 1 }]),
    );
    const tooMany = specError(() => define(many));
    expect(tooMany.problem).toBe('too-many');
    expect(tooMany.message).toContain(`${MAX_TIMERS + 1} declared; at most ${MAX_TIMERS}`);
    expect(() => define(Object.fromEntries(Object.entries(many).slice(0, MAX_TIMERS)))).not.toThrow();
  });
});

describe('schedule arithmetic', () => {
  it('nextDue: the first grid point after the clock; a late tick skips the missed periods and keeps the phase', () => {
    expect(nextDue(1000, 100, 1000)).toBe(1100);
    expect(nextDue(1000, 100, 1099)).toBe(1100);
    expect(nextDue(1000, 100, 1100)).toBe(1200);
    expect(nextDue(1000, 100, 1950)).toBe(2000);
    expect(nextDue(1000, 100, 900)).toBe(1000); // not due yet: unchanged
  });

  it(
    'startArgs: declared values unless overridden; a new period without a delay waits one new period; bad ' +
      'values are TimerArgumentError',
    () => {
      expect(startArgs('w', undefined, { periodMs: 100, dueMs: 0 })).toEqual({ periodMs: 100, dueMs: 0 });
      expect(startArgs('w', { periodMs: 300 }, { periodMs: 100, dueMs: 0 })).toEqual({ periodMs: 300, dueMs: 300 });
      expect(startArgs('w', { dueMs: 5 }, { periodMs: 100 })).toEqual({ periodMs: 100, dueMs: 5 });
      const e = (() => {
        try {
          startArgs('Ticker.startTimer("x")', { periodMs: -2 }, {});
        } catch (x) {
          return x as TimerArgumentError;
        }
        throw new Error('expected a throw');
      })();
      expect(e).toBeInstanceOf(TimerArgumentError);
      expect(e.code).toBe('TIMER_ARGUMENT');
      expect(e.problem).toBe('bad-period');
      expect(e.message).toContain('Ticker.startTimer("x"): periodMs -2 is not a finite number > 0');
      expect(() => startArgs('w', {}, {})).toThrow(TimerArgumentError); // a reminder needs a period
    },
  );
});
