import type { SystemState } from './state.ts';

/** Sends of one synchronous burst that carry one reading of the default clock (sendTime). */
const SEND_TIME_REUSE = 256;

/**
 * The send clock: the time each host message carries, and the synchronous burst of sends whose end (a
 * microtask) publishes the slots held back (ring.ts claimHeld) and drops the clock reading.
 */
export class SendClock {
  /** Whether sends are in a synchronous burst: its end (a microtask, endBurst) publishes what is held. */
  burst = false;
  /** The default clock's last reading (sendTime) and how many more sends of this burst may carry it. */
  private timeCached = 0;
  private timeUses = 0;

  constructor(private readonly state: SystemState) {}

  startBurst(): void {
    this.burst = true;
    queueMicrotask(this.endBurst);
  }

  /**
   * The time a message carries (`ctx.now()`, the sender's clock). An injected clock is read at every send.
   * The default clock (Date.now, 50 ns a call on some VMs, half of a tell's host cost) is read once per
   * SEND_TIME_REUSE sends of a synchronous burst and again after it: within its millisecond resolution.
   */
  sendTime(): number {
    const config = this.state.config;
    if (config.clockInjected) return config.clock();
    if (this.timeUses > 0) {
      this.timeUses--;
      return this.timeCached;
    }
    this.timeUses = SEND_TIME_REUSE - 1;
    this.timeCached = Date.now();
    if (!this.burst) this.startBurst(); // its end invalidates the reading
    return this.timeCached;
  }

  /**
   * The burst's end: every lane's held sends published (one wake each), head moved for observers, the clock reading
   * dropped.
   */
  private readonly endBurst = (): void => {
    this.burst = false;
    this.timeUses = 0; // the burst ended: the next send reads the clock
    for (const r of this.state.regs) {
      const k = r.kernel;
      if (!k) continue;
      for (let i = 0; i < k.lanes.length; i++) {
        const p = k.lanes[i]!.producer;
        const held = p.held;
        p.flushHead();
        if (held !== 0) k.wake(i);
      }
    }
  };
}
