/**
 * What the GPU host process does with each frame from its application (gpu-host.ts wires it to the process and a
 * CudaBackend; the proxy's tests wire it to a stand-in backend): kernels by the application's ids, their state
 * access (readDirty, writeStates, deactivateIdle) as requests, and the kernels' reports to their plan's
 * KernelStateHost (load, evicted, laneLoaded) as frames back, in the order the kernel made them.
 */
import {
  loadGrainClasses,
  type BackendKernel,
  type EvictedStates,
  type GrainDef,
  type KernelPlan,
  type KernelStateHost,
  type PersistencePlan,
} from '@ringgrain/core/backend';
import type { Logger } from 'pino';
import { GpuStateError } from '../errors.ts';
import { frameReq, readToHost } from './frames.ts';
import {
  toWire,
  type CreatedKernel,
  type FromHost,
  type GrainRef,
  type ToHost,
  type WakeFrame,
  type WireBatch,
} from './protocol.ts';
import { exitAfter } from './host-channel.ts';

/** The backend a GPU host serves (a CudaBackend there; a stand-in in tests). */
export interface HostBackend {
  /**
   * A kernel for `plan` (the application's kernel `id`), and where its regions lie in the shared arena (without
   * `state`: the loop fills that in).
   */
  createKernel(plan: KernelPlan, id: number): Promise<HostedKernel>;
  /** Fault injection (tests): only reached when the host was started with it on. */
  corruptRoute(grainId: number): Promise<void>;
  dispose(): Promise<void>;
}

export interface HostedKernel {
  readonly kernel: BackendKernel;
  readonly created: Omit<CreatedKernel, 'state'>;
}

export interface HostLoopOptions {
  readonly backend: HostBackend;
  /** A send that never throws (host-channel.ts channelSend). */
  readonly send: (m: FromHost) => void;
  readonly logger: Logger;
  readonly faultInjection: boolean;
  readonly exit: (code: number) => void;
  /** Imports a grain class by module and name (default: loadGrainClasses). */
  readonly resolve?: (ref: GrainRef) => Promise<GrainDef>;
}

/**
 * A StateBatch as a frame carries it. The channel's serialization writes a typed array's own bytes only (Node's
 * DefaultSerializer), so a view into a larger buffer crosses as its rows, not the whole buffer.
 */
export function wireBatch(b: WireBatch): WireBatch {
  return { keys: [...b.keys], bytes: b.bytes, stride: b.stride };
}

type StateMethod = 'readDirty' | 'writeStates' | 'deactivateIdle';

export class HostLoop {
  private readonly kernels = new Map<number, { readonly kernel: BackendKernel; readonly grain: string }>();
  private readonly reported = new Set<number>();
  private readonly defs = new Map<string, GrainDef>();

  constructor(private readonly o: HostLoopOptions) {}

  /** A frame from the application: checked, run, answered (a malformed one is answered with the typed error). */
  onMessage(raw: unknown): void {
    let m: ToHost | WakeFrame;
    try {
      m = readToHost(raw);
    } catch (e) {
      const req = frameReq(raw);
      if (req !== undefined) this.o.send({ op: 'reply', req, ok: false, error: toWire(e) });
      else this.o.logger.error({ err: e }, (e as Error).message);
      return;
    }
    if (m.op === 'wake') {
      this.kernels.get(m.id)?.kernel.wake(0);
      return;
    }
    const { req } = m;
    this.handle(m).then(
      (value) => this.o.send({ op: 'reply', req, ok: true, value }),
      (e: unknown) => this.o.send({ op: 'reply', req, ok: false, error: toWire(e) }),
    );
  }

  /** The application went away: tear down (bounded) and exit. */
  onDisconnect(): void {
    exitAfter(() => this.o.backend.dispose(), this.o.exit);
  }

  /** Health off the hot path, as core's sweep does in-process: a fault is reported once per kernel. */
  checkFaults(): void {
    for (const [id, { kernel }] of this.kernels) {
      if (this.reported.has(id)) continue;
      const fault = kernel.health().fault;
      if (fault) {
        this.reported.add(id);
        this.o.send({ op: 'fault', id, error: toWire(fault) });
      }
    }
  }

  private async resolve(ref: GrainRef): Promise<GrainDef> {
    if (this.o.resolve) return this.o.resolve(ref);
    const key = `${ref.module}#${ref.name}`;
    const hit = this.defs.get(key);
    if (hit) return hit;
    // The module may also be a whole program (grain and system in one file): loadGrainClasses keeps its
    // system from starting here and takes the class it registered.
    const [cls] = await loadGrainClasses(ref.module, { names: [ref.name] });
    const def = cls?.grain as GrainDef | undefined;
    if (def?.name === ref.name) {
      this.defs.set(key, def);
      return def;
    }
    throw new Error(`gpu-host: no exported grain class "${ref.name}" in ${ref.module}`);
  }

  /** The plan's persistence, its reports sent to the application as frames tagged with the kernel's id. */
  private persistence(id: number, p: { readonly load: boolean; readonly idleMs: number | null }): PersistencePlan {
    const { send } = this.o;
    const host: KernelStateHost = {
      load: (keys) => send({ op: 'load', id, keys: [...keys] }),
      evicted: (b: EvictedStates) => send({ op: 'evicted', id, batch: { ...wireBatch(b), dirty: b.dirty } }),
      laneLoaded: (keys, versions) => {
        send({ op: 'laneLoaded', id, keys: [...keys], versions: Float64Array.from(versions) });
      },
    };
    // No laneLoad: its reader and guard words live in the application's memory (the CUDA kernel loads through
    // the host).
    return { load: p.load, idleMs: p.idleMs ?? undefined, host };
  }

  /** The kernel `id` with state method `what`, or a typed error (a kernel gone, or one without state access). */
  private stateKernel<K extends StateMethod>(id: number, what: K): NonNullable<BackendKernel[K]> {
    const k = this.kernels.get(id);
    const f = k?.kernel[what];
    if (!k || !f) {
      const why = k
        ? `its kernel has no ${what} (the plan had no persistence, or its module no residency)`
        : `no kernel ${id} in this GPU host (disposed)`;
      throw new GpuStateError(k?.grain ?? `#${id}`, 'GPU_STATE_UNAVAILABLE', why);
    }
    return f as NonNullable<BackendKernel[K]>;
  }

  private async handle(m: ToHost): Promise<unknown> {
    switch (m.op) {
      case 'create': {
        const p = m.plan;
        const grains = await Promise.all(p.grains.map((g) => (g ? this.resolve(g) : Promise.resolve(undefined))));
        const plan: KernelPlan = {
          grainId: p.grainId,
          grain: await this.resolve(p.grain),
          grains,
          options: p.options,
          logger: this.o.logger,
          ...(p.timers ? { timers: p.timers } : {}),
          ...(p.persistence ? { persistence: this.persistence(m.id, p.persistence) } : {}),
        };
        const { kernel, created } = await this.o.backend.createKernel(plan, m.id);
        this.kernels.set(m.id, { kernel, grain: plan.grain.name });
        const state = {
          readDirty: !!kernel.readDirty,
          writeStates: !!kernel.writeStates,
          deactivateIdle: !!kernel.deactivateIdle,
          deactivateBeforeStop: kernel.deactivateBeforeStop === true,
        };
        return { ...created, state } satisfies CreatedKernel;
      }
      case 'start':
        return this.kernels.get(m.id)?.kernel.start();
      case 'dispose': {
        const k = this.kernels.get(m.id);
        this.kernels.delete(m.id);
        return k?.kernel.dispose();
      }
      case 'inspect':
        return this.kernels.get(m.id)?.kernel.inspect?.(m.key);
      case 'readDirty':
        return wireBatch(await this.stateKernel(m.id, 'readDirty')());
      case 'writeStates':
        return this.stateKernel(m.id, 'writeStates')(m.upload);
      case 'deactivateIdle':
        return this.stateKernel(m.id, 'deactivateIdle')(m.before, m.now);
      case 'corruptRoute':
        // Fault injection, only in a host started for it (IsolatedCudaBackend({ faultInjection: true })).
        if (!this.o.faultInjection) {
          throw new Error(
            'fault injection is off in this GPU host: construct IsolatedCudaBackend({ faultInjection: true }) ' +
              'in the test that injects faults',
          );
        }
        return this.o.backend.corruptRoute(m.grainId);
      case 'shutdown':
        await this.o.backend.dispose();
        setImmediate(() => this.o.exit(0));
        return undefined;
    }
  }
}
