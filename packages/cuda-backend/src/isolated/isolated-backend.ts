/**
 * CUDA grains in a supervised GPU host process. A sticky GPU fault (illegal address, trap) poisons the
 * CUDA context for the rest of its process; measured on the H100, even a reset primary context cannot be
 * retained again. So the context lives in a child process: the rings are a shared mapping that this
 * process writes and the GPU polls (the same zero-copy path as CudaBackend, no IPC per message); launch,
 * terminate, health and the kernels' state access (readDirty, writeStates, deactivateIdle, and the kernel's load
 * and evicted reports: protocol.ts) cross the IPC channel (host-client.ts, isolated-kernel.ts). On a fault every
 * pending ask is rejected with GpuFaultError, the host process is killed, and the next launch starts a fresh one: a
 * new context.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { Backend, BackendKernel, GrainDef, KernelPlan, ProbeResult } from '@ringgrain/core/backend';
import { CudaBackend, type CudaBackendOptions, type LaunchInfo } from '../backend.ts';
import { CudaBackendOptionsError } from '../errors.ts';
import type { CreatedKernel, GrainRef, WirePlan } from './protocol.ts';
import { ARENA_FD, createShared } from './shm.ts';
import { GpuHost, type Request } from './host-client.ts';
import { IsolatedKernel } from './isolated-kernel.ts';
import { INTERNALS } from '../internals.ts';

const HOST_ENTRY = new URL('./gpu-host-entry.mjs', import.meta.url);

export interface IsolatedCudaBackendOptions extends Omit<CudaBackendOptions, 'hostMemory'> {
  /** Bytes of the shared mapping that holds every kernel's control block and rings (default 256 MiB). */
  readonly arenaBytes?: number;
  /** Most ms to wait for the GPU host to start, or to answer a launch or terminate (default 120000: a cold compile). */
  readonly hostTimeoutMs?: number;
  /** Let `@ringgrain/cuda-backend/testing` inject faults into the GPU host (tests only; default false: it refuses). */
  readonly faultInjection?: boolean;
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
  /** The GPU host's entry module (the package's tests start one over a stand-in backend: INTERNALS). */
  private hostEntry: URL = HOST_ENTRY;

  constructor(readonly options: IsolatedCudaBackendOptions = {}) {
    const { arenaBytes, hostTimeoutMs } = options;
    const bad = (detail: string) => new CudaBackendOptionsError(`IsolatedCudaBackend: ${detail}`);
    if (arenaBytes !== undefined && !(Number.isSafeInteger(arenaBytes) && arenaBytes > 0)) {
      throw bad(`arenaBytes must be a whole number of bytes > 0, got ${arenaBytes}`);
    }
    if (hostTimeoutMs !== undefined && !(hostTimeoutMs > 0)) {
      throw bad(`hostTimeoutMs must be a number of milliseconds > 0, got ${hostTimeoutMs}`);
    }
    // The application side maps one kernel's rings and timer block per class (IsolatedKernel): lane groups are
    // CudaBackend's only.
    const { devices } = options;
    if (devices !== undefined && (devices === 'all' || devices.length !== 1)) {
      const given = JSON.stringify(devices);
      throw bad(`runs a class on one GPU (give device, or devices of one entry), got devices ${given}`);
    }
  }

  async probe(): Promise<ProbeResult> {
    // CudaBackend's probe loads the driver and reads device attributes: no context in this process.
    const { device } = this.options;
    const p = await new CudaBackend(device === undefined ? {} : { device }).probe();
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
      child = fork(this.hostEntry, [], {
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
    const p = plan.persistence;
    // The persistence plan without its callbacks: the kernel's reports come back as frames (GpuHost.report). Its
    // laneLoad stays here (a reader and guard words in this process's memory); the CUDA kernel loads through the host.
    const wire: WirePlan = {
      grainId: plan.grainId,
      grain: ref(plan.grain),
      grains: plan.grains.map((g) => (g ? ref(g) : null)),
      options: plan.options,
      ...(plan.timers ? { timers: plan.timers } : {}),
      ...(p ? { persistence: { load: p.load, idleMs: p.idleMs ?? null } } : {}),
    };
    const id = this.nextKernelId++;
    if (p) host.stateHosts.set(id, { host: p.host, logger: plan.logger, grain: plan.grain.name });
    let created: CreatedKernel;
    try {
      created = (await host.request({ op: 'create', id, plan: wire })) as CreatedKernel;
    } catch (e) {
      host.stateHosts.delete(id);
      throw e;
    }
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
  [INTERNALS](): {
    request: (m: Request) => Promise<void>;
    hostPid: () => number | undefined;
    useHostEntry: (entry: URL) => void;
  } {
    return {
      request: async (m) => {
        await (await this.current()).request(m);
      },
      hostPid: () => this.host?.child.pid,
      // The next GPU host started runs `entry` (a host-loop.ts over a stand-in backend, in this package's tests).
      useHostEntry: (entry) => {
        this.hostEntry = entry;
      },
    };
  }
}
