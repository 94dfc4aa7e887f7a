/**
 * Lane groups (CudaBackend `devices`) without a GPU: the route table blocks a K2K sender reads (routes.ts,
 * abi.ts RouteEntry), and the class facade over its groups (lane-groups.ts) with fake group kernels: lanes
 * end to end in core's numbering, keys to the group of their lane, state uploads split and gathers merged,
 * figures added up, a fault of one group the class's, naming its GPU.
 */
import { generateKernel } from '@ringgrain/codegen';
import type { GrainDef } from '@ringgrain/core/types';
import {
  laneOfKey,
  layoutOf,
  snapshot,
  type KernelHealth,
  type LaneMemory,
  type StateBatch,
  type StateUpload,
} from '@ringgrain/core/backend';
import { describe, expect, it } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import { GpuFaultError } from '../src/errors.ts';
import { LaneGroupKernel, groupOfKey, type GroupKernel } from '../src/lane-groups.ts';
import { fillRouteTable, type RouteTarget } from '../src/routes.ts';

const def = Account.grain as GrainDef;
const { abi } = generateKernel(def, { grains: [def] });
const RouteEntry = abi.schemas.RouteEntry;
const stride = layoutOf(RouteEntry).size;

describe('route table blocks (no GPU needed)', () => {
  it('puts group g of grain id i at g × routeCount + i, with the groups and lanes a sender picks by', () => {
    const routeCount = 3;
    const groups = 2;
    const table = new Uint8Array(stride * routeCount * groups);
    const target = (grainId: number, group: number): RouteTarget => ({
      grainId,
      group,
      groups,
      groupLanes: 4,
      queues: 0x7000_0000_0000n + BigInt(grainId * 0x1000 + group * 0x100),
      partitions: 32,
      queueCapacity: 256,
      slotSize: 128,
      pool: 0x7100_0000_0000n + BigInt(group),
      poolNodes: 1000 + group,
    });
    fillRouteTable(table, RouteEntry, stride, routeCount, [target(0, 0), target(0, 1), target(2, 1)]);
    const at = (g: number, i: number) =>
      snapshot(RouteEntry, table.buffer, (g * routeCount + i) * stride) as Record<string, number>;
    expect(at(0, 0)).toMatchObject({ queuesLo: 0, queuesHi: 0x7000, groups: 2, groupLanes: 4, poolNodes: 1000 });
    expect(at(1, 0)).toMatchObject({
      queuesLo: 0x100,
      queuesHi: 0x7000,
      groups: 2,
      groupLanes: 4,
      poolNodes: 1001,
      poolLo: 1,
    });
    expect(at(1, 2)).toMatchObject({ queuesLo: 0x2100, partitions: 32, queueCapacity: 256, slotSize: 128 });
    // No kernel of grain 1, nor of grain 2's group 0: empty entries (a send there fails NO_ROUTE).
    expect(at(0, 1)).toMatchObject({ queuesLo: 0, queuesHi: 0, partitions: 0, groups: 0 });
    expect(at(0, 2)).toMatchObject({ queuesLo: 0, queuesHi: 0, partitions: 0 });
    // A target outside the table is a bug, not a silent overwrite.
    expect(() => fillRouteTable(table, RouteEntry, stride, routeCount, [target(0, 2)])).toThrow(/outside the table/);
  });
});

/** A group kernel of `lanes` lanes that records what it was given. */
class FakeGroup implements GroupKernel {
  readonly memory: { lanes: LaneMemory[] };
  fault: Error | undefined;
  uploads: StateUpload[] = [];
  disposed = false;
  published: number[] = [];
  constructor(
    readonly ordinal: number,
    lanes: number,
    readonly deviceBytes: number,
    private readonly dirty: StateBatch,
    private readonly failDispose = false,
  ) {
    const buffer = new ArrayBuffer(64);
    this.memory = {
      lanes: Array.from({ length: lanes }, (_, l) => ({
        control: { buffer, offset: l },
        inbound: { buffer, offset: 32 + l },
        replies: [],
      })),
    };
  }
  async start(): Promise<void> {}
  wake(): void {}
  async dispose(): Promise<void> {
    this.disposed = true;
    if (this.failDispose) throw new Error(`dispose failed on ${this.ordinal}`);
  }
  health(): KernelHealth {
    return { fault: this.fault };
  }
  overflow() {
    return { capacity: 100, inUse: 3, highWater: 7, overflowed: 0xffffffff, exhausted: 1 };
  }
  async inspect(key: number | string): Promise<unknown> {
    return { key, on: this.ordinal };
  }
  readDirty = async (): Promise<StateBatch> => this.dirty;
  writeStates = async (u: StateUpload): Promise<void> => {
    this.uploads.push(u);
  };
  deactivateIdle = async (): Promise<number> => this.ordinal + 10;
  timerStats = () => ({ ticks: 5, tickErrors: 1, armed: 2 });
  publishTime = (now: number) => {
    this.published.push(now);
  };
  timersCaughtUp = () => this.ordinal !== 9;
}

function groups(failDispose = false): [FakeGroup, FakeGroup] {
  return [
    new FakeGroup(0, 4, 1000, { keys: [1, 2], bytes: Uint8Array.of(1, 1, 2, 2), stride: 2 }),
    new FakeGroup(1, 4, 2000, { keys: [3], bytes: Uint8Array.of(3, 3), stride: 2 }, failDispose),
  ];
}

describe('LaneGroupKernel (no GPU needed)', () => {
  it("lays the groups' lanes end to end, so core's lane of a key is in the key's group", async () => {
    const [a, b] = groups();
    const k = new LaneGroupKernel('Account', [a, b], 4);
    expect(k.memory.lanes).toEqual([...a.memory.lanes, ...b.memory.lanes]);
    for (let key = -50; key < 500; key++) {
      const g = k.groupOf(key);
      expect(g).toBe(groupOfKey(key, 2, 4));
      expect(Math.floor(laneOfKey(key, k.memory.lanes.length) / 4)).toBe(g);
      expect(await k.inspect(key)).toEqual({ key, on: g });
    }
    expect(new Set(Array.from({ length: 100 }, (_, i) => k.groupOf(i)))).toEqual(new Set([0, 1]));
  });

  it('splits a state upload by group (rows, found flags, failed keys in order) and merges dirty gathers', async () => {
    const [a, b] = groups();
    const k = new LaneGroupKernel('Account', [a, b], 4);
    const keys = Array.from({ length: 12 }, (_, i) => i * 7);
    const bytes = Uint8Array.from(keys.flatMap((x) => [x, x + 1]));
    const found = Uint8Array.from(keys, (_, i) => i % 2);
    await k.writeStates!({
      keys,
      bytes,
      stride: 2,
      found,
      mode: 'load',
      failed: { keys: [100, 101, 102, 103], error: 'bad row' },
    });
    const got = new Map<number, { group: number; row: number[]; found: number }>();
    for (const [gi, g] of [a, b].entries()) {
      for (const u of g.uploads) {
        expect(u.mode).toBe('load');
        for (const [j, key] of u.keys.entries())
          got.set(key as number, { group: gi, row: [...u.bytes.subarray(j * 2, j * 2 + 2)], found: u.found[j]! });
        for (const f of u.failed?.keys ?? []) expect(k.groupOf(f)).toBe(gi);
        expect(u.failed?.error ?? 'bad row').toBe('bad row');
      }
    }
    expect([...got.keys()].sort((x, y) => x - y)).toEqual(keys);
    for (const [i, key] of keys.entries())
      expect(got.get(key)).toEqual({ group: k.groupOf(key), row: [key, key + 1], found: i % 2 });
    expect([...a.uploads, ...b.uploads].flatMap((u) => u.failed?.keys ?? []).sort()).toEqual([100, 101, 102, 103]);
    const d = await k.readDirty!();
    expect(d).toEqual({ keys: [1, 2, 3], bytes: Uint8Array.of(1, 1, 2, 2, 3, 3), stride: 2 });
  });

  it(
    'adds up overflow, deactivations and timer figures; publishes time to every group; reports memory per GPU',
    async () => {
      const [a, b] = groups();
      const k = new LaneGroupKernel('Account', [a, b], 4);
      expect(k.overflow()).toEqual({ capacity: 200, inUse: 6, highWater: 14, overflowed: 0xfffffffe, exhausted: 2 });
      expect(await k.deactivateIdle!(1, 2)).toBe(21);
      expect(k.timerStats!()).toEqual({ ticks: 10, tickErrors: 2, armed: 4 });
      k.publishTime!(42);
      expect([a.published, b.published]).toEqual([[42], [42]]);
      expect(k.timersCaughtUp!()).toBe(true);
      expect(k.deviceMemory()).toEqual([
        { group: 0, device: 0, deviceBytes: 1000 },
        { group: 1, device: 1, deviceBytes: 2000 },
      ]);
    },
  );

  it(
    "a fault of one group faults the class with a GpuFaultError naming the group's GPU; dispose reaches every " +
      'group',
    async () => {
      const [a, b] = groups(true);
      const k = new LaneGroupKernel('Account', [a, b], 4);
      expect(k.health().fault).toBeUndefined();
      b.fault = new GpuFaultError('Account', 'GPU_FAULT', 'the GPU reported CUDA_ERROR_ILLEGAL_ADDRESS (700)', {
        cudaResult: 700,
      });
      const f = k.health().fault as GpuFaultError;
      expect(f).toBeInstanceOf(GpuFaultError);
      expect(f).toMatchObject({ code: 'GPU_FAULT', device: 1, cudaResult: 700 });
      expect(f.message).toMatch(/lane group 1 on GPU 1: .*ILLEGAL_ADDRESS/);
      expect(f.cause).toBe(b.fault);
      // The first fault stays the class's.
      a.fault = new Error('later');
      expect(k.health().fault).toBe(f);
      await expect(k.dispose()).rejects.toThrow(/dispose failed on 1/);
      expect([a.disposed, b.disposed]).toEqual([true, true]);
    },
  );
});
