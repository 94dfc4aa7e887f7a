import { AskTimeoutError, KernelFaultError } from '../errors.ts';
import type { RingKernel } from '../kernel.ts';
import type { LaneRestart } from '../backend.ts';
import { laneOfAsk, rejectAsk } from '../pending.ts';
import type { SystemState } from './state.ts';

/** Resources that do not keep a finished program alive by themselves (stdio, message ports; checkForgottenShutdown). */
const QUIET_RESOURCES = new Set(['TTYWrap', 'PipeWrap', 'MessagePort']);

/** What a sweep runs besides its own checks. */
export interface SweepParts {
  drainReplies(): number;
  schedulePump(): void;
  collectIdleAll(): void;
  runTimers(): number;
  /** Whether a shutdown runs (the forgotten-shutdown warning is then moot). */
  stopping(): boolean;
}

/**
 * The sweep, every 50 ms off the hot path: faults, lane restarts, stalled heartbeats, ask timeouts, idle
 * collection, timers and reminders, and the warning for a program that never called shutdown().
 */
export class Sweeper {
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly heartbeats = new Map<RingKernel, Array<{ beat: number; at: number }>>();
  /** Per kernel, the lane restarts the sweep has already handled (backend.ts KernelHealth.laneRestarts). */
  private readonly laneRestartsSeen = new Map<RingKernel, number[]>();
  /**
   * Since when nothing but this system has kept the process alive (0: something else does), and whether it was said.
   */
  private aloneSince = 0;
  private aloneWarned = false;
  /** When the last sweep ran: a sweep that comes late (the event loop was blocked) judges no heartbeat. */
  private lastSweepAt = 0;

  constructor(
    private readonly state: SystemState,
    private readonly parts: SweepParts,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.sweep(), 50);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Fails the asks waiting on one lane of a kernel (its consumer died); returns how many. */
  private rejectAsksOfLane(kernel: RingKernel, lane: number, error: Error): number {
    const pending = this.state.pending;
    let n = 0;
    for (const [corr, p] of pending) {
      if (p.kernel !== kernel || laneOfAsk(corr, p) !== lane) continue;
      pending.delete(corr);
      rejectAsk(corr, p, error);
      n++;
    }
    return n;
  }

  /** Lanes the backend restarted since the last sweep: their waiting asks fail, an event says so. */
  private checkLaneRestarts(k: RingKernel, restarts: ReadonlyArray<LaneRestart> | undefined): void {
    if (!restarts) return;
    let seen = this.laneRestartsSeen.get(k);
    if (!seen) this.laneRestartsSeen.set(k, (seen = []));
    for (const [lane, r] of restarts.entries()) {
      const before = seen[lane] ?? 0;
      seen[lane] = r.restarts;
      // Fewer than before: a relaunched kernel counts from 0 again.
      if (r.restarts <= before) continue;
      const error = r.error ?? new KernelFaultError(k.def.name, `the consumer of lane ${lane} died and was restarted`);
      const failedAsks = this.rejectAsksOfLane(k, lane, error);
      this.state.config.logger.warn(
        { grain: k.def.name, lane, failedAsks, err: error },
        `${k.def.name}: lane ${lane} restarted after its consumer died (${failedAsks} asks failed)`,
      );
      this.state.events.emit('laneRestart', { grain: k.def.name, lane, error, failedAsks });
    }
  }

  /**
   * A program that is done but never called shutdown() does not exit: the CPU backend's threads keep the
   * process alive. Said once, as a warning, after 5 s in which no ask waited and nothing else kept the
   * process alive (process.getActiveResourcesInfo() lists no timer, socket or file request, only stdio and
   * message ports; the sweep's own interval is unref'd), unless a class has timers or reminders, which run
   * on their own.
   */
  private checkForgottenShutdown(): void {
    if (this.aloneWarned || this.parts.stopping()) return;
    const { pending, waiting, regs } = this.state;
    const alone =
      pending.size === 0 &&
      waiting.size === 0 &&
      !process.getActiveResourcesInfo().some((r) => !QUIET_RESOURCES.has(r)) &&
      !regs.some((r) => r.def.timers.length || r.def.reminders.length);
    if (!alone) {
      this.aloneSince = 0;
      return;
    }
    const now = performance.now();
    if (this.aloneSince === 0) this.aloneSince = now;
    else if (now - this.aloneSince >= 5_000) {
      this.aloneWarned = true;
      this.state.config.logger.warn(
        'nothing but this GrainSystem has kept the process alive for 5 s (no ask waiting, nothing else ' +
          'scheduled): if the program is done, it must call `await system.shutdown()` (which also writes ' +
          "stored states); until then the system's worker threads keep the process running",
      );
    }
  }

  private sweep(): void {
    const { pending, waiting, config } = this.state;
    // Tell errors arrive with nobody awaiting them: drain on every sweep so reply rings never fill.
    this.parts.drainReplies();
    const now = performance.now();
    // After a gap (the event loop was busy elsewhere), a lane's unchanged beat says nothing about the lane:
    // the stall clocks restart now rather than count the gap as a stall against a fresh ask.
    const lateAfter = Math.max(250, Math.min(1_000, config.heartbeatTimeoutMs / 2));
    const late = this.lastSweepAt !== 0 && now - this.lastSweepAt > lateAfter;
    this.lastSweepAt = now;
    for (const k of this.state.kernels()) {
      if (!k.accepting) continue;
      const health = k.healthReport();
      if (health?.fault) {
        k.markFaulted(health.fault);
        continue;
      }
      this.checkLaneRestarts(k, health?.laneRestarts);
      // Per lane: a lane whose heartbeat stands still while asks wait on it (the others may beat on).
      const perLane = pending.perLaneOf(k, k.lanes.length);
      const beats = k.heartbeats();
      const starting = health?.starting;
      let seen = this.heartbeats.get(k);
      if (!seen || seen.length !== beats.length)
        this.heartbeats.set(k, (seen = beats.map((beat) => ({ beat, at: now }))));
      for (const [i, beat] of beats.entries()) {
        const hb = seen[i]!;
        const asks = perLane[i] ?? 0;
        if (late || starting?.[i] || hb.beat !== beat || asks === 0 || k.state !== 'active') {
          hb.beat = beat;
          hb.at = now;
        } else if (now - hb.at > config.heartbeatTimeoutMs) {
          const where = beats.length > 1 ? ` on lane ${i} of ${beats.length}` : '';
          k.markFaulted(
            new KernelFaultError(
              k.def.name,
              `heartbeat stood still for ${Math.round(now - hb.at)} ms${where} with ${asks} asks waiting ` +
                '(a handler that never returns?)',
            ),
          );
          break;
        }
      }
    }
    this.parts.collectIdleAll();
    this.parts.runTimers();
    this.checkForgottenShutdown();
    for (const [corr, p] of pending.expired(now)) {
      pending.delete(corr);
      rejectAsk(corr, p, new AskTimeoutError(p.kernel.def.name, p.method.name, config.askTimeoutMs));
    }
    if (pending.size || waiting.size) this.parts.schedulePump();
  }
}
