/**
 * Messages between the application process (IsolatedCudaBackend) and its GPU host process (gpu-host.ts). Every
 * frame is checked on arrival (frames.ts); a malformed one is a GpuHostProtocolError, never a guess.
 */
import type { ActorKey, KernelOptions, TimerPlan } from '@ringgrain/core/backend';

/** A grain class named so another process can import it: its module URL and grain name. */
export interface GrainRef {
  readonly module: string;
  readonly name: string;
}

export interface WirePlan {
  readonly grainId: number;
  readonly grain: GrainRef;
  readonly grains: ReadonlyArray<GrainRef | null>;
  readonly options: KernelOptions;
  /** The plan's timers (the class declares some). */
  readonly timers?: TimerPlan;
  /**
   * The plan's persistence without its callbacks (core PersistencePlan): the GPU host's kernel reports loads and
   * deactivations as `load`, `evicted` and `laneLoaded` frames, which the application hands to the plan's host.
   */
  readonly persistence?: WirePersistence;
}

export interface WirePersistence {
  readonly load: boolean;
  /** The class's idleMs; null when it has none (a frame carries no undefined). */
  readonly idleMs: number | null;
}

/** A StateUpload (core backend.ts) as a frame carries it. */
export interface WireUpload {
  readonly keys: readonly ActorKey[];
  readonly bytes: Uint8Array;
  readonly stride: number;
  readonly found: Uint8Array;
  readonly mode: 'load' | 'preload';
  readonly failed?: { readonly keys: readonly ActorKey[]; readonly error: string; readonly failure?: number };
}

/** A StateBatch (readDirty's answer). */
export interface WireBatch {
  readonly keys: readonly ActorKey[];
  readonly bytes: Uint8Array;
  readonly stride: number;
}

/** EvictedStates: a batch with its dirty marks. */
export interface WireEvicted extends WireBatch {
  readonly dirty: Uint8Array;
}

/** An error crossing the process boundary: rebuilt on the other side as the same typed class where known. */
export interface WireError {
  readonly name: string;
  readonly code: string | undefined;
  readonly message: string;
  readonly hint: string | undefined;
  readonly stack: string | undefined;
}

export type ToHost =
  | { readonly op: 'create'; readonly req: number; readonly id: number; readonly plan: WirePlan }
  | { readonly op: 'start'; readonly req: number; readonly id: number }
  | { readonly op: 'dispose'; readonly req: number; readonly id: number }
  | { readonly op: 'inspect'; readonly req: number; readonly id: number; readonly key: number | string }
  | { readonly op: 'corruptRoute'; readonly req: number; readonly grainId: number }
  | { readonly op: 'readDirty'; readonly req: number; readonly id: number }
  | { readonly op: 'writeStates'; readonly req: number; readonly id: number; readonly upload: WireUpload }
  | {
      readonly op: 'deactivateIdle';
      readonly req: number;
      readonly id: number;
      readonly before: number;
      readonly now: number;
    }
  | { readonly op: 'shutdown'; readonly req: number };

/**
 * Unanswered: the application wrote messages for kernel `id` (core's wake). The GPU host's poll of that kernel's
 * load-request ring then runs on its next event-loop turns for a while (load-pump.ts kick) instead of on its idle
 * timer, so a first message's load is seen within an IPC hop. Sent at most once a WAKE_EVERY_MS per kernel.
 */
export interface WakeFrame {
  readonly op: 'wake';
  readonly id: number;
}

/** The least time between two wake frames of one kernel (the host's pump spins for 2 ms after each). */
export const WAKE_EVERY_MS = 1;

/** Where a kernel's regions are in the shared arena (absolute offsets), and how it was launched. */
export interface CreatedKernel {
  /** Per host lane: its control block, inbound ring and reply rings. */
  readonly lanes: ReadonlyArray<{
    readonly control: number;
    readonly inbound: number;
    readonly replies: readonly number[];
  }>;
  readonly launch: unknown;
  /** The timers' host block (timer-host.ts), absolute offset in the arena, where the plan had timers. */
  readonly timerHost?: number;
  /** Which state methods the kernel has (core BackendKernel): its proxy has the same, so core refuses what it lacks. */
  readonly state?: StateMethods;
}

export interface StateMethods {
  readonly readDirty: boolean;
  readonly writeStates: boolean;
  readonly deactivateIdle: boolean;
  /** The kernel's actors are deactivated before STOP, while it runs (core BackendKernel.deactivateBeforeStop). */
  readonly deactivateBeforeStop?: boolean;
}

export type FromHost =
  | { readonly op: 'ready'; readonly pid: number }
  | { readonly op: 'reply'; readonly req: number; readonly ok: true; readonly value: unknown }
  | { readonly op: 'reply'; readonly req: number; readonly ok: false; readonly error: WireError }
  | { readonly op: 'fault'; readonly id: number; readonly error: WireError }
  /*
   * The kernel's KernelStateHost calls, in the kernel's order on one channel: a request's reply comes after the
   * reports the kernel made before answering it (deactivateIdle's evicted rows, readDirty's drained evict ring).
   */
  | { readonly op: 'load'; readonly id: number; readonly keys: readonly ActorKey[] }
  | { readonly op: 'evicted'; readonly id: number; readonly batch: WireEvicted }
  | {
      readonly op: 'laneLoaded';
      readonly id: number;
      readonly keys: readonly ActorKey[];
      readonly versions: Float64Array;
    };

export function toWire(e: unknown): WireError {
  const err = e instanceof Error ? e : new Error(String(e));
  const x = err as Error & { code?: unknown; hint?: unknown };
  return {
    name: err.name,
    code: typeof x.code === 'string' ? x.code : undefined,
    message: err.message,
    hint: typeof x.hint === 'string' ? x.hint : undefined,
    stack: err.stack,
  };
}
