/**
 * Whether a ring kernel is still sound, from one stream query (a driver call): a poisoned context, a sticky error, or
 * a stream that completed before the kernel acknowledged STOP is a fault (GpuFaultError); a completed stream after
 * STOPPED is the kernel's exit.
 */
import { CONTROL, KernelState } from '@ringgrain/core/backend';
import { GpuFaultError } from './errors.ts';
import type { DeviceSlot } from './device-slot.ts';
import { CudaError, type CudaContext, type CudaStream } from './driver/index.ts';

const firstLine = (e: Error) => e.message.split('\n')[0];

export interface StreamVerdict {
  /** The kernel's stream completed. */
  readonly exited: boolean;
  readonly fault: GpuFaultError | undefined;
}

/** One query of the kernel's stream; a driver error also poisons the device slot. */
export function queryKernel(
  grain: string,
  slot: DeviceSlot,
  ctx: CudaContext,
  stream: CudaStream,
  control: Int32Array,
): StreamVerdict {
  const poison = slot.poisonedBy;
  if (poison) {
    const fault =
      poison instanceof GpuFaultError
        ? poison
        : new GpuFaultError(grain, 'GPU_CONTEXT_POISONED', `the CUDA context is poisoned: ${firstLine(poison)}`, {
            cause: poison,
          });
    return { exited: false, fault };
  }
  try {
    if (ctx.streamQuery(stream) !== 'complete') return { exited: false, fault: undefined };
    const stopped =
      Atomics.load(control, CONTROL.requested) === KernelState.STOP &&
      Atomics.load(control, CONTROL.observed) === KernelState.STOPPED;
    return {
      exited: true,
      fault: stopped
        ? undefined
        : new GpuFaultError(grain, 'GPU_KERNEL_EXITED', 'the persistent kernel exited without being asked to stop'),
    };
  } catch (e) {
    const result = e instanceof CudaError ? e.result : undefined;
    const what = e instanceof CudaError ? `${e.code} (${e.result})` : String(e);
    const fault = new GpuFaultError(grain, 'GPU_FAULT', `the GPU reported ${what}`, {
      cause: e,
      ...(result === undefined ? {} : { cudaResult: result }),
    });
    slot.poisoned(fault);
    return { exited: false, fault };
  }
}
