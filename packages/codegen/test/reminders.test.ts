import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { TimerArgumentError } from '@ringgrain/core/errors';
import type { GrainDef } from '@ringgrain/core/types';
import { Reminded } from '../../../test/fixtures/timers.ts';
import { generateKernel } from '../src/index.ts';
import { reminderHandlerSection } from '../src/cuda/reminders.ts';
import { HAVE_GXX, gxxBuild } from './toolchain.ts';

/**
 * Reminders on the GPU, the handler side (reminders.ts): the generated checks and the JSON record built
 * with g++ over a stand-in turn, the record caught where the ring kernel would put it on the reply ring.
 * Expected results: core's texts (TimerArgumentError, startArgs) and what the CPU backend records
 * (dispatcher.ts `reminder`: op, key, name, periodMs, dueAt = now + dueMs), compared after JSON.parse, so
 * every number must read back exactly.
 */
const section = reminderHandlerSection(Reminded.grain as GrainDef);

const harness = String.raw`#include <cstdio>
#include <cstring>
#include <cstdlib>
#define RG_HD
#define RG_OK 0
#define RG_E_THROW 99
struct rg_turn { long long key; double now; int err; const char* msg; char* remText; const void* remKernel; };
static int emits = 0;
static int rg_test_emit(rg_turn* t, unsigned int n) { emits++; printf("R %u %.*s\n", n, (int)n, t->remText); return RG_OK; }
#define RG_REM_HOST_EMIT(t, n) rg_test_emit((t), (n))
#include "unit.cu"
int main() {
  char op;
  while (scanf(" %c", &op) == 1) {
    long long key; double now;
    if (scanf("%lld %lf", &key, &now) != 2) return 2;
    char buf[RG_REM_TEXT_BYTES];
    rg_turn t = {key, now, 0, 0, buf, 0};
    int rc;
    if (op == 'S') {
      /* S key now period hasDue due: the doubles as hex bit patterns (exact) */
      unsigned long long pb, db; int hasDue;
      if (scanf("%llx %d %llx", &pb, &hasDue, &db) != 3) return 2;
      double p, d; memcpy(&p, &pb, 8); memcpy(&d, &db, 8);
      rc = rg_rem_set(&t, "\"nudge\"", p, hasDue != 0, d, "PRE<", ">POST", "DPRE<", ">DPOST");
    } else {
      rc = rg_rem_clear(&t, "\"nudge\"");
    }
    if (rc) printf("E %d %s\n", rc, t.msg);
  }
  printf("emits %d\n", emits);
}
`;

const hex = (v: number) => Buffer.from(new Float64Array([v]).buffer).readBigUInt64LE().toString(16);

describe.skipIf(!HAVE_GXX)('reminders on the GPU: the handler side (reminders.ts, g++ on the host)', () => {
  const run = (lines: string[]) => {
    const b = gxxBuild(section, harness);
    expect(b.log).toBe('');
    const r = spawnSync(b.out, { input: lines.join('\n') + '\n', encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    return r.stdout.trim().split('\n');
  };

  it(
    'records set and clear as the CPU backend does (op, key, name, periodMs, dueAt = now + dueMs; dueMs ' +
      'defaults to periodMs), every number exact',
    () => {
      // Times a reminder may carry: integers, halves, fractions of a millisecond, clocks since the epoch.
      const cases: Array<{ key: number; now: number; period: number; due?: number }> = [
        { key: 1, now: 0, period: 1000, due: 500 },
        { key: -7, now: 1_732_700_000_123, period: 2000 },
        { key: 2 ** 53 - 1, now: 12.5, period: 1500.5, due: 0 },
        { key: -(2 ** 53) + 1, now: 0.1, period: 0.1, due: 0.3 },
        { key: 42, now: 1e15 + 0.25, period: 86_400_000, due: 1 / 3 },
      ];
      // And random ones (fixed seed): every double in [2^-8, 2^40) ms reads back exactly.
      let s = 12345;
      const rnd = () => ((s = (s * 1103515245 + 12345) % 2 ** 31), s / 2 ** 31);
      for (let i = 0; i < 200; i++)
        cases.push({
          key: Math.floor(rnd() * 1e9) - 5e8,
          now: rnd() * 2 ** 40,
          period: 2 ** -8 + rnd() * 1e7,
          due: rnd() * 1e6,
        });
      const lines = cases.map(
        (c) => `S ${c.key} ${c.now} ${hex(c.period)} ${c.due === undefined ? 0 : 1} ${hex(c.due ?? 0)}`,
      );
      // `now` goes through scanf %lf: send it as the exact decimal JS writes (shortest round trip) and use what C read
      // (the record's dueAt is now + due there).
      lines.push('C 9 0');
      const out = run(lines);
      expect(out.at(-1)).toBe(`emits ${cases.length + 1}`);
      cases.forEach((c, i) => {
        const m = /^R (\d+) (.*)$/.exec(out[i]!);
        expect(m, out[i]).not.toBeNull();
        expect(Number(m![1])).toBe(Buffer.byteLength(m![2]!));
        const rec = JSON.parse(m![2]!) as Record<string, unknown>;
        expect(rec).toEqual({
          op: 'set',
          key: c.key,
          name: 'nudge',
          periodMs: c.period,
          dueAt: c.now + (c.due ?? c.period),
        });
      });
      expect(JSON.parse(out[cases.length]!.replace(/^R \d+ /, ''))).toEqual({ op: 'clear', key: 9, name: 'nudge' });
    },
  );

  it('bad arguments fail the turn with core\'s text (the number as JavaScript writes it), nothing recorded', () => {
    const bad: Array<[number, number | undefined, string]> = [
      [0, undefined, 'PRE<0>POST'],
      [-1, 5, 'PRE<-1>POST'],
      [Number.NaN, 5, 'PRE<NaN>POST'],
      [Number.POSITIVE_INFINITY, 5, 'PRE<Infinity>POST'],
      [10, -0.5, 'DPRE<-0.5>DPOST'],
      [10, Number.NEGATIVE_INFINITY, 'DPRE<-Infinity>DPOST'],
      [Number.POSITIVE_INFINITY, undefined, 'PRE<Infinity>POST'],
    ];
    const out = run(bad.map(([p, d]) => `S 1 0 ${hex(p)} ${d === undefined ? 0 : 1} ${hex(d ?? 0)}`));
    expect(out).toEqual([...bad.map(([, , text]) => `E 99 ${text}`), 'emits 0']);
    // The generated unit carries core's own texts around the number (startArgs / TimerArgumentError).
    const unit = generateKernel(Reminded.grain).source;
    const msg = new TimerArgumentError(
      'Reminded.setReminder("nudge")',
      'bad-period',
      'periodMs \u0001 is not a finite number > 0',
    ).message;
    const pre = msg.split('\u0001')[0]!;
    expect(unit).toContain(`"${pre.replace(/"/g, '\\"')}"`);
  });

  it('a time with bits below 2^-60 ms fails the turn instead of being rounded', () => {
    const out = run([`S 1 0 ${hex(2 ** -70)} 1 ${hex(0)}`, `S 1 0 ${hex(10)} 1 ${hex(2 ** -65)}`]);
    expect(out[0]).toMatch(/^E 99 ctx\.setReminder: periodMs or the due time has binary digits below 2\^-60 ms/);
    expect(out[1]).toMatch(/^E 99 ctx\.setReminder: periodMs or the due time/);
    expect(out.at(-1)).toBe('emits 0');
  });
});
