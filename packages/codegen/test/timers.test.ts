import type { TimerArgumentError } from '@ringgrain/core/errors';
import { layoutOf, nextDue, offsetOf, startArgs } from '@ringgrain/core/backend';
import { describe, expect, it } from 'vitest';
import {
  KERNEL_PARAMS,
  TIMER_HOST_BYTES,
  TimerEntry,
  TimerGlobals,
  TimerHostBlock,
  TimerLaneStats,
  TimerRowHeader,
  generateKernel,
  timerLayout,
} from '../src/index.ts';
import { Account } from '../../../examples/bank/grains.ts';
import { Ticker } from '../../../test/fixtures/timers.ts';
import { Beacon } from './fixtures/timers.ts';
import { HAVE_GXX, gxxBuild } from './toolchain.ts';
import { spawnSync } from 'node:child_process';

describe('timer layouts (abi.ts: one definition for TS and the generated C)', () => {
  it('TimerEntry and TimerRowHeader: 32 and 16 bytes, f64 words 8-aligned', () => {
    expect(layoutOf(TimerEntry).size).toBe(32);
    expect(['due', 'period', 'arm', 'pending', 'method', 'active'].map((f) => offsetOf(TimerEntry, f))).toEqual([
      0, 8, 16, 20, 24, 28,
    ]);
    expect(layoutOf(TimerRowHeader).size).toBe(16);
    expect(['keyLo', 'keyHi', 'live'].map((f) => offsetOf(TimerRowHeader, f))).toEqual([0, 4, 8]);
  });
  it('TimerGlobals one 128-byte line, TimerLaneStats 32 bytes', () => {
    expect(layoutOf(TimerGlobals).size).toBe(128);
    expect(
      ['originNsLo', 'originNsHi', 'originMs', 'time', 'epoch', 'hostClock', 'ready', 'armGen'].map((f) =>
        offsetOf(TimerGlobals, f),
      ),
    ).toEqual([0, 4, 8, 16, 24, 28, 32, 36]);
    expect(layoutOf(TimerLaneStats).size).toBe(32);
    expect(
      ['ticks', 'tickErrors', 'armed', 'handled', 'enqueued', 'scannedEpoch'].map((f) => offsetOf(TimerLaneStats, f)),
    ).toEqual([0, 4, 8, 12, 16, 20]);
  });
  it('TimerHostBlock: a host-written line, then a kernel-written line', () => {
    expect(TIMER_HOST_BYTES).toBe(256);
    expect(['seq', 'clock', 'time', 'originMs'].map((f) => offsetOf(TimerHostBlock, f))).toEqual([0, 4, 8, 16]);
    expect(
      ['caughtEpoch', 'ticks', 'tickErrors', 'armed', 'publishes'].map((f) => offsetOf(TimerHostBlock, f)),
    ).toEqual([128, 132, 136, 140, 144]);
  });
  it('timerLayout: globals, stats per worker, rows from the next 128-byte boundary; nothing without timers', () => {
    expect(timerLayout({ partitions: 3, maxActors: 10, timers: 2 })).toEqual({
      statsAt: 128,
      rowsAt: 256,
      rowBytes: 80,
      bytes: 256 + 800,
    });
    expect(timerLayout({ partitions: 512, maxActors: 1_000_000, timers: 1 })).toEqual({
      statsAt: 128,
      rowsAt: 128 + 512 * 32,
      rowBytes: 48,
      bytes: 128 + 512 * 32 + 48_000_000,
    });
    expect(timerLayout({ partitions: 4, maxActors: 100, timers: 0 }).bytes).toBe(0);
  });
  it('the kernel takes the timer area and the host block as its last two parameters', () => {
    expect(KERNEL_PARAMS.slice(-2).map((p) => [p.name, p.kind])).toEqual([
      ['timers', 'ptr'],
      ['timerHost', 'ptr'],
    ]);
  });
});

describe('generated timer code', () => {
  const ticker = generateKernel(Ticker.grain).source;
  it('a unit with timers asserts every timer struct against layoutOf and fills the hooks', () => {
    expect(ticker).toContain('#define RG_TIMERS 1');
    for (const s of [
      'rg_TimerEntry',
      'rg_TimerRowHeader',
      'rg_TimerGlobals',
      'rg_TimerLaneStats',
      'rg_TimerHostBlock',
    ]) {
      expect(ticker).toContain(
        `static_assert(sizeof(${s}) == ` +
          `${
            layoutOf(
              {
                rg_TimerEntry: TimerEntry,
                rg_TimerRowHeader: TimerRowHeader,
                rg_TimerGlobals: TimerGlobals,
                rg_TimerLaneStats: TimerLaneStats,
                rg_TimerHostBlock: TimerHostBlock,
              }[s]!,
            ).size
          }`,
      );
    }
    expect(ticker).toContain('RG_OFFSET_ASSERT(rg_TimerEntry, pending, 20');
    expect(ticker).toContain('#define RG_TM_TICK_TURN(k, ctr, slot, stage, cap, part, scratch, co) \\');
    // Only `tick` starts at activation (manual and boom are autoStart: false).
    expect(ticker).toMatch(/rg_tm_write\(&t, 0u, now \+ 100(\.0)?, 100(\.0)?, 1u\); \/\* tick \*\//);
    expect(ticker).not.toMatch(/rg_tm_write\(&t, [12]u, now/);
  });
  it('a unit without timers has empty hooks and no timer code', () => {
    const account = generateKernel(Account.grain).source;
    expect(account).toContain('#define RG_TIMERS 0');
    expect(account).toContain('#define RG_TM_TICK_TURN(k, ctr, slot, stage, cap, part, scratch, co) ((void)0)');
    expect(account).not.toContain('rg_tm_start');
  });
  it("an undeclared timer name fails the turn with core's TimerArgumentError text", () => {
    expect(ticker).toContain(
      't->msg = "Ticker.startTimer(\\"nope\\"): no timer named \\"nope\\" is declared (declared: tick, manual, ' +
        'boom)\\012  hint:',
    );
  });
});

/**
 * The handler side of the timer table built for the host with g++ (it is RG_HD): starts and stops write
 * the row as the CPU backend's table does, bad arguments give core's TimerArgumentError text with the
 * number written as JavaScript writes it, and the next due time is core's nextDue.
 */
describe.skipIf(!HAVE_GXX)('timer table, handler side (g++ host build of the Beacon unit)', () => {
  const harness = String.raw`
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "unit.cu"
int main(int argc, char** argv) {
  const char* op = argv[1];
  if (!strcmp(op, "num")) {
    for (int i = 2; i < argc; i++) { char b[128]; rg_tm_num(b, 0u, 128u, strtod(argv[i], 0)); printf("%s\n", b); }
    return 0;
  }
  if (!strcmp(op, "next")) {
    printf("%.17g\n", rg_tm_next_due(strtod(argv[2], 0), strtod(argv[3], 0), strtod(argv[4], 0)));
    return 0;
  }
  /* start/stop on a zeroed row: what each call wrote */
  static unsigned char row[sizeof(rg_TimerRowHeader) + 2 * sizeof(rg_TimerEntry)];
  char text[RG_TM_TEXT_BYTES];
  int armed = 0;
  unsigned int gen = 0;
  rg_turn t = {};
  t.now = 1000.0;
  t.tmRow = row;
  t.tmArmed = &armed;
  t.tmGen = &gen;
  t.tmText = text;
  for (int i = 2; i + 4 < argc + 1; i += 5) {
    t.err = 0;
    t.msg = 0;
    const int id = atoi(argv[i]);
    int rc;
    if (id < 0) rc = rg_tm_stop(&t, (unsigned int)(-id - 1));
    else rc = rg_tm_start(&t, (unsigned int)id, atoi(argv[i + 1]) != 0, strtod(argv[i + 2], 0), atoi(argv[i + 3]) != 0, strtod(argv[i + 4], 0),
                          "P<", ">P", "D<", ">D");
    const rg_TimerEntry* e = rg_tm_entry(row, id < 0 ? (unsigned int)(-id - 1) : (unsigned int)id);
    printf("%d|%s|%.17g|%.17g|%u|%u|%u|%d\n", rc, t.msg ? t.msg : "", e->due, e->period, e->arm, e->method, e->active, armed);
  }
  return 0;
}
`;
  const unit = generateKernel(Beacon.grain).source;
  const build = () => {
    const b = gxxBuild(unit, harness);
    expect(b.log).toBe('');
    return b.out;
  };
  const run = (args: Array<string | number>): string[] => {
    const r = spawnSync(build(), args.map(String), { encoding: 'utf8' });
    expect(r.status).toBe(0);
    return r.stdout.trim().split('\n');
  };

  it('numbers in an error text read as String(n)', () => {
    const values = [
      0,
      -5,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      Number.NaN,
      -0.5,
      1500.5,
      -1e-7,
      12345678.25,
      -Number.MAX_SAFE_INTEGER,
    ];
    expect(
      run([
        'num',
        ...values.map((v) =>
          Number.isNaN(v)
            ? 'nan'
            : Object.is(v, Infinity)
              ? 'inf'
              : Object.is(v, -Infinity)
                ? '-inf'
                : v.toPrecision(17),
        ),
      ]),
    ).toEqual(values.map(String));
  });

  it('a bad period or first delay fails with the TimerArgumentError text core throws (nothing changes)', () => {
    // The generated call sites pass core's texts; here the harness passes markers to see the number's place.
    const out = run(['start', 1, 1, -5, 0, 0, 1, 1, 10, 1, Number.NaN.toString(), 1, 0, 0, 1, -1]);
    expect(out[0]).toBe('10|P<-5>P|0|0|0|0|0|0');
    expect(out[1]).toBe('10|D<NaN>D|0|0|0|0|0|0');
    expect(out[2]).toBe('10|D<-1>D|0|0|0|0|0|0');
    // What the generated code passes for those markers: core's own message split around the number.
    const core = (() => {
      try {
        startArgs('Beacon.startTimer("slow")', { periodMs: -5 }, {});
      } catch (e) {
        return (e as TimerArgumentError).message;
      }
      return '';
    })();
    expect(unit).toContain(`"Beacon.startTimer(\\"slow\\"): periodMs ", " is not a finite number > 0\\012  hint:`);
    expect(core).toMatch(/^Beacon\.startTimer\("slow"\): periodMs -5 is not a finite number > 0\n {2}hint: /);
  });

  it('start, restart and stop write the row as core startArgs says; armed counts running timers', () => {
    // slow (id 1) is declared with period 1500.5 and no dueMs (first delay = period).
    const out = run([
      'start',
      1,
      0,
      0,
      0,
      0,
      /* declared */ 1,
      1,
      200,
      0,
      0,
      /* period only: due = period */ 1,
      0,
      0,
      1,
      0,
      /* due only */ -2,
      0,
      0,
      0,
      0,
      /* stop */ -2,
      0,
      0,
      0,
      0 /* stop again */,
    ]);
    const row = (due: number, period: number, arm: number, active: number, armed: number) =>
      `0||${due}|${period}|${arm}|1|${active}|${armed}`;
    expect(out).toEqual([
      row(1000 + 1500.5, 1500.5, 1, 1, 1),
      row(1200, 200, 2, 1, 1),
      row(1000, 1500.5, 3, 1, 1),
      row(1000, 1500.5, 4, 0, 0),
      row(1000, 1500.5, 4, 0, 0),
    ]);
  });

  it('the next due time is core nextDue (missed periods fire once, the phase is kept)', () => {
    for (const [due, period, now] of [
      [100, 100, 100],
      [100, 100, 1050],
      [100, 100, 99],
      [5000, 50, 5050],
      [0.5, 0.25, 7.3],
    ] as const) {
      expect(Number(run(['next', due, period, now])[0]), `${due} ${period} ${now}`).toBe(nextDue(due, period, now));
    }
  });
});
