import { describe, expect, it } from 'vitest';
import { CpuBackend, CpuBackendOptionsError } from '../src/index.ts';
import { SpinPolicy } from '../src/spin-policy.ts';

describe('SpinPolicy (adaptive idle spin of a pool thread)', () => {
  it('grows while sleeps are cut short by a ring, up to the most; falls back once work comes seldom', () => {
    const p = new SpinPolicy(0.05, 1);
    expect(p.windowMs).toBe(0.05);
    p.parked(true, 0.03, 10); // rung soon: at least doubles
    expect(p.windowMs).toBe(0.1);
    p.parked(true, 0.3, 11); // twice the sleep
    expect(p.windowMs).toBeCloseTo(0.6);
    p.parked(true, 0.9, 12);
    expect(p.windowMs).toBe(1); // capped
    p.parked(true, 5, 20); // rung, but later than the longest window would have waited
    expect(p.windowMs).toBe(0.05);
    p.parked(true, 0.01, 21);
    p.parked(true, 0.01, 21);
    expect(p.windowMs).toBe(0.2);
    p.parked(false, 0.5, 22); // timed out (a timer, the 1 s check): nothing to catch by spinning
    expect(p.windowMs).toBe(0.05);
  });

  it('one spin the OS cut into is a hiccup: the window stays', () => {
    const p = new SpinPolicy(0.05, 1);
    p.parked(true, 0.4, 1);
    expect(p.windowMs).toBeCloseTo(0.8);
    p.pass(0.001, 2); // an ordinary pass
    expect(p.preempted).toBe(0);
    p.pass(3, 5); // 3 ms between two passes: descheduled mid-spin, once
    expect(p.preempted).toBe(1);
    expect(p.windowMs).toBeCloseTo(0.8);
    p.pass(3, 5 + SpinPolicy.CROWDED_MS); // the next one no sooner than CROWDED_MS later: another hiccup
    expect(p.preempted).toBe(2);
    expect(p.windowMs).toBeCloseTo(0.8);
    p.parked(true, 0.6, 200);
    expect(p.windowMs).toBe(1);
  });

  it('two within CROWDED_MS (more runnable threads than cores) fall back and bar growth for a while', () => {
    const p = new SpinPolicy(0.05, 1);
    p.parked(true, 0.4, 1);
    p.pass(3, 5);
    p.pass(3, 10); // 5 ms later: crowded
    expect(p.preempted).toBe(2);
    expect(p.windowMs).toBe(0.05);
    p.parked(true, 0.01, 10 + SpinPolicy.BAR_MS - 1); // barred
    expect(p.windowMs).toBe(0.05);
    p.parked(true, 0.01, 10 + SpinPolicy.BAR_MS); // the bar is over
    expect(p.windowMs).toBe(0.1);
  });

  it('crowding that keeps coming bars growth longer (doubling to BAR_MAX_MS); after a calm spell BAR_MS again', () => {
    const p = new SpinPolicy(0.05, 1);
    let t = 100;
    p.pass(1, t);
    p.pass(1, (t += 1)); // bar 20 ms
    t += 30;
    p.pass(1, t); // 30 ms later: crowded again, bar 40 ms
    p.parked(true, 0.01, t + 2 * SpinPolicy.BAR_MS - 1);
    expect(p.windowMs).toBe(0.05);
    p.parked(true, 0.01, t + 2 * SpinPolicy.BAR_MS);
    expect(p.windowMs).toBe(0.1);
    for (let i = 0; i < 10; i++) p.pass(1, (t += 10)); // a machine that stays loaded
    p.parked(true, 0.01, t + SpinPolicy.BAR_MAX_MS - 1);
    expect(p.windowMs).toBe(0.05);
    t += 5 * SpinPolicy.BAR_MAX_MS; // calm
    p.pass(1, t); // a hiccup: no bar
    p.parked(true, 0.01, t + 1);
    expect(p.windowMs).toBe(0.1);
    p.pass(1, (t += 2)); // crowded after the calm: BAR_MS again
    p.parked(true, 0.01, t + SpinPolicy.BAR_MS - 1);
    expect(p.windowMs).toBe(0.05);
    p.parked(true, 0.01, t + SpinPolicy.BAR_MS);
    expect(p.windowMs).toBe(0.1);
  });

  it('a most of 0.05 ms (or less) never spins longer than that', () => {
    const p = new SpinPolicy(0.05, 0.05);
    p.parked(true, 0.001, 1);
    expect(p.windowMs).toBe(0.05);
    const none = new SpinPolicy(0, 0);
    none.parked(true, 0, 1);
    expect(none.windowMs).toBe(0);
  });

  it('CpuBackend maxSpinMs: a number of ms from 0 to 1000, anything else a typed options error', () => {
    for (const bad of [-1, 1001, Number.NaN, '1' as unknown as number]) {
      expect(() => new CpuBackend({ threads: 1, maxSpinMs: bad })).toThrow(CpuBackendOptionsError);
    }
    expect(() => new CpuBackend({ threads: 1, maxSpinMs: 0.05 })).not.toThrow();
    // No pool yet: no figures (the pool starts with the first kernel).
    expect(new CpuBackend({ threads: 1 }).poolStats()).toBeUndefined();
  });

  it('CpuBackend spinPause: an integer from 0 to 1000, anything else a typed options error naming it', () => {
    for (const bad of [-1, 1001, 2.5, Number.NaN, '4' as unknown as number]) {
      expect(() => new CpuBackend({ threads: 1, spinPause: bad })).toThrow(/spinPause must be an integer/);
      expect(() => new CpuBackend({ threads: 1, spinPause: bad })).toThrow(CpuBackendOptionsError);
    }
    for (const good of [0, 4, 1000]) expect(() => new CpuBackend({ threads: 1, spinPause: good })).not.toThrow();
  });
});
