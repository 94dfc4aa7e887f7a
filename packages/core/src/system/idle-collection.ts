import type { BackendKernel } from '../backend.ts';
import type { AnyGrainClass } from '../grain.ts';
import type { Registration, SystemState } from './state.ts';

/** Idle collection: actors of classes registered with `idleMs` deactivated once their last turn is that old. */
export class IdleCollection {
  /** Per class, the deactivations of every collection that finished (explicit or the sweep's). */
  private readonly totals = new Map<Registration, number>();

  constructor(private readonly state: SystemState) {}

  /**
   * GrainSystem.collectIdle: one class or all. Counts every deactivation that finished while it ran, the
   * sweep's included: a background collection of a class this call reaches later may start and end while it
   * waits on an earlier class, and the actors it took were idle too. A collection under way is joined, so
   * its rows reach the write-behind before this resolves (flush() after it writes them).
   */
  async collectIdle(cls?: AnyGrainClass): Promise<number> {
    const regs = cls ? [this.state.registration(cls)] : [...this.state.regs];
    const before = regs.map((reg) => this.totals.get(reg) ?? 0);
    for (const reg of regs) {
      const running = reg.collecting;
      if (running) await running;
      await this.collectIdleOf(reg);
    }
    return regs.reduce((n, reg, i) => n + (this.totals.get(reg) ?? 0) - before[i]!, 0);
  }

  /** The sweep's turn: every class due (half its idleMs since the last collection) starts one. */
  collectIdleAll(): void {
    const now = this.state.config.clock();
    for (const reg of this.state.regs) {
      const idleMs = reg.storage.idleMs;
      if (idleMs === undefined || reg.collecting || now - reg.lastCollect < idleMs / 2) continue;
      void this.collectIdleOf(reg);
    }
  }

  /** One collection of a class at a time: a call while one runs waits for it, then collects as of its own clock. */
  private async collectIdleOf(reg: Registration): Promise<number> {
    while (reg.collecting) await reg.collecting;
    const idleMs = reg.storage.idleMs;
    const k = reg.kernel;
    const impl: BackendKernel | undefined = k?.backendKernel;
    if (idleMs === undefined || !k || k.state !== 'active' || !impl?.deactivateIdle) return 0;
    const now = this.state.config.clock();
    reg.lastCollect = now;
    const run = impl.deactivateIdle(now - idleMs, now).then(
      (n) => {
        this.totals.set(reg, (this.totals.get(reg) ?? 0) + n);
        return n;
      },
      (e: unknown) => {
        this.state.config.logger.debug({ err: e, grain: reg.def.name }, `${reg.def.name}: idle collection failed`);
        return 0;
      },
    );
    reg.collecting = run;
    try {
      return await run;
    } finally {
      if (reg.collecting === run) reg.collecting = undefined;
    }
  }
}
