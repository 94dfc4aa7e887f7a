/**
 * The application-side view of a ring kernel in the GPU host: its rings and timer block are the shared mapping
 * (read and written here, no IPC per message); start, dispose, inspect and the state access are requests on the
 * host's channel (host-client.ts).
 */
import type {
  BackendKernel,
  KernelHealth,
  KernelMemory,
  StateBatch,
  StateUpload,
  TimerPlan,
  TimerStats,
} from '@ringgrain/core/backend';
import { GpuHostProtocolError } from './errors.ts';
import { readBatch } from './frames.ts';
import type { GpuHost, Request } from './host-client.ts';
import { wireBatch } from './host-loop.ts';
import { WAKE_EVERY_MS, type CreatedKernel, type WireUpload } from './protocol.ts';
import { TimerHost } from '../timer-host.ts';

/** A StateUpload as a frame carries it (no undefined fields). */
function wireUpload(u: StateUpload): WireUpload {
  const f = u.failed;
  const failed = f && { keys: [...f.keys], error: f.error, ...(f.failure === undefined ? {} : { failure: f.failure }) };
  return { ...wireBatch(u), found: u.found, mode: u.mode, ...(failed ? { failed } : {}) };
}

/** deactivateIdle's answer: how many actors. */
function count(v: unknown): number {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
  const why = `the value must be a count of actors, got ${JSON.stringify(v)}`;
  throw new GpuHostProtocolError('from the GPU host', 'reply deactivateIdle', why);
}

export class IsolatedKernel implements BackendKernel {
  readonly memory: KernelMemory;
  fault: Error | undefined;
  private disposed = false;
  /** Whether the GPU host's kernel reads a load-request ring (it has writeStates), and when it was last woken. */
  private readonly loads: boolean;
  private wokenAt = Number.NEGATIVE_INFINITY;

  /**
   * State access (core BackendKernel), present where the GPU host's kernel has it: each a request on the channel,
   * answered after the reports the kernel made before answering (host-loop.ts), as in-process.
   */
  readonly readDirty: (() => Promise<StateBatch>) | undefined;
  readonly writeStates: ((upload: StateUpload) => Promise<void>) | undefined;
  readonly deactivateIdle: ((before: number, now: number) => Promise<number>) | undefined;
  /** As the GPU host's kernel (kernel.ts deactivateBeforeStop): its actors deactivated before STOP. */
  readonly deactivateBeforeStop: boolean;

  timerStats?: (() => TimerStats) | undefined;
  publishTime?: ((now: number) => void) | undefined;
  timersCaughtUp?: (() => boolean) | undefined;

  constructor(
    readonly id: number,
    private readonly host: GpuHost,
    readonly grain: string,
    created: CreatedKernel,
    timers?: TimerPlan,
  ) {
    const s = created.state;
    this.loads = s?.writeStates === true;
    this.deactivateBeforeStop = s?.deactivateBeforeStop === true;
    if (s?.readDirty) this.readDirty = () => this.stateRequest({ op: 'readDirty', id }, readBatch);
    if (s?.writeStates) {
      this.writeStates = async (u) => void (await this.host.request({ op: 'writeStates', id, upload: wireUpload(u) }));
    }
    if (s?.deactivateIdle) {
      this.deactivateIdle = (before, now) => this.stateRequest({ op: 'deactivateIdle', id, before, now }, count);
    }
    const buffer = host.mapping.buffer;
    this.memory = {
      lanes: created.lanes.map((l) => ({
        control: { buffer, offset: l.control },
        inbound: { buffer, offset: l.inbound },
        replies: l.replies.map((offset) => ({ buffer, offset })),
      })),
    };
    // Timers: the block lies in the shared mapping too, so figures, publications and the caught-up epoch
    // are read and written here directly (no IPC per call); the GPU host initialises it at the launch.
    if (timers && created.timerHost !== undefined) {
      const th = new TimerHost(buffer, created.timerHost, timers);
      this.timerStats = () => th.stats();
      this.publishTime = (now) => th.publish(now);
      this.timersCaughtUp = () => th.caughtUp();
    }
  }

  async start(): Promise<void> {
    await this.host.request({ op: 'start', id: this.id });
  }

  /**
   * A state request whose answer is checked by `read`: a malformed one stops the host (GpuHostProtocolError), as a
   * malformed frame does: a readDirty's rows had their dirty marks cleared, so they must not be half read.
   */
  private async stateRequest<T>(m: Request, read: (v: unknown) => T): Promise<T> {
    const v = await this.host.request(m);
    try {
      return read(v);
    } catch (e) {
      this.host.broken(e as Error);
      throw e;
    }
  }

  wake(): void {
    // The GPU polls the inbound ring and control block. A kernel that loads may post a key soon after a message
    // (its actor absent): the GPU host's poll of the load ring is told to run now (protocol.ts WakeFrame).
    if (!this.loads || this.disposed) return;
    const now = performance.now();
    if (now - this.wokenAt < WAKE_EVERY_MS) return;
    this.wokenAt = now;
    this.host.notify({ op: 'wake', id: this.id });
  }

  health(): KernelHealth {
    return { fault: this.fault ?? (this.host.dead && !this.disposed ? this.host.dead : undefined) };
  }

  async inspect(key: number | string): Promise<unknown> {
    if (this.host.dead) return undefined;
    return this.host.request({ op: 'inspect', id: this.id, key });
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    try {
      if (!this.host.dead) await this.host.request({ op: 'dispose', id: this.id });
    } finally {
      this.host.kernels.delete(this.id);
      this.host.stateHosts.delete(this.id);
      this.host.maybeUnmap();
    }
  }
}
