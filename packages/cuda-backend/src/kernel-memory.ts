/**
 * A new ring kernel's memory before its launch: the host region's control blocks zeroed and rings formatted (what
 * core's lanes see: KernelMemory), and the device allocation zeroed with the words the host sets once (the dirty
 * marks' and hooks' switches, the residency area's addresses) on the kernel's own stream.
 */
import {
  CONTROL_BLOCK_SIZE,
  DeviceGlobals,
  Ring,
  offsetOf,
  type KernelMemory,
  type KernelPlan,
} from '@ringgrain/core/backend';
import type { CudaContext, CudaStream, DeviceBuffer } from './driver/index.ts';
import type { HostRegion } from './host-memory.ts';
import type { DeviceAt, HostLayout } from './kernel-layout.ts';
import type { ResolvedCudaOptions } from './options.ts';
import { residencyGlobalsImage, type ResidencyTarget } from './residency.ts';

export interface FormattedHost {
  /** Lane 0's reply ring (the counters and replies come back there). */
  readonly reply: Ring;
  /** Lane 0's control block, as words. */
  readonly control: Int32Array;
  readonly memory: KernelMemory;
}

/** Control blocks zeroed (host memory may be reused), inbound and reply rings formatted; lane 0 carries the replies. */
export function formatHost(
  host: HostRegion,
  hl: HostLayout,
  lanes: number,
  plan: KernelPlan,
  residency: boolean,
): FormattedHost {
  const o = plan.options;
  const buf = host.buffer;
  const base = host.offset;
  // Every lane at epoch 0, nothing observed yet.
  new Uint8Array(buf, base, hl.inboundAt).fill(0);
  // The residency host block starts zeroed too: request 0, nothing posted (the kernel reads it from its first loop).
  if (residency) new Uint8Array(buf, base + hl.residencyHostAt, hl.bytes - hl.residencyHostAt).fill(0);
  for (let l = 0; l < lanes; l++)
    Ring.format(buf, base + hl.inboundAt + l * hl.inboundStride, o.ringCapacity, o.slotSize);
  const reply = Ring.format(buf, base + hl.replyAt, o.replyCapacity, o.slotSize);
  const control = new Int32Array(buf, base, CONTROL_BLOCK_SIZE >> 2);
  const memory: KernelMemory = {
    lanes: Array.from({ length: lanes }, (_, l) => ({
      control: { buffer: buf, offset: base + l * hl.controlStride },
      inbound: { buffer: buf, offset: base + hl.inboundAt + l * hl.inboundStride },
      replies: l === 0 ? [{ buffer: buf, offset: base + hl.replyAt }] : [],
    })),
  };
  return { reply, control, memory };
}

/** Where the device words go: the kernel's allocation, its layout, and (with residency) its target and host block. */
export interface DeviceInit {
  readonly ctx: CudaContext;
  readonly device: DeviceBuffer;
  readonly stream: CudaStream;
  readonly at: DeviceAt;
  readonly plan: KernelPlan;
  readonly options: ResolvedCudaOptions;
  /** The residency target and the host block's device address, where the kernel has residency. */
  readonly residency: { readonly target: ResidencyTarget; readonly hostDevPtr: bigint } | undefined;
}

/** Zeroes every device word on the kernel's own (non-blocking) stream, sets the host's words, waits (finite work). */
export function initDevice(d: DeviceInit): void {
  const { ctx, device, stream, at, plan } = d;
  ctx.memsetDeviceAsync(device, 0, stream);
  const flag = (field: string) =>
    ctx.copyToDeviceAsync(device, Uint32Array.of(1), stream, at.globals + offsetOf(DeviceGlobals, field));
  // A class with persistent state keeps dirty marks in its turns (DeviceGlobals.metaOn, state-meta.ts).
  if (plan.persistence || d.options.stateMarks === true) flag('metaOn');
  // Activation hooks run where the CPU backend runs them: in a class with persistence (DeviceGlobals.hooksOn).
  if (plan.persistence || d.options.activationHooks === true) flag('hooksOn');
  if (d.residency) {
    // The residency area's addresses (ResidencyGlobals line 2), and the area's address in DeviceGlobals.
    const area = device.devPtr + BigInt(at.residency);
    const image = residencyGlobalsImage(d.residency.target, d.residency.hostDevPtr, area);
    ctx.copyToDeviceAsync(device, image, stream, at.residency);
    ctx.copyToDeviceAsync(
      device,
      Uint32Array.of(Number(area & 0xffffffffn), Number(area >> 32n), plan.persistence?.load ? 1 : 0),
      stream,
      at.globals + offsetOf(DeviceGlobals, 'residencyLo'),
    );
  }
  ctx.synchronize(stream);
}
