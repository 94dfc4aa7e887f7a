/**
 * One grain class over several lane groups (CudaBackend `devices`: one group per listed GPU, an ordinal may
 * repeat). Each group is a ring kernel of its own (kernel.ts) with its partitions, queues, overflow pool,
 * states and host rings; this facade is what core sees: the groups' lanes end to end, so core's laneOfKey
 * over all of them sends a key's messages to its group's lanes, and the K2K senders on the GPUs pick the
 * same group (runtime/lanes.cuh). Counters add up through the lanes (each group's lane 0 publishes its
 * own); the rest (health, overflow, state access, timers, memory) is gathered here.
 */
import {
  laneOfKey,
  type ActorKey,
  type BackendKernel,
  type DeviceMemoryStats,
  type KernelHealth,
  type KernelMemory,
  type OverflowStats,
  type StateBatch,
  type StateUpload,
  type TimerStats,
} from '@ringgrain/core/backend';
import { GpuFaultError } from './errors.ts';

/** What the facade needs of a group's kernel (CudaKernel; tests give fakes). */
export interface GroupKernel extends BackendKernel {
  /** The GPU (device ordinal) the group runs on. */
  readonly ordinal: number;
  /** Bytes of the group's device allocation (queues, states, directory, pools, ...). */
  readonly deviceBytes: number;
}

/** Device memory a class holds on one GPU (core DeviceMemoryStats: ClassMetrics.devices). */
export type GroupMemory = DeviceMemoryStats;

/**
 * The lane group that holds `key`: its lane over every group's lanes, divided by the lanes a group has
 * (runtime/lanes.cuh).
 */
export function groupOfKey(key: ActorKey, groups: number, lanesPerGroup: number): number {
  return Math.floor(laneOfKey(key, groups * lanesPerGroup) / lanesPerGroup);
}

export class LaneGroupKernel implements BackendKernel {
  readonly memory: KernelMemory;
  private fault: Error | undefined;
  readonly readDirty: (() => Promise<StateBatch>) | undefined;
  readonly writeStates: ((upload: StateUpload) => Promise<void>) | undefined;
  readonly deactivateIdle: ((before: number, now: number) => Promise<number>) | undefined;
  /** As each group's kernel (kernel.ts deactivateBeforeStop). */
  readonly deactivateBeforeStop: boolean;
  readonly timerStats: (() => TimerStats) | undefined;
  readonly publishTime: ((now: number) => void) | undefined;
  readonly timersCaughtUp: (() => boolean) | undefined;

  constructor(
    readonly grain: string,
    readonly groups: readonly GroupKernel[],
    private readonly lanesPerGroup: number,
  ) {
    for (const g of groups) {
      if (g.memory.lanes.length !== lanesPerGroup)
        throw new Error(
          `cuda-backend: lane group of ${grain} has ${g.memory.lanes.length} lanes, not ${lanesPerGroup}`,
        );
    }
    this.memory = { lanes: groups.flatMap((g) => g.memory.lanes) };
    const first = groups[0]!;
    this.readDirty = first.readDirty ? () => this.gather() : undefined;
    this.writeStates = first.writeStates ? (u) => this.upload(u) : undefined;
    this.deactivateIdle = first.deactivateIdle
      ? async (before, now) =>
          (await Promise.all(groups.map((g) => g.deactivateIdle!(before, now)))).reduce((a, b) => a + b, 0)
      : undefined;
    this.deactivateBeforeStop = first.deactivateBeforeStop === true;
    this.timerStats = first.timerStats
      ? () => {
          let ticks = 0;
          let tickErrors = 0;
          let armed = 0;
          for (const g of groups) {
            const s = g.timerStats!();
            ticks = (ticks + s.ticks) >>> 0;
            tickErrors = (tickErrors + s.tickErrors) >>> 0;
            armed += s.armed;
          }
          return { ticks, tickErrors, armed };
        }
      : undefined;
    this.publishTime = first.publishTime ? (now) => groups.forEach((g) => g.publishTime!(now)) : undefined;
    this.timersCaughtUp = first.timersCaughtUp ? () => groups.every((g) => g.timersCaughtUp!()) : undefined;
  }

  /** The group that holds `key`. */
  groupOf(key: ActorKey): number {
    return groupOfKey(key, this.groups.length, this.lanesPerGroup);
  }

  async start(): Promise<void> {
    await Promise.all(this.groups.map((g) => g.start()));
  }

  wake(lane: number): void {
    // The GPUs poll their inbound rings; the group's kernel polls its load ring sooner (kernel.ts, load-pump.ts).
    this.groups[Math.floor(lane / this.lanesPerGroup)]?.wake(lane % this.lanesPerGroup);
  }

  /** Every group stops and frees (each also when another failed); the first failure is thrown after. */
  async dispose(): Promise<void> {
    let first: unknown;
    for (const g of this.groups) {
      try {
        await g.dispose();
      } catch (e) {
        first ??= e;
      }
    }
    if (first !== undefined) throw first;
  }

  /** A fault of any group is the class's, naming the group and its GPU. */
  health(): KernelHealth {
    if (!this.fault) {
      for (let i = 0; i < this.groups.length; i++) {
        const g = this.groups[i]!;
        const f = g.health().fault;
        if (!f) continue;
        const code =
          f instanceof GpuFaultError ? (f.code as ConstructorParameters<typeof GpuFaultError>[1]) : 'GPU_FAULT';
        this.fault = new GpuFaultError(this.grain, code, `lane group ${i} on GPU ${g.ordinal}: ${f.message}`, {
          cause: f,
          device: g.ordinal,
          ...(f instanceof GpuFaultError && f.cudaResult !== undefined ? { cudaResult: f.cudaResult } : {}),
        });
        break;
      }
    }
    return { fault: this.fault };
  }

  /** The groups' overflow pools together (capacity, use and counts add up; highWater is the sum of each pool's). */
  overflow(): OverflowStats | undefined {
    let out: { capacity: number; inUse: number; highWater: number; overflowed: number; exhausted: number } | undefined;
    for (const g of this.groups) {
      const s = g.overflow?.();
      if (!s) continue;
      out ??= { capacity: 0, inUse: 0, highWater: 0, overflowed: 0, exhausted: 0 };
      out.capacity += s.capacity;
      out.inUse += s.inUse;
      out.highWater += s.highWater;
      out.overflowed = (out.overflowed + s.overflowed) >>> 0;
      out.exhausted = (out.exhausted + s.exhausted) >>> 0;
    }
    return out;
  }

  async inspect(key: number | string): Promise<unknown> {
    return this.groups[this.groupOf(key)]!.inspect?.(key);
  }

  /** Device memory per group (and so per GPU): ClassMetrics.devices. */
  deviceMemory(): GroupMemory[] {
    return this.groups.map((g, group) => ({ group, device: g.ordinal, deviceBytes: g.deviceBytes }));
  }

  private async gather(): Promise<StateBatch> {
    const parts = await Promise.all(this.groups.map((g) => g.readDirty!()));
    const stride = parts[0]!.stride;
    const bytes = new Uint8Array(parts.reduce((n, p) => n + p.bytes.length, 0));
    let at = 0;
    for (const p of parts) {
      bytes.set(p.bytes, at);
      at += p.bytes.length;
    }
    return { keys: parts.flatMap((p) => p.keys), bytes, stride };
  }

  /** An upload's rows (and failed keys) go to the group of each key, in their order. */
  private async upload(u: StateUpload): Promise<void> {
    const n = this.groups.length;
    const rows: number[][] = Array.from({ length: n }, () => []);
    for (let i = 0; i < u.keys.length; i++) rows[this.groupOf(u.keys[i]!)]!.push(i);
    const failed: ActorKey[][] = Array.from({ length: n }, () => []);
    for (const k of u.failed?.keys ?? []) failed[this.groupOf(k)]!.push(k);
    await Promise.all(
      this.groups.map((g, gi) => {
        const mine = rows[gi]!;
        if (mine.length === 0 && failed[gi]!.length === 0) return undefined;
        const bytes = new Uint8Array(mine.length * u.stride);
        mine.forEach((row, j) => bytes.set(u.bytes.subarray(row * u.stride, (row + 1) * u.stride), j * u.stride));
        const part: StateUpload = {
          keys: mine.map((row) => u.keys[row]!),
          bytes,
          stride: u.stride,
          found: Uint8Array.from(mine, (row) => u.found[row]!),
          mode: u.mode,
          ...(u.failed && failed[gi]!.length ? { failed: { ...u.failed, keys: failed[gi]! } } : {}),
        };
        return g.writeStates!(part);
      }),
    );
  }
}
