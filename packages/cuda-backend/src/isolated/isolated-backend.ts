/**
 * CUDA grains in a supervised GPU host process. A sticky GPU fault (illegal address, trap) poisons the
 * CUDA context for the rest of its process; measured on the H100, even a reset primary context cannot be
 * retained again. So the context lives in a child process: the rings are a shared mapping that this
 * process writes and the GPU polls (the same zero-copy path as CudaBackend, no IPC per message); only
 * launch, terminate and health cross the IPC channel. On a fault every pending ask is rejected with
 * GpuFaultError, the host process is killed, and the next launch starts a fresh one: a new context.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type {
  Backend,
  BackendKernel,
  GrainDef,
  KernelHealth,
  KernelMemory,
  KernelPlan,
  ProbeResult,
  TimerPlan,
  TimerStats,
} from '@ringgrain/core/backend';
import { CudaBackend, type CudaBackendOptions, type LaunchInfo } from '../backend.ts';
import { CudaBackendOptionsError, GpuFaultError, type GpuFaultCode } from '../errors.ts';
import type { CreatedKernel, FromHost, GrainRef, ToHost, WireError } from './protocol.ts';
import { ARENA_FD, createShared, type SharedMapping } from './shm.ts';
import { GpuHostError } from './errors.ts';
import { INTERNALS } from '../internals.ts';
import { TimerHost } from '../timer-host.ts';

const HOST_ENTRY = new URL('./gpu-host-entry.mjs', import.meta.url);
/** A message to the host without its request number (each variant of ToHost). */
type Request = ToHost extends infer T ? (T extends unknown ? Omit<T, 'req'> : never) : never;

export interface IsolatedCudaBackendOptions extends Omit<CudaBackendOptions, 'hostMemory'> {
  /** Bytes of the shared mapping that holds every kernel's control block and rings (default 256 MiB). */
  readonly arenaBytes?: number;
  /** Most ms to wait for the GPU host to start, or to answer a launch or terminate (default 120000: a cold compile). */
  readonly hostTimeoutMs?: number;
  /** Let `@ringgrain/cuda-backend/testing` inject faults into the GPU host (tests only; default false: it refuses). */
  readonly faultInjection?: boolean;
}

/** A GPU host process and the mapping it shares with this process. */
class GpuHost {
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private nextReq = 1;
  readonly kernels = new Map<number, IsolatedKernel>();
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
      const m = raw as FromHost;
      if (m.op === 'ready') {
        ok();
      } else if (m.op === 'reply') {
        const p = this.pending.get(m.req);
        if (!p) return;
        this.pending.delete(m.req);
        if (m.ok) p.resolve(m.value);
        else p.reject(fromWire(m.error));
      } else if (m.op === 'fault') {
        this.poison(fromWire(m.error, this.kernels.get(m.id)?.grain), m.id);
      }
    });
    child.on('exit', (code, signal) => {
      const e = new GpuFaultError('*', 'GPU_HOST_EXITED', `the GPU host process ${child.pid} exited (${signal ?? `code ${code}`})`, {
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
    return withTimeout(
      new Promise((resolve, reject) => {
        this.pending.set(req, { resolve, reject });
        this.child.send({ ...m, req } as ToHost);
      }),
      timeoutMs,
      `the GPU host to answer ${m.op}`,
    );
  }

  /**
   * A fault poisons the whole context: every kernel on this host is faulted, the process is killed
   * (the driver frees its GPU memory), and this host takes nothing more.
   */
  poison(e: Error, faultedId?: number): void {
    if (this.dead) return;
    this.dead = e;
    for (const [id, k] of this.kernels) {
      k.fault ??=
        id === faultedId || faultedId === undefined
          ? e
          : new GpuFaultError(k.grain, 'GPU_FAULT', `another ring kernel in the same CUDA context faulted (${e.message.split('\n')[0]})`, { cause: e, hint: 'relaunch the grains: the next launch starts a new GPU host' });
    }
    this.child.kill('SIGKILL');
  }

  /** The mapping goes once the host has exited and no kernel view of it remains. */
  maybeUnmap(): void {
    const exited = this.child.exitCode !== null || this.child.signalCode !== null;
    if (this.dead && exited && this.kernels.size === 0) this.mapping.unmap();
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      t = setTimeout(() => reject(new GpuHostError(`timed out after ${ms} ms waiting for ${what}`)), ms);
      t.unref();
    }),
  ]).finally(() => clearTimeout(t));
}

/** Rebuilds a typed error from the host process (GpuFaultError keeps its class; the rest keep name, code and hint). */
function fromWire(w: WireError, grain = '*'): Error {
  const e = w.name === 'GpuFaultError' ? new GpuFaultError(grain, (w.code as GpuFaultCode | undefined) ?? 'GPU_FAULT', w.message.split('\n  hint:')[0] ?? w.message, w.hint ? { hint: w.hint } : {}) : new GpuHostError(w.message, w.code, w.name);
  if (w.stack) e.stack = `${e.name}: ${w.message}\n    (in the GPU host process)\n${w.stack.split('\n').slice(1).join('\n')}`;
  return e;
}

/** The application-side view of a ring kernel in the GPU host: memory is the shared mapping, the rest is IPC. */
class IsolatedKernel implements BackendKernel {
  readonly memory: KernelMemory;
  fault: Error | undefined;
  private disposed = false;

  constructor(
    readonly id: number,
    private readonly host: GpuHost,
    readonly grain: string,
    created: CreatedKernel,
    timers?: TimerPlan,
  ) {
    const buffer = host.mapping.buffer;
    this.memory = { lanes: created.lanes.map((l) => ({ control: { buffer, offset: l.control }, inbound: { buffer, offset: l.inbound }, replies: l.replies.map((offset) => ({ buffer, offset })) })) };
    // Timers: the block lies in the shared mapping too, so figures, publications and the caught-up epoch
    // are read and written here directly (no IPC per call); the GPU host initialises it at the launch.
    if (timers && created.timerHost !== undefined) {
      const th = new TimerHost(buffer, created.timerHost, timers);
      this.timerStats = () => th.stats();
      this.publishTime = (now) => th.publish(now);
      this.timersCaughtUp = () => th.caughtUp();
    }
  }

  timerStats?: (() => TimerStats) | undefined;
  publishTime?: ((now: number) => void) | undefined;
  timersCaughtUp?: (() => boolean) | undefined;

  async start(): Promise<void> {
    await this.host.request({ op: 'start', id: this.id });
  }

  wake(): void {
    // The GPU polls the inbound ring and control block: nothing to wake.
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
      this.host.maybeUnmap();
    }
  }
}

export class IsolatedCudaBackend implements Backend {
  readonly name = 'cuda';
  /** placement 'auto' tries a GPU before backends of rank 0 (the CPU). */
  readonly autoRank = 10;
  private host: GpuHost | undefined;
  /** Kernel ids: the GPU host keys its kernels by them (unique across hosts). */
  private nextKernelId = 1;
  /** GPU host processes started so far (1 + one per recovery from a fault). */
  hostsStarted = 0;
  /** Launch facts reported by the GPU hosts. */
  readonly launches: LaunchInfo[] = [];

  constructor(readonly options: IsolatedCudaBackendOptions = {}) {
    const { arenaBytes, hostTimeoutMs } = options;
    if (arenaBytes !== undefined && !(Number.isSafeInteger(arenaBytes) && arenaBytes > 0)) throw new CudaBackendOptionsError(`IsolatedCudaBackend: arenaBytes must be a whole number of bytes > 0, got ${arenaBytes}`);
    if (hostTimeoutMs !== undefined && !(hostTimeoutMs > 0)) throw new CudaBackendOptionsError(`IsolatedCudaBackend: hostTimeoutMs must be a number of milliseconds > 0, got ${hostTimeoutMs}`);
    // The application side maps one kernel's rings and timer block per class (KernelProxy): lane groups are CudaBackend's only.
    const { devices } = options;
    if (devices !== undefined && (devices === 'all' || devices.length !== 1)) throw new CudaBackendOptionsError(`IsolatedCudaBackend: runs a class on one GPU (give device, or devices of one entry), got devices ${JSON.stringify(devices)}`);
  }

  async probe(): Promise<ProbeResult> {
    // CudaBackend's probe loads the driver and reads device attributes: no context in this process.
    const p = await new CudaBackend({ ...(this.options.device === undefined ? {} : { device: this.options.device }) }).probe();
    return p.ok ? { ...p, device: `${p.device}, in a GPU host process` } : p;
  }

  /** The live GPU host, started (or restarted after a fault) on demand. */
  private async current(): Promise<GpuHost> {
    if (this.host && !this.host.dead) return this.host;
    const { arenaBytes = 256 << 20, hostTimeoutMs = 120_000, faultInjection = false, ...cuda } = this.options;
    const mapping = createShared(Math.ceil(arenaBytes / 4096) * 4096);
    let child: ChildProcess;
    try {
      // The file has no name (createShared unlinked it): the host inherits its descriptor as fd 4 and maps that.
      child = fork(HOST_ENTRY, [], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc', mapping.fd],
        serialization: 'advanced',
        env: {
          ...process.env,
          RINGGRAIN_ARENA_FD: String(ARENA_FD),
          RINGGRAIN_ARENA_BYTES: String(mapping.bytes),
          RINGGRAIN_CUDA_OPTIONS: JSON.stringify(cuda),
          RINGGRAIN_FAULT_INJECTION: faultInjection ? '1' : '0',
        },
      });
    } catch (e) {
      mapping.closeFd();
      mapping.unmap();
      throw e;
    } finally {
      mapping.closeFd(); // the child holds its own copy
    }
    const host = new GpuHost(child, mapping, hostTimeoutMs);
    this.host = host;
    this.hostsStarted++;
    try {
      await host.whenReady();
    } catch (e) {
      host.poison(e as Error);
      throw e;
    }
    return host;
  }

  async createKernel(plan: KernelPlan): Promise<BackendKernel> {
    const host = await this.current();
    const ref = (g: GrainDef): GrainRef => ({ module: g.module, name: g.name });
    const wire = { grainId: plan.grainId, grain: ref(plan.grain), grains: plan.grains.map((g) => (g ? ref(g) : null)), options: plan.options, ...(plan.timers ? { timers: plan.timers } : {}) };
    const id = this.nextKernelId++;
    const created = (await host.request({ op: 'create', id, plan: wire })) as CreatedKernel;
    const k = new IsolatedKernel(id, host, plan.grain.name, created, plan.timers);
    host.kernels.set(id, k);
    if (created.launch) this.launches.push(created.launch as LaunchInfo);
    return k;
  }

  async dispose(): Promise<void> {
    const host = this.host;
    this.host = undefined;
    if (!host || host.dead) return;
    for (const k of [...host.kernels.values()]) await k.dispose();
    await host.request({ op: 'shutdown' }, 10_000).catch(() => undefined);
    host.child.kill('SIGKILL');
  }

  /** The package's own tools (fault injection) reach the GPU host through this. */
  [INTERNALS](): { request: (m: Request) => Promise<void>; hostPid: () => number | undefined } {
    return {
      request: async (m) => {
        await (await this.current()).request(m);
      },
      hostPid: () => this.host?.child.pid,
    };
  }
}
