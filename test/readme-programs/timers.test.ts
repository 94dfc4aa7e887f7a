/** README "Timers": injected clock stepping, restart with another period, definition errors. */
import { Grain, HandlerError, t, type GrainSystem } from '@ringgrain/core';
import { TimerSpecError } from '@ringgrain/core/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, imbalance, startSystem } from './backends.ts';
import { Ticker } from './grains.ts';

describe('timer declarations', () => {
  const define = (
    timers: Record<string, unknown>,
    methods: Record<string, unknown> = {
      onTick: { request: t.struct({}) },
      withArg: { request: t.struct({ x: t.i32 }) },
    },
  ) =>
    Grain({
      name: 'BadTimers',
      module: import.meta.url,
      state: t.struct({ n: t.u32 }),
      methods: methods as never,
      timers: timers as never,
    });
  const problem = (fn: () => unknown): string | undefined => {
    try {
      fn();
    } catch (e) {
      expect(e).toBeInstanceOf(TimerSpecError);
      return (e as TimerSpecError & { problem: string }).problem;
    }
    return undefined;
  };
  it.each([
    [{ a: { method: 'nope', periodMs: 10 } }, 'unknown-method'],
    [{ a: { method: 'withArg', periodMs: 10 } }, 'request-not-empty'],
    [{ a: { method: 'onTick', periodMs: 0 } }, 'bad-period'],
    [{ a: { method: 'onTick', periodMs: -5 } }, 'bad-period'],
    [{ a: { method: 'onTick', periodMs: Number.NaN } }, 'bad-period'],
    [{ a: { method: 'onTick', periodMs: Infinity } }, 'bad-period'],
    [{ a: { method: 'onTick', periodMs: 10, dueMs: -1 } }, 'bad-due'],
    [
      Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`t${i}`, { method: 'onTick', periodMs: 10 }])),
      'too-many',
    ],
  ] as const)('%j → %s', (timers, expected) => {
    expect(problem(() => define(timers))).toBe(expected);
  });
  it('16 timers are allowed', () => {
    expect(
      problem(() =>
        define(Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`t${i}`, { method: 'onTick', periodMs: 10 }]))),
      ),
    ).toBeUndefined();
  });
});

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  // One system on one injected clock for both programs (a CPU system's start costs a thread's imports).
  const clock = { now: 5_000 };
  let system: GrainSystem;
  beforeAll(async () => {
    system = await startSystem(backend, [Ticker], { clock: () => clock.now });
  });
  afterAll(() => system.shutdown());

  it(
    'ticks by the injected clock across many actors; a restart with another period moves the grid; ticks are ' +
      'not messages',
    async () => {
      const keys = Array.from({ length: 40 }, (_, i) => i * 7);
      for (const k of keys) system.grain(Ticker, k).tell.read({} as never);
      await system.idle();
      const ticks = async () => (await system.askMany(Ticker, 'read', { key: keys })).ticks;
      for (let step = 1; step <= 5; step++) {
        clock.now = 5_000 + step * 100;
        await system.advanceTimers();
        expect(Array.from(await ticks())).toEqual(keys.map(() => step));
      }
      // Restart actor 0's timer with 30 ms: due at now + 30.
      await system.grain(Ticker, 0).start({ periodMs: 30 });
      clock.now += 29;
      await system.advanceTimers();
      expect((await system.grain(Ticker, 0).read({})).ticks).toBe(5);
      clock.now += 1;
      await system.advanceTimers();
      const r = await system.grain(Ticker, 0).read({});
      expect(r.ticks).toBe(6);
      expect(r.lastAt).toBe(clock.now);
      await system.idle();
      const m = system.metrics()['Ticker']!;
      expect(m.timers?.ticks).toBe(40 * 5 + 1);
      expect(m.sent).toBe(40 + 5 * 40 + 1 + 2);
      expect(await imbalance(system)).toEqual([]);
    },
  );

  it(
    'a tick that throws is a tellError ("timer \\"bad\\": …"), its timer keeps running; a bad startTimer ' +
      'period fails the ask with its message',
    async () => {
      const before = system.metrics()['Ticker']!.timers!.tickErrors;
      const errors: Array<{ method: string; error: Error }> = [];
      system.on('tellError', (e) => errors.push(e));
      const a = system.grain(Ticker, 1003);
      await a.startBad({});
      for (let i = 1; i <= 3; i++) {
        clock.now += 50;
        await system.advanceTimers();
      }
      await system.idle();
      expect(errors.length).toBe(3);
      expect(errors[0]!.error.message).toContain('timer "bad"');
      expect(errors[0]!.error.message).toContain('tick failed');
      expect(system.metrics()['Ticker']!.timers!.tickErrors - before).toBe(3);
      // The turn fails: the ask rejects with the TimerArgumentError's message (a HandlerError, as any throw).
      for (const periodMs of [0, Number.NaN, -1]) {
        const e = await a.start({ periodMs }).then(
          () => undefined,
          (x: unknown) => x,
        );
        expect(e).toBeInstanceOf(HandlerError);
        expect((e as Error).message).toMatch(/period/i);
      }
      await system.idle();
      expect(await imbalance(system)).toEqual([]);
    },
  );
});
