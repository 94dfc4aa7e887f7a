import { describe, expect, it } from 'vitest';
import { GATHER_PARAMS, gatherLaunch, gatherLayout } from '@ringgrain/codegen';
import { DirtyGather, decodeKeys, type GatherDevice, type GatherTarget } from '../src/state-gather.ts';
import { GpuStateError } from '../src/errors.ts';
import type { KernelArg } from '../src/driver/index.ts';

/**
 * The host half of readDirty on a CUDA kernel (state-gather.ts), driven through a stand-in for the driver
 * calls: the stand-in's `launch` writes rows into its staging bytes in the gather kernel's layout (count,
 * int64 keys at keysAt, packed states at statesAt), so these tests check what the host does with a gather's
 * output (the row count read first, exactly `count` rows copied, keys decoded, a batch of its own) and
 * that every failure is a typed error. The kernel itself is compiled by packages/codegen/test/state-meta.test.ts
 * and run on the GPU by bench/gpu-state.ts.
 */
const SIZE = 32;
const MAX = 64;

function target(over: Partial<GatherTarget> = {}): GatherTarget {
  return {
    grain: 'Slab',
    stateSize: SIZE,
    maxActors: MAX,
    stringKeys: false,
    states: 0x7000_0000n,
    globals: 0x7100_0000n,
    ...over,
  };
}

class StandIn implements GatherDevice {
  readonly staging = 0x7200_0000n;
  readonly mem: Uint8Array;
  readonly calls: string[] = [];
  launches: Array<{ blocks: number; threads: number; args: readonly KernelArg[] }> = [];
  /**
   * Rows each next launch writes (one list per launch; `drop`: flagged 0, as for a turn overlapping the copy); a count
   * to report instead, or an error to throw.
   */
  rows: Array<Array<{ key: bigint; fill: number; drop?: boolean }>> = [];
  reportCount: number | undefined;
  failLaunch: Error | undefined;

  constructor(private readonly t: GatherTarget) {
    this.mem = new Uint8Array(gatherLayout(t.stateSize, t.maxActors).bytes).fill(0xee);
  }

  zero(offset: number, bytes: number): void {
    this.calls.push(`zero ${offset} ${bytes}`);
    this.mem.fill(0, offset, offset + bytes);
  }

  launch(blocks: number, threads: number, args: readonly KernelArg[]): void {
    this.calls.push('launch');
    if (this.failLaunch) throw this.failLaunch;
    this.launches.push({ blocks, threads, args });
    const { keysAt, statesAt, flagsAt } = gatherLayout(this.t.stateSize, this.t.maxActors);
    const dv = new DataView(this.mem.buffer);
    const count = dv.getUint32(0, true);
    const rows = this.rows.shift() ?? [];
    rows.forEach((r, i) => {
      dv.setBigInt64(keysAt + 8 * (count + i), r.key, true);
      this.mem.fill(r.fill, statesAt + (count + i) * this.t.stateSize, statesAt + (count + i + 1) * this.t.stateSize);
      this.mem[flagsAt + count + i] = r.drop ? 0 : 1;
    });
    dv.setUint32(0, this.reportCount ?? count + rows.length, true);
    dv.setUint32(4, rows.filter((r) => r.drop).length, true);
  }

  copyOut(dst: Uint8Array, offset: number): void {
    this.calls.push(`copy ${offset} ${dst.byteLength}`);
    dst.set(this.mem.subarray(offset, offset + dst.byteLength));
  }

  sync(): void {
    this.calls.push('sync');
  }
}

function setup(over: Partial<GatherTarget> = {}) {
  const t = target(over);
  const dev = new StandIn(t);
  const host = new Uint8Array(gatherLayout(t.stateSize, t.maxActors).bytes);
  return { t, dev, host, gather: new DirtyGather(t, dev, host) };
}

describe('decodeKeys', () => {
  it('reads int64 (lo, hi) words as safe integers, negative ones included', () => {
    const keys = [0, 1, -1, 2 ** 40 + 5, -(2 ** 35) - 7, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER];
    const words = new BigInt64Array(keys.map((k) => BigInt(k)));
    expect(decodeKeys(new Uint32Array(words.buffer), keys.length)).toEqual(keys);
  });
});

describe('DirtyGather (readDirty host half)', () => {
  it(
    'zeroes the count, launches with the listed parameters, reads the count, then copies exactly count keys and ' +
      'states',
    async () => {
      const { t, dev, gather } = setup();
      dev.rows = [
        [
          { key: 7n, fill: 1 },
          { key: -3n, fill: 2 },
          { key: 2n ** 40n, fill: 3 },
        ],
      ];
      const got = await gather.run();
      const { keysAt, statesAt } = gatherLayout(SIZE, MAX);
      expect(dev.calls).toEqual([
        'zero 0 16',
        'launch',
        'copy 0 16',
        'sync',
        `copy ${keysAt} 24`,
        `copy ${statesAt} ${3 * SIZE}`,
        'sync',
      ]);
      const l = dev.launches[0]!;
      expect({ blocks: l.blocks, threadsPerBlock: l.threads }).toEqual(gatherLaunch(MAX));
      expect(l.args).toEqual(
        GATHER_PARAMS.map(
          (p) =>
            ({
              states: { kind: 'ptr', value: t.states },
              globals: { kind: 'ptr', value: t.globals },
              maxActors: { kind: 'u32', value: MAX },
              out: { kind: 'ptr', value: dev.staging },
            })[p.name],
        ),
      );
      expect(got.rows).toBe(3);
      expect(got.batch.keys).toEqual([7, -3, 2 ** 40]);
      expect(got.batch.stride).toBe(SIZE);
      expect(got.batch.bytes.length).toBe(3 * SIZE);
      expect([...got.batch.bytes.subarray(0, SIZE)].every((b) => b === 1)).toBe(true);
      expect([...got.batch.bytes.subarray(2 * SIZE)].every((b) => b === 3)).toBe(true);
      for (const ms of [got.gatherMs, got.copyMs, got.decodeMs]) expect(ms).toBeGreaterThanOrEqual(0);
    },
  );

  it(
    'rows dropped by the kernel (a turn overlapped their copy) are left out, using the flags copied only then',
    async () => {
      const { dev, gather } = setup();
      dev.rows = [
        [
          { key: 1n, fill: 1 },
          { key: 2n, fill: 2, drop: true },
          { key: 3n, fill: 3 },
          { key: 4n, fill: 4, drop: true },
        ],
      ];
      const got = await gather.run();
      const { flagsAt } = gatherLayout(SIZE, MAX);
      expect(dev.calls).toContain(`copy ${flagsAt} 4`);
      expect(got.dropped).toBe(2);
      expect(got.rows).toBe(2);
      expect(got.batch.keys).toEqual([1, 3]);
      expect(got.batch.bytes.length).toBe(2 * SIZE);
      expect([...got.batch.bytes.subarray(0, SIZE)].every((b) => b === 1)).toBe(true);
      expect([...got.batch.bytes.subarray(SIZE)].every((b) => b === 3)).toBe(true);
    },
  );

  it('no dirty actor: an empty batch, and no row copies', async () => {
    const { dev, gather } = setup();
    const got = await gather.run();
    expect(got.batch).toEqual({ keys: [], bytes: new Uint8Array(0), stride: SIZE });
    expect(dev.calls).toEqual(['zero 0 16', 'launch', 'copy 0 16', 'sync']);
  });

  it('a batch is its own copy: the next gather reuses the pinned buffer without changing it', async () => {
    const { dev, gather } = setup();
    dev.rows = [[{ key: 1n, fill: 9 }], [{ key: 2n, fill: 4 }]];
    const [a, b] = await Promise.all([gather.run(), gather.run()]);
    expect(a.batch.keys).toEqual([1]);
    expect([...a.batch.bytes].every((x) => x === 9)).toBe(true);
    expect(b.batch.keys).toEqual([2]);
    expect([...b.batch.bytes].every((x) => x === 4)).toBe(true);
  });

  it('string-keyed grains: GPU_STATE_STRING_KEYS, and nothing launched (no mark cleared)', async () => {
    const { dev, gather } = setup({ stringKeys: true });
    dev.rows = [[{ key: 1n, fill: 1 }]];
    const e = await gather.run().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(GpuStateError);
    expect((e as GpuStateError).code).toBe('GPU_STATE_STRING_KEYS');
    expect((e as GpuStateError).hint).toContain('integer keys');
    expect(dev.calls).toEqual([]);
  });

  it('a driver failure is GPU_STATE_GATHER with the cause; the next call runs again', async () => {
    const { dev, gather } = setup();
    const cause = new Error('CUDA_ERROR_LAUNCH_FAILED');
    dev.failLaunch = cause;
    const e = await gather.run().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(GpuStateError);
    expect((e as GpuStateError).code).toBe('GPU_STATE_GATHER');
    expect((e as Error).cause).toBe(cause);
    dev.failLaunch = undefined;
    dev.rows = [[{ key: 5n, fill: 5 }]];
    expect((await gather.run()).batch.keys).toEqual([5]);
  });

  it('a count above the slots is an error, never a truncated batch', async () => {
    const { dev, gather } = setup();
    dev.reportCount = MAX + 1;
    const e = await gather.run().catch((x: unknown) => x);
    expect((e as GpuStateError).code).toBe('GPU_STATE_GATHER');
    expect((e as Error).message).toContain(`${MAX + 1} dirty rows (0 dropped) for ${MAX} slots`);
  });

  it('refuses a host buffer smaller than the staging layout', () => {
    const t = target();
    expect(() => new DirtyGather(t, new StandIn(t), new Uint8Array(16))).toThrow(RangeError);
  });
});
