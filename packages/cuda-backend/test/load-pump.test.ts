import { describe, expect, it } from 'vitest';
import { LoadPump, realScheduler, type PumpScheduler } from '../src/load-pump.ts';

/** A hand-driven event loop: a clock, the next-turn queue and timers, run one step at a time. */
class FakeLoop implements PumpScheduler {
  t = 0;
  private seq = 0;
  private soonQ = new Map<number, () => void>();
  private timers = new Map<number, { at: number; f: () => void }>();
  /** What ran, in order: 'soon' or 'later@<delay>'. */
  log: string[] = [];
  now(): number {
    return this.t;
  }
  soon(f: () => void): unknown {
    const id = ++this.seq;
    this.soonQ.set(id, f);
    return id;
  }
  later(f: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.timers.set(id, { at: this.t + ms, f });
    this.log.push(`later@${ms}`);
    return id;
  }
  cancel(h: unknown, immediate: boolean): void {
    // The real scheduler clears each kind with its own call: a wrong kind here is the pump's bug.
    if (immediate ? this.timers.has(h as number) : this.soonQ.has(h as number))
      throw new Error(`cancel(${String(h)}, immediate: ${immediate}) of the other kind`);
    this.soonQ.delete(h as number);
    this.timers.delete(h as number);
  }
  get pending(): number {
    return this.soonQ.size + this.timers.size;
  }
  /** One event-loop turn: the queued next-turn callbacks if any (`cost` ms pass), else the earliest timer. */
  step(cost = 0.01): void {
    if (this.soonQ.size) {
      const [id, f] = this.soonQ.entries().next().value!;
      this.soonQ.delete(id);
      this.t += cost;
      this.log.push('soon');
      f();
      return;
    }
    const [id, tm] = [...this.timers.entries()].sort((a, b) => a[1].at - b[1].at)[0]!;
    this.timers.delete(id);
    this.t = Math.max(this.t, tm.at);
    tm.f();
  }
}

const opts = { spinMs: 2, idleMs: [1, 4] as const };

describe('load pump (when the host reads the load-request ring)', () => {
  it('idle: only the timer polls, its delay doubling from 1 to 4 ms; nothing spins', () => {
    const loop = new FakeLoop();
    const pump = new LoadPump(() => 0, () => {}, loop, opts);
    for (let i = 0; i < 6; i++) loop.step();
    const timers = ['later@1', 'later@2', 'later@4', 'later@4', 'later@4', 'later@4', 'later@4'];
    expect(loop.log.filter((l) => l !== 'soon')).toEqual(timers);
    expect(loop.log).not.toContain('soon');
    expect(pump.polls).toBe(6);
    expect(pump.timedPolls).toBe(6);
    expect(loop.pending).toBe(1); // always exactly one poll armed
  });

  it('a kick polls on the next event-loop turn (the timer is dropped), spins for spinMs, then backs off', () => {
    const loop = new FakeLoop();
    let posted = 0;
    const pump = new LoadPump(() => (posted ? (posted--, 1) : 0), () => {}, loop, opts);
    for (let i = 0; i < 3; i++) loop.step(); // idle: timer at 4 ms now
    loop.log = [];
    pump.kick();
    expect(loop.pending).toBe(1);
    loop.step(0.5);
    expect(loop.log[0]).toBe('soon'); // not the 4 ms timer
    // nothing found: spins until 2 ms after the kick (0.5 ms a turn here), then the timer from 1 ms again
    while (loop.log.at(-1) === 'soon') loop.step(0.5);
    expect(loop.log.filter((l) => l === 'soon').length).toBe(4);
    expect(loop.log.at(-1)).toBe('later@1');
    // a find extends the spin: the key posted meanwhile is seen on the next turn after a kick
    posted = 1;
    pump.kick();
    loop.step(0.5);
    expect(pump.polls).toBe(3 + 4 + 1);
    loop.log = [];
    while (loop.log.at(-1) !== 'later@1') loop.step(0.5);
    expect(loop.log.filter((l) => l === 'soon').length).toBe(4); // 2 ms from the find, not from the kick
  });

  it('kicks while spinning add no second poll; stop leaves nothing armed and later kicks do nothing', () => {
    const loop = new FakeLoop();
    const pump = new LoadPump(() => 0, () => {}, loop, opts);
    pump.kick();
    pump.kick();
    pump.kick();
    expect(loop.pending).toBe(1);
    pump.stop();
    expect(loop.pending).toBe(0);
    pump.kick();
    expect(loop.pending).toBe(0);
  });

  it('a poll that throws is reported and the pump goes on', () => {
    const loop = new FakeLoop();
    const errors: unknown[] = [];
    let n = 0;
    const pump = new LoadPump(() => {
      if (++n === 1) throw new Error('ring unreadable');
      return 0;
    }, (e) => errors.push(e), loop, opts);
    loop.step();
    loop.step();
    expect(errors.map((e) => (e as Error).message)).toEqual(['ring unreadable']);
    expect(pump.polls).toBe(2);
    expect(loop.pending).toBe(1);
  });

  it("with the real event loop, cancelling its timer leaves the process's immediates running", async () => {
    // clearImmediate on a Timeout makes Node count one immediate fewer than are queued: no immediate of the
    // process then ran until another was scheduled (a CUDA class with storage did not stop on the H200 at d7629c3).
    const pump = new LoadPump(() => 0, () => {}, realScheduler, opts);
    const tick = () => new Promise<void>((r) => setTimeout(r, 1));
    for (let i = 0; i < 2000 && pump.timedPolls === 0; i++) await tick();
    expect(pump.timedPolls).toBeGreaterThan(0);
    pump.kick(); // cancels the idle timer, polls on the next turns
    pump.stop(); // cancels that next-turn poll
    const ran = await Promise.race([
      new Promise<string>((r) => setImmediate(() => r('immediate ran'))),
      new Promise<string>((r) => setTimeout(() => r('no immediate ran within 5 s'), 5000)),
    ]);
    expect(ran).toBe('immediate ran');
  });
});
