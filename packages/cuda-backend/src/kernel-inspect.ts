/**
 * Reads of a ring kernel's device memory off the message path (small copies on the device's setup stream): one
 * actor's state by its key (a walk of the directory), and the K2K overflow pool's counters.
 */
import {
  isReadyDirState,
  layoutOf,
  snapshot,
  viewAt,
  type KernelPlan,
  type OverflowStats,
} from '@ringgrain/core/backend';
import type { Abi } from '@ringgrain/codegen';
import type { DeviceSlot } from './device-slot.ts';
import type { DeviceBuffer } from './driver/index.ts';
import type { DeviceAt } from './kernel-layout.ts';

export interface KernelView {
  readonly slot: DeviceSlot;
  readonly device: DeviceBuffer;
  readonly at: DeviceAt;
  readonly abi: Abi;
  readonly plan: KernelPlan;
}

/** A plain copy of integer key `key`'s state, or undefined where no READY entry holds it. */
export function inspectState(v: KernelView, dirCapacity: number, key: number): unknown {
  const dirSchema = v.abi.schemas.DirEntry;
  const entry = layoutOf(dirSchema).size;
  const dir = v.slot.readDevice(v.device, v.at.directory, entry * dirCapacity);
  const lo = Number(BigInt.asUintN(32, BigInt(key)));
  const hi = Number(BigInt.asUintN(32, BigInt(key) >> 32n));
  for (let i = 0; i < dirCapacity; i++) {
    type Entry = { keyLo: number; keyHi: number; slot: number; state: number };
    const e = snapshot(dirSchema, dir.buffer, i * entry) as Entry;
    if (!isReadyDirState(e.state) || e.keyLo !== lo || e.keyHi !== hi) continue;
    const size = v.abi.stateSize;
    const bytes = v.slot.readDevice(v.device, v.at.states + e.slot * size, size);
    return snapshot(v.plan.grain.state, bytes.buffer, 0);
  }
  return undefined;
}

/** The overflow pool's counters (its first `partitions` nodes are the lists' stubs, not capacity). */
export function overflowStats(v: KernelView, overflowNodes: number, partitions: number): OverflowStats {
  const bytes = v.slot.readDevice(v.device, v.at.overflow, layoutOf(v.abi.schemas.OverflowHeader).size);
  const o = viewAt(v.abi.schemas.OverflowHeader, bytes.buffer, bytes.byteOffset) as Record<string, number>;
  return {
    capacity: overflowNodes - partitions,
    inUse: o['inUse']!,
    highWater: o['highWater']!,
    overflowed: o['overflowed']!,
    exhausted: o['exhausted']!,
  };
}
