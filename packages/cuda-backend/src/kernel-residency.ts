/**
 * A ring kernel's actor residency on the host side: the target its layouts are sized for, the access (residency.ts
 * on the kernel's driver calls, made on first use), and the pump that reads its load-request and evict rings
 * (load-pump.ts) while the kernel runs.
 */
import { scaledDefault, type KernelPlan } from '@ringgrain/core/backend';
import type { Abi } from '@ringgrain/codegen';
import type { DeviceSlot } from './device-slot.ts';
import type { CudaContext, DeviceBuffer } from './driver/index.ts';
import { LoadPump } from './load-pump.ts';
import { KernelResidency } from './residency-access.ts';
import type { ResidencyTarget } from './residency.ts';

export function residencyTarget(plan: KernelPlan, abi: Abi, partitions: number): ResidencyTarget {
  return {
    grain: plan.grain.name,
    stateSize: abi.stateSize,
    maxActors: plan.options.maxActors,
    partitions,
    idleMs: plan.persistence?.idleMs,
  };
}

export interface ResidencyOpen {
  readonly ctx: CudaContext;
  readonly slot: DeviceSlot;
  readonly plan: KernelPlan;
  readonly target: ResidencyTarget;
  readonly device: DeviceBuffer;
  /** Byte offset of the residency area in `device`. */
  readonly areaAt: number;
  /** The pinned host block: `offset` of `buffer`. */
  readonly buffer: ArrayBufferLike;
  readonly offset: number;
  readonly stopTimeoutMs: number;
  /** The kernel's fault, or why it is gone (a request then fails instead of waiting). */
  readonly fault: () => Error | undefined;
}

export function openResidency(o: ResidencyOpen): KernelResidency {
  const pools = { device: o.slot.deviceMemory, host: o.slot.stagingHost, running: () => o.slot.anyRunning() };
  const place = { device: o.device, areaAt: o.areaAt, buffer: o.buffer, offset: o.offset };
  // A request waits for every worker's walk of the directory (a deactivation of a million actors, hooks
  // included): bounded by a minute (times RINGGRAIN_TIMEOUT_SCALE via stopTimeoutMs's scale), or the stop timeout
  // if longer.
  const timeoutMs = Math.max(o.stopTimeoutMs, scaledDefault(60_000));
  return new KernelResidency(o.ctx, pools, o.target, place, o.plan.persistence!.host, o.fault, timeoutMs);
}

/**
 * Whether the kernel posts on the rings: a class that loads (keys), or one with idleMs (rows deactivated to make
 * room). `poll` reads both and says how many keys and rows it found.
 */
export function loadPump(plan: KernelPlan, poll: () => number): LoadPump | undefined {
  if (!plan.persistence?.load && plan.persistence?.idleMs === undefined) return undefined;
  return new LoadPump(poll, (e) => warnPoll(plan, e));
}

/** A poll of the rings that failed (the next one is tried as usual). */
export function warnPoll(plan: KernelPlan, e: unknown): void {
  const name = plan.grain.name;
  plan.logger.warn({ err: e, grain: name }, `${name}: reading the load-request ring failed: ${(e as Error).message}`);
}
