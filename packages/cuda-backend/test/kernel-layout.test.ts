/**
 * A ring kernel's host region and device allocation (kernel-layout.ts), checked without a GPU: every area
 * aligned as the kernel reads it, none overlapping another, and the sizes the ABI gives.
 */
import { generateKernel } from '@ringgrain/codegen';
import type { GrainDef } from '@ringgrain/core/types';
import { CONTROL_BLOCK_SIZE } from '@ringgrain/core/backend';
import { describe, expect, it } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import { kernelLayout, type KernelShape } from '../src/kernel-layout.ts';
import { CudaBackend, CudaBackendOptionsError } from '../src/index.ts';

const def = Account.grain as GrainDef;
const { abi } = generateKernel(def, { grains: [def] });
const shape: KernelShape = {
  maxActors: 1000,
  ringCapacity: 1024,
  replyCapacity: 512,
  slotSize: 256,
  partitions: 32,
  queueCapacity: 256,
  lanes: 4,
  routeEntries: 3,
  timers: 0,
  residency: false,
  stateSize: abi.stateSize,
  overflowBytes: 1 << 20,
};

function disjoint(areas: Array<[number, number]>): void {
  const sorted = areas.filter(([, n]) => n > 0).sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < sorted.length; i++)
    expect(sorted[i]![0]).toBeGreaterThanOrEqual(sorted[i - 1]![0] + sorted[i - 1]![1]);
}

describe('kernel layout (no GPU needed)', () => {
  it('host region: control blocks, inbound rings and the reply ring, 128-aligned and apart', () => {
    const { host } = kernelLayout(abi, shape);
    const sizes = abi.sizes({ ...shape });
    expect(host.controlStride).toBeGreaterThanOrEqual(CONTROL_BLOCK_SIZE);
    for (const at of [host.inboundAt, host.replyAt, host.timerHostAt, host.residencyHostAt]) expect(at % 128).toBe(0);
    disjoint([
      [0, host.controlStride * shape.lanes],
      [host.inboundAt, host.inboundStride * shape.lanes],
      [host.replyAt, sizes.replies],
    ]);
    // No timers, no residency: nothing after the reply ring but alignment.
    expect(host.bytes).toBe(host.residencyHostAt);
    const withBoth = kernelLayout(abi, { ...shape, timers: 2, residency: true });
    expect(withBoth.host.residencyHostAt).toBeGreaterThan(withBoth.host.timerHostAt);
    expect(withBoth.host.bytes).toBeGreaterThan(withBoth.host.residencyHostAt);
  });

  it('device allocation: every area 256-aligned, none overlapping, routes sized by entries', () => {
    const { device } = kernelLayout(abi, shape);
    const sizes = abi.sizes({ ...shape });
    const at = device.at;
    for (const v of Object.values(at)) expect(v % 256).toBe(0);
    disjoint([
      [at.queues, sizes.queues],
      [at.states, sizes.states],
      [at.directory, sizes.directory],
      [at.globals, sizes.globals],
      [at.routes, device.routeBytes],
      [at.scratch, sizes.scratch],
      [at.overflow, 1],
    ]);
    expect(device.routeBytes).toBe(sizes.routesPerGrain * shape.routeEntries);
    expect(device.bytes).toBeGreaterThan(at.overflow);
    // 1 MiB of pool holds some thousands of 256-byte slots; 0 bytes: no pool.
    expect(device.overflowNodes).toBeGreaterThan(shape.partitions);
    expect(kernelLayout(abi, { ...shape, overflowBytes: 0 }).device.overflowNodes).toBe(0);
  });
});

describe('CudaBackend devices option (no GPU needed)', () => {
  it('takes device, a list of devices (repeats allowed) or all; refuses the rest typed', () => {
    expect(new CudaBackend().options.devices).toEqual([0]);
    expect(new CudaBackend({ device: 1 }).options.devices).toEqual([1]);
    expect(new CudaBackend({ devices: [0, 0] }).options.devices).toEqual([0, 0]);
    expect(new CudaBackend({ devices: 'all' }).options.devices).toBe('all');
    expect(() => new CudaBackend({ devices: [] })).toThrow(CudaBackendOptionsError);
    expect(() => new CudaBackend({ devices: [-1] })).toThrow(
      /devices must be 'all' or a list of 1 to 16 device ordinals/,
    );
    expect(() => new CudaBackend({ devices: [0, 1], device: 0 })).toThrow(/give device or devices, not both/);
    expect(() => new CudaBackend({ devices: 'some' as never })).toThrow(CudaBackendOptionsError);
  });
});
