/**
 * The application's end of the channel to one GPU host process (isolated-backend.ts starts it): requests and their
 * answers, the kernels' reports to their plans' KernelStateHost (load, evicted, laneLoaded), faults, and the host's
 * end: a fault, an exit or a malformed frame stops it, and every kernel on it faults.
 */
import type { ChildProcess } from 'node:child_process';
import type { KernelStateHost } from '@ringgrain/core/backend';
import type { Logger } from 'pino';
import { GpuFaultError, GpuStateError, type GpuFaultCode, type GpuStateCode } from '../errors.ts';
import { GpuHostError, GpuHostProtocolError } from './errors.ts';
import { readFromHost } from './frames.ts';
import type { FromHost, ToHost, WakeFrame, WireError } from './protocol.ts';
import type { SharedMapping } from './shm.ts';

/** A message to the host without its request number (each variant of ToHost). */
export type Request = ToHost extends infer T ? (T extends unknown ? Omit<T, 'req'> : never) : never;

/** What the host needs of a kernel's application-side view (isolated-kernel.ts). */
export interface HostedKernelView {
  readonly grain: string;
  fault: Error | undefined;
  dispose(): Promise<void>;
}

/** Where a kernel's reports go: its plan's persistence host. */
export interface StateReports {
  readonly host: KernelStateHost;
  readonly logger: Logger;
  readonly grain: string;
}

type Report = Extract<FromHost, { op: 'load' | 'evicted' | 'laneLoaded' }>;

/** A GPU host process and the mapping it shares with this process. */
export class GpuHost {
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  /** The kernel each pending request is about (its errors are rebuilt naming the kernel's grain). */
  private readonly asked = new Map<number, number>();
  private nextReq = 1;
  readonly kernels = new Map<number, HostedKernelView>();
  /** Where each kernel's reports go, from createKernel until its dispose is answered. */
  readonly stateHosts = new Map<number, StateReports>();
  /** Why this host can run nothing more (a fault, an exit); kernels already on it report it as their fault. */
  dead: Error | undefined;
  private readonly ready: Promise<void>;

  constructor(
    readonly child: ChildProcess,
    readonly mapping: SharedMapping,
    private readonly timeoutMs: number,
  ) {
    let ok!: () => void;
    let fail!: (e: Error) => void;
    this.ready = new Promise<void>((res, rej) => {
      ok = res;
      fail = rej;
    });
    child.on('message', (raw) => {
      let m: FromHost;
      try {
        m = readFromHost(raw);
      } catch (e) {
        this.broken(e as Error);
        return;
      }
      if (m.op === 'ready') {
        ok();
      } else if (m.op === 'reply') {
        const p = this.pending.get(m.req);
        if (!p) return;
        this.pending.delete(m.req);
        if (m.ok) p.resolve(m.value);
        else p.reject(fromWire(m.error, this.kernels.get(this.asked.get(m.req) ?? -1)?.grain));
        this.asked.delete(m.req);
      } else if (m.op === 'fault') {
        this.poison(fromWire(m.error, this.kernels.get(m.id)?.grain), m.id);
      } else {
        this.report(m);
      }
    });
    child.on('exit', (code, signal) => {
      const how = signal ?? `code ${code}`;
      const e = new GpuFaultError('*', 'GPU_HOST_EXITED', `the GPU host process ${child.pid} exited (${how})`, {
        hint: 'the next launch starts a new GPU host; see its stderr for why it ended',
      });
      fail(e);
      this.poison(e);
      for (const p of this.pending.values()) p.reject(e);
      this.pending.clear();
      this.maybeUnmap();
    });
  }

  async whenReady(): Promise<void> {
    await withTimeout(this.ready, this.timeoutMs, 'the GPU host to start');
  }

  request(m: Request, timeoutMs = this.timeoutMs): Promise<unknown> {
    if (this.dead) return Promise.reject(this.dead);
    const req = this.nextReq++;
    if ('id' in m) this.asked.set(req, m.id);
    return withTimeout(
      new Promise((resolve, reject) => {
        this.pending.set(req, { resolve, reject });
        this.child.send({ ...m, req } as ToHost);
      }),
      timeoutMs,
      `the GPU host to answer ${m.op}`,
    ).finally(() => this.asked.delete(req));
  }

  /** An unanswered frame (a wake): dropped once the host is gone or its channel closed (it would wake nothing). */
  notify(m: WakeFrame): void {
    if (this.dead || !this.child.connected) return;
    this.child.send(m, () => undefined);
  }

  /**
   * A kernel's report to its plan's KernelStateHost, in the order the kernel made it. One for a kernel this host
   * never had (or already disposed) is a protocol error: rows of actors' states must not go nowhere.
   */
  private report(m: Report): void {
    const to = this.stateHosts.get(m.id);
    if (!to) {
      const why = `no kernel ${m.id} with persistence here (disposed, or never created)`;
      this.broken(new GpuHostProtocolError('from the GPU host', m.op, why));
      return;
    }
    try {
      if (m.op === 'load') to.host.load(m.keys);
      else if (m.op === 'evicted') to.host.evicted(m.batch);
      else to.host.laneLoaded(m.keys, m.versions);
    } catch (e) {
      // As CudaBackend's poll of the rings does with a throwing callback (kernel-residency.ts warnPoll).
      const line = `${to.grain}: handling the kernel's ${m.op} report failed: ${(e as Error).message}`;
      to.logger.warn({ err: e, grain: to.grain }, line);
    }
  }

  /**
   * A frame that failed its check (frames.ts): every pending request fails with the error, and the host is
   * stopped (its kernels fault with it): the frame may have carried actors' states, so nothing on this channel is
   * trusted any more.
   */
  broken(e: Error): void {
    for (const p of this.pending.values()) p.reject(e);
    this.pending.clear();
    this.asked.clear();
    this.poison(e);
  }

  /**
   * A fault poisons the whole context: every kernel on this host is faulted, the process is killed
   * (the driver frees its GPU memory), and this host takes nothing more.
   */
  poison(e: Error, faultedId?: number): void {
    if (this.dead) return;
    this.dead = e;
    for (const [id, k] of this.kernels) {
      const first = e.message.split('\n')[0];
      k.fault ??=
        id === faultedId || faultedId === undefined
          ? e
          : new GpuFaultError(k.grain, 'GPU_FAULT', `another ring kernel in the same CUDA context faulted (${first})`, {
              cause: e,
              hint: 'relaunch the grains: the next launch starts a new GPU host',
            });
    }
    this.child.kill('SIGKILL');
  }

  /** The mapping goes once the host has exited and no kernel view of it remains. */
  maybeUnmap(): void {
    const exited = this.child.exitCode !== null || this.child.signalCode !== null;
    if (this.dead && exited && this.kernels.size === 0) this.mapping.unmap();
  }
}

export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      t = setTimeout(() => reject(new GpuHostError(`timed out after ${ms} ms waiting for ${what}`)), ms);
      t.unref();
    }),
  ]).finally(() => clearTimeout(t));
}

const STATE_CODES: ReadonlySet<string> = new Set<GpuStateCode>([
  'GPU_STATE_STRING_KEYS',
  'GPU_STATE_UNAVAILABLE',
  'GPU_STATE_GATHER',
  'GPU_STATE_BAD_UPLOAD',
]);

/**
 * Rebuilds a typed error from the host process: GpuFaultError and GpuStateError keep their class and code (a
 * flush or load that failed in the GPU host fails here as it would in-process); the rest keep name, code and hint.
 */
export function fromWire(w: WireError, grain = '*'): Error {
  const detail = w.message.split('\n  hint:')[0] ?? w.message;
  let e: Error;
  if (w.name === 'GpuFaultError') {
    const code = (w.code as GpuFaultCode | undefined) ?? 'GPU_FAULT';
    e = new GpuFaultError(grain, code, detail, w.hint ? { hint: w.hint } : {});
  } else if (w.name === 'GpuStateError' && w.code !== undefined && STATE_CODES.has(w.code)) {
    // Its message already names the grain (GpuStateError's own prefix).
    const named = `grain "${grain}": `;
    const own = detail.startsWith(named) ? detail.slice(named.length) : detail;
    e = new GpuStateError(grain, w.code as GpuStateCode, own);
  } else {
    e = new GpuHostError(w.message, w.code, w.name);
  }
  if (w.stack) {
    e.stack = `${e.name}: ${w.message}\n    (in the GPU host process)\n${w.stack.split('\n').slice(1).join('\n')}`;
  }
  return e;
}
