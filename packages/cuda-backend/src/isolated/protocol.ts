/** Messages between the application process (IsolatedCudaBackend) and its GPU host process (gpu-host.ts). */
import type { KernelOptions, TimerPlan } from '@ringgrain/core/backend';

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
  | { readonly op: 'shutdown'; readonly req: number };

/** Where a kernel's regions are in the shared arena (absolute offsets), and how it was launched. */
export interface CreatedKernel {
  /** Per host lane: its control block, inbound ring and reply rings. */
  readonly lanes: ReadonlyArray<{ readonly control: number; readonly inbound: number; readonly replies: readonly number[] }>;
  readonly launch: unknown;
  /** The timers' host block (timer-host.ts), absolute offset in the arena, where the plan had timers. */
  readonly timerHost?: number;
}

export type FromHost =
  | { readonly op: 'ready'; readonly pid: number }
  | { readonly op: 'reply'; readonly req: number; readonly ok: true; readonly value: unknown }
  | { readonly op: 'reply'; readonly req: number; readonly ok: false; readonly error: WireError }
  | { readonly op: 'fault'; readonly id: number; readonly error: WireError };

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
