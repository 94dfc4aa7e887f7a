import type { Logger } from 'pino';
import type { ClassMetrics } from '../system/events.ts';
import { IdleTimeoutError } from '../errors.ts';
import type { PendingAsks } from './asks.ts';
import type { RouterCounts } from './counts.ts';
import { EntryKind, type ClusterConnection, type SiloInfo } from './types.ts';

/**
 * Questions one member asks another about its system, as Control entries ([4, corr, op, arg]) answered by
 * Reply entries: `metrics` (the silo's `system.metrics()`), `idle` (the silo's own `system.idle()`,
 * then its message counts) and `advanceTimers` (the silo's `system.advanceTimers()`, by its own clock). A client hosts
 * no kernel, so this is how it reads the cluster's counters and
 * waits until everything sent into the cluster was processed.
 */
export type ControlOp = 'metrics' | 'idle' | 'advanceTimers';
export const CONTROL_OPS: readonly ControlOp[] = ['metrics', 'idle', 'advanceTimers'];

/** What a silo answers to `idle`, once its own kernels are idle. */
export interface IdleReport {
  /** Message entries this member received and sent (forwards included) since it joined. */
  readonly in: number;
  readonly out: number;
  /** Entries waiting here: parked for an owner, held for a handoff. */
  readonly waiting: number;
}

/** What answering needs of the system (RouterHost). */
export interface ControlHost {
  readonly logger: Logger;
  /** This system's own `idle()` (its kernels only). */
  localIdle?(opts: { timeoutMs: number }): Promise<void>;
  /** This system's `metrics()`. */
  localMetrics?(): Record<string, ClassMetrics>;
  /** This system's own `advanceTimers()`: the reminders it fired. */
  localAdvanceTimers?(opts: { timeoutMs: number }): Promise<number>;
}

/** What the control needs of the router. */
export interface ControlRouter {
  reply(to: string, corr: number, ok: 0 | 1, v: unknown): void;
  /** Entries waiting in the router now (parked, held). */
  waiting(): number;
}

const IDLE_RETRY_MS = 2;

export class ClusterControl {
  constructor(
    private readonly host: ControlHost,
    private readonly conn: ClusterConnection,
    private readonly asks: PendingAsks,
    private readonly counts: RouterCounts,
    private readonly router: ControlRouter,
  ) {}

  /** Answers a Control entry from `from`. */
  serve(from: string, corr: number, op: string, arg: unknown): void {
    const fail = (e: unknown) => this.router.reply(from, corr, 0, e);
    switch (op) {
      case 'metrics':
        try {
          this.router.reply(from, corr, 1, this.host.localMetrics?.() ?? {});
        } catch (e) {
          fail(e);
        }
        return;
      case 'idle': {
        const timeoutMs = typeof arg === 'number' && arg > 0 ? arg : 60_000;
        const local = this.host.localIdle?.({ timeoutMs }) ?? Promise.resolve();
        local.then(() => this.router.reply(from, corr, 1, this.report()), fail);
        return;
      }
      case 'advanceTimers': {
        const timeoutMs = typeof arg === 'number' && arg > 0 ? arg : 60_000;
        const run = this.host.localAdvanceTimers?.({ timeoutMs }) ?? Promise.resolve(0);
        run.then((fired) => this.router.reply(from, corr, 1, fired), fail);
        return;
      }
      default:
        fail(new Error(`unknown control op ${JSON.stringify(op)}`));
    }
  }

  /** This member's message counts, read when its own kernels are idle. */
  private report(): IdleReport {
    return { in: this.counts.messagesIn, out: this.counts.messagesOut, waiting: this.router.waiting() };
  }

  /** Asks silo `to` an op; resolves with its answer (rejects if it dies, or after timeoutMs). */
  private request(to: string, op: ControlOp, arg: unknown, timeoutMs: number): Promise<unknown> {
    const corr = this.asks.next();
    const p = new Promise<unknown>((resolve, reject) => {
      this.asks.add(corr, {
        resolve,
        reject,
        silo: to,
        grain: '(cluster)',
        method: op,
        deadline: performance.now() + timeoutMs,
        into: undefined,
        reply: undefined,
        raw: true,
      });
    });
    this.conn.send(to, [EntryKind.Control, corr, op, arg]);
    return p;
  }

  /** The members that host classes, this one aside. */
  private silos(): SiloInfo[] {
    return this.conn.live().filter((s) => s.id !== this.conn.self && !s.client && Object.keys(s.grains).length > 0);
  }

  /** Every other silo's `system.metrics()`, by silo id (this member's own too, when it hosts classes). */
  async siloMetrics(timeoutMs = 10_000): Promise<Record<string, Record<string, ClassMetrics>>> {
    const silos = this.silos();
    const got = await Promise.all(silos.map((s) => this.request(s.id, 'metrics', null, timeoutMs)));
    const out: Record<string, Record<string, ClassMetrics>> = {};
    const own = this.host.localMetrics?.();
    if (own && Object.keys(own).length) out[this.conn.self] = own;
    silos.forEach((s, i) => (out[s.id] = got[i] as Record<string, ClassMetrics>));
    return out;
  }

  /**
   * Every silo's `advanceTimers()` (this member's too when it hosts classes), each by its own clock: the
   * timers due there run. Resolves to the reminders fired, over the silos.
   */
  async advanceTimers(opts: { timeoutMs?: number } = {}): Promise<number> {
    const timeoutMs = opts.timeoutMs ?? 60_000;
    const own =
      this.host.localMetrics && Object.keys(this.host.localMetrics()).length
        ? ((await this.host.localAdvanceTimers?.({ timeoutMs })) ?? 0)
        : 0;
    const got = await Promise.all(this.silos().map((s) => this.request(s.id, 'advanceTimers', timeoutMs, timeoutMs)));
    return got.reduce((n: number, x) => n + (typeof x === 'number' ? x : 0), own);
  }

  /**
   * The classes' figures summed over the silos (numbers added, nested figures too; a text the silos disagree on joined
   * by ',').
   */
  async classMetrics(timeoutMs = 10_000): Promise<Record<string, ClassMetrics>> {
    const out: Record<string, ClassMetrics> = {};
    for (const perClass of Object.values(await this.siloMetrics(timeoutMs))) {
      for (const [grain, m] of Object.entries(perClass)) out[grain] = sumInto(out[grain], m) as ClassMetrics;
    }
    return out;
  }

  /**
   * Resolves when everything sent into the cluster was processed: every silo's own kernels idle, nothing
   * parked or held, and as many message entries received as sent over all members, in two rounds in a row
   * with the same counts (four counters, as system.idle() does for kernels: a message in flight during the
   * first round is counted sent and not received there, so an unchanged second round leaves none in flight).
   * A silo that died with messages in flight leaves the counts apart: IdleTimeoutError after timeoutMs.
   */
  async idle(opts: { timeoutMs?: number } = {}): Promise<void> {
    const timeoutMs = opts.timeoutMs ?? 60_000;
    const until = performance.now() + timeoutMs;
    let prev: string | undefined;
    let why = 'no round yet';
    for (;;) {
      const left = Math.max(1, until - performance.now());
      const silos = this.silos();
      if (this.host.localMetrics && Object.keys(this.host.localMetrics()).length)
        await this.host.localIdle?.({ timeoutMs: left });
      const reports = [
        this.report(),
        ...((await Promise.all(silos.map((s) => this.request(s.id, 'idle', left, left)))) as IdleReport[]),
      ];
      let sent = 0;
      let received = 0;
      let waiting = 0;
      for (const r of reports) {
        sent += r.out;
        received += r.in;
        waiting += r.waiting;
      }
      const round = `${silos
        .map((s) => s.id)
        .sort()
        .join(',')}|${sent}|${received}`;
      if (waiting === 0 && sent === received && round === prev) return;
      prev = waiting === 0 && sent === received ? round : undefined;
      why = waiting
        ? `${waiting} messages wait for an owner or a handoff`
        : sent !== received
          ? `${sent - received} of ${sent} cluster messages in flight`
          : 'counts still moving';
      if (performance.now() >= until) throw new IdleTimeoutError(timeoutMs, [`cluster: ${why}`]);
      if (prev === undefined) await new Promise((r) => setTimeout(r, IDLE_RETRY_MS));
    }
  }
}

/** `b` added into `a` (a copy): numbers summed, objects by field, arrays by index, other values kept when equal. */
function sumInto(a: unknown, b: unknown): unknown {
  if (a === undefined) return b;
  if (typeof a === 'number' && typeof b === 'number') return a + b;
  if (Array.isArray(a) && Array.isArray(b))
    return Array.from({ length: Math.max(a.length, b.length) }, (_, i) => sumInto(a[i], b[i]));
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const out: Record<string, unknown> = { ...(a as Record<string, unknown>) };
    for (const [k, v] of Object.entries(b)) out[k] = sumInto(out[k], v);
    return out;
  }
  if (b === undefined || a === b) return a;
  return `${String(a)},${String(b)}`;
}
