/**
 * The per-actor timer table, driven by hand-picked times (a deterministic clock): what is due when, in
 * which order, and that stopped or restarted timers never fire from their old schedule.
 */
import { describe, expect, it } from 'vitest';
import { nextDue } from '@ringgrain/core/backend';
import { TimerTable } from '../src/timer-table.ts';

/**
 * Runs every entry due by `now` the way a lane does (take, then re-arm on the period grid); returns [slot, timer]
 * fired.
 */
function runDue(table: TimerTable, now: number): Array<[number, number]> {
  const fired: Array<[number, number]> = [];
  for (let e = table.takeDue(now); e >= 0; e = table.takeDue(now)) {
    const slot = Math.floor(e / table.perActor);
    fired.push([slot, e - slot * table.perActor]);
    table.rearm(e, nextDue(table.dueOf(e), table.periodOf(e), now));
  }
  return fired;
}

describe('TimerTable', () => {
  it('fires entries in due order, once per period, and re-arms on the grid', () => {
    const table = new TimerTable(2);
    table.start(0, 0, 100, 100);
    table.start(0, 1, 150, 50);
    table.start(5, 0, 120, 100);
    expect(table.armed).toBe(3);
    expect(table.nextDue()).toBe(100);
    expect(runDue(table, 99)).toEqual([]);
    expect(runDue(table, 120)).toEqual([
      [0, 0],
      [5, 0],
    ]);
    expect(runDue(table, 150)).toEqual([[0, 1]]);
    expect(runDue(table, 200).sort()).toEqual([
      [0, 0],
      [0, 1],
    ]); // equal due times: any order
    expect(table.nextDue()).toBe(220);
  });

  it('a late scan fires each overdue entry once, then it is back on its grid', () => {
    const table = new TimerTable(1);
    table.start(3, 0, 100, 100);
    expect(runDue(table, 1050)).toEqual([[3, 0]]);
    expect(table.nextDue()).toBe(1100);
    expect(runDue(table, 1099)).toEqual([]);
    expect(runDue(table, 1100)).toEqual([[3, 0]]);
  });

  it('stopping, restarting and stopping a slot leave stale heap items that never fire', () => {
    const table = new TimerTable(2);
    table.start(1, 0, 100, 100);
    table.start(1, 1, 100, 100);
    table.stop(1, 1);
    expect(table.armed).toBe(1);
    table.start(1, 0, 300, 100); // restarted: the item at 100 is stale
    expect(runDue(table, 250)).toEqual([]);
    expect(runDue(table, 300)).toEqual([[1, 0]]);
    // The slot's actor goes away and the slot is reused at the same due time: only the new timer fires.
    table.stopAll(1);
    expect(table.armed).toBe(0);
    expect(table.nextDue()).toBe(Number.POSITIVE_INFINITY);
    table.start(1, 1, 400, 100);
    expect(runDue(table, 400)).toEqual([[1, 1]]);
    expect(table.armed).toBe(1);
  });

  it('holds 100,000 actors × 2 timers: every entry fires exactly once per period', () => {
    const n = 100_000;
    const table = new TimerTable(2);
    for (let s = 0; s < n; s++) {
      table.start(s, 0, 100 + (s % 100), 100);
      table.start(s, 1, 100 + (s % 7), 50);
    }
    const counts = new Uint8Array(2 * n);
    for (let now = 100; now <= 199; now++) {
      for (const [slot, timer] of runDue(table, now)) counts[slot * 2 + timer]!++;
    }
    // In [100, 199]: timer 0 once (due 100..199), timer 1 twice (its due in 100..106, and 50 later).
    const wrong: number[] = [];
    for (let s = 0; s < n && wrong.length < 5; s++) if (counts[s * 2] !== 1 || counts[s * 2 + 1] !== 2) wrong.push(s);
    expect(wrong).toEqual([]);
  });
});
