/**
 * Errors of timers and reminders: a bad declaration in a grain spec (thrown when the class is defined), a
 * bad argument to `ctx.startTimer` / `ctx.setReminder` or the system API (thrown at the call; inside a
 * handler the turn fails with it), and a class whose timers or reminders its backend or store cannot run.
 */
import { RinggrainError, type ErrorOptions } from '../errors.ts';

/**
 * The most timers (and, separately, reminders) one grain class may declare: the per-actor timer table has one entry per
 * declared timer.
 */
export const MAX_TIMERS = 16;

/** Why a timer or reminder declaration or argument was refused (stable, for branching). */
export type TimerProblem =
  | 'unknown-method'
  | 'request-not-empty'
  | 'bad-period'
  | 'bad-due'
  | 'too-many'
  | 'unknown-timer'
  | 'bad-name';

/** A grain spec's `timers` or `reminders` entry is invalid. */
export class TimerSpecError extends RinggrainError {
  readonly problem: TimerProblem;
  constructor(grain: string, what: string, problem: TimerProblem, detail: string, opts: ErrorOptions = {}) {
    super('TIMER_SPEC', `grain "${grain}", ${what}: ${detail}`, { hint: SPEC_HINTS[problem], ...opts });
    this.problem = problem;
  }
}

/** A call that starts, stops, sets or clears a timer or reminder got a bad argument (nothing was changed). */
export class TimerArgumentError extends RinggrainError {
  readonly problem: TimerProblem;
  constructor(where: string, problem: TimerProblem, detail: string, opts: ErrorOptions = {}) {
    super('TIMER_ARGUMENT', `${where}: ${detail}`, { hint: SPEC_HINTS[problem], ...opts });
    this.problem = problem;
  }
}

/** A grain class declares timers, but its backend's kernels cannot generate ticks. */
export class TimersUnsupportedError extends RinggrainError {
  constructor(grain: string, backend: string) {
    super(
      'TIMERS_UNSUPPORTED',
      `grain "${grain}" declares timers, but the ${backend} backend's kernels do not run timers`,
      {
        hint: 'place the grain on a backend that runs timers (cpu, inline), or leave `timers` out of its spec',
      },
    );
  }
}

/** A grain class declares reminders, but it has no storage, or its store cannot keep reminders. */
export class ReminderStorageError extends RinggrainError {
  constructor(grain: string, detail: string, opts: ErrorOptions = {}) {
    super('REMINDER_STORAGE', `grain "${grain}": ${detail}`, {
      hint:
        'register the grain with { storage } on a store that keeps reminders (LmdbStore, PostgresStore), or ' +
        'leave `reminders` out of its spec',
      ...opts,
    });
  }
}

/**
 * Cluster: `system.reminders(cls).set/clear` on a silo that does not serve the key's partition (another silo
 * keeps its reminders).
 */
export class ReminderNotOwnedError extends RinggrainError {
  readonly grain: string;
  readonly key: unknown;
  constructor(grain: string, key: unknown, op: 'set' | 'clear') {
    const why = "this silo does not serve the key's partition now (its owner keeps its reminders, or it is moving)";
    const what = `grain "${grain}", key ${JSON.stringify(key)}: cannot ${op} its reminder here`;
    super('REMINDER_NOT_OWNED', `${what}; ${why}`, {
      hint:
        'set or clear reminders from a handler (ctx.setReminder / ctx.clearReminder runs on the owner), or call ' +
        'system.reminders(...) on the silo that owns the key; during a move, retry once the partition is served ' +
        '(docs/cluster.md, reminders)',
    });
    this.grain = grain;
    this.key = key;
  }
}

const SPEC_HINTS: Record<TimerProblem, string> = {
  'unknown-method': "name one of the grain's message methods (a key of `methods`)",
  'request-not-empty': 'a timer or reminder delivers an empty message: give its method request: t.struct({})',
  'bad-period': 'periodMs must be a finite number of milliseconds greater than 0',
  'bad-due': 'dueMs (the delay of the first tick) must be a finite number of milliseconds ≥ 0',
  'too-many': `declare at most ${MAX_TIMERS} timers and ${MAX_TIMERS} reminders per grain class`,
  'unknown-timer':
    'start, stop, set or clear only the timers and reminders the grain spec declares (`timers`, `reminders`)',
  'bad-name': 'timer and reminder names are identifiers',
};
