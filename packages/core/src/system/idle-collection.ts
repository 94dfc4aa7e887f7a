import type { BackendKernel } from '../backend.ts';
import type { AnyGrainClass } from '../grain.ts';
import type { Registration, SystemState } from './state.ts';

/** Idle collection: actors of classes registered with `idleMs` deactivated once their last turn is that old. */
export class IdleCollection {
  constructor(private readonly state: SystemState) {}

  /** GrainSystem.collectIdle: one class or all, joining a collection under way and counting its deactivations. */
  async collectIdle(cls?: AnyGrainClass): Promise<number> {
    let n = 0;
    for (const reg of cls ? [this.state.registration(cls)] : this.state.regs) {
      // A collection the sweep started is joined, its deactivations counted: the actors it took were idle
      // too, and its rows must reach the write-behind before this resolves (so flush() after it writes them).
      const running = reg.collecting;
      if (running) n += await running;
      n += await this.collectIdleOf(reg);
    }
    return n;
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
    const run = impl.deactivateIdle(now - idleMs, now).catch((e: unknown) => {
      this.state.config.logger.debug({ err: e, grain: reg.def.name }, `${reg.def.name}: idle collection failed`);
      return 0;
    });
    reg.collecting = run;
    try {
      return await run;
    } finally {
      if (reg.collecting === run) reg.collecting = undefined;
    }
  }
}
