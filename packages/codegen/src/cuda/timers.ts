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
 *
 * The files: timer-handler.ts (what a handler's ctx.startTimer / stopTimer call), timer-device.ts (a turn's
 * timer context, activation, deactivation, the tick's turn), timer-scan.ts (the scan, the clock, the
 * figures), timer-args.ts (the argument checks timers and reminders share); here, the translation of the calls.
 */
import type { GrainDef, TimerDef } from '@ringgrain/core/backend';
import type { Expr } from '../front/ast.ts';
import type { FnScope } from './scope.ts';
import { badNumberTexts, checkNamedCall, lowerTimeOptions } from './timer-args.ts';

export { TIMER_TEXT_BYTES, timerHandlerSection } from './timer-handler.ts';
export { NO_TIMER_HOOKS, timerDeviceSection } from './timer-device.ts';
export { TIMER_CADENCE } from './timer-scan.ts';

/** Whether the unit has timers: before the prelude (rg_turn carries the timer fields only then). */
export function timerDefine(def: GrainDef): string {
  return `#define RG_TIMERS ${def.timers.length ? 1 : 0}`;
}

type CallExpr = Extract<Expr, { kind: 'call' }>;

/** ctx.startTimer / ctx.stopTimer as a statement of a handler: writes into the actor's timer row. */
export function lowerTimerCall(fn: FnScope, e: CallExpr, op: 'startTimer' | 'stopTimer'): string {
  const call = checkNamedCall<TimerDef>(fn, e, {
    op,
    noun: 'timer',
    declared: fn.grain.timers,
    verbs: 'start and stop timers',
    literalWhy: 'the GPU table has one column per declared timer',
    opts: op === 'startTimer' ? 'optional' : 'none',
  });
  const timer = call.entry;
  if (!timer) return call.undeclared;
  if (op === 'stopTimer') return `rg_tm_stop(t, ${timer.id}u);`;
  const { period, due } = call.opts ? lowerTimeOptions(fn, call, op, call.opts, 'either field may be left out') : {};
  fn.mayFail = true;
  return (
    `rg_tm_start(t, ${timer.id}u, ${period !== undefined}, ${period ?? '0.0'}, ${due !== undefined}, ` +
    `${due ?? '0.0'}, ${badNumberTexts(call.where)});`
  );
}
