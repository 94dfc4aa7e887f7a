/**
 * How a ring kernel fits on its GPU next to the kernels already resident there: every block of a
 * persistent kernel must be resident at once, so a launch is sized (scaled partitions halved) or refused
 * (CoResidencyError) before anything is allocated.
 */
import type { Abi } from '@ringgrain/codegen';
import { CoResidencyError, StackFrameTooLargeError } from './errors.ts';
import { DEFAULT_PARTITIONS } from './sizing.ts';
import { CuFunctionAttribute, type CudaContext, type CudaFunction } from './driver/index.ts';

/** Local memory (stack) a CUDA thread may have on current GPUs (CUDA programming guide, technical specifications). */
export const MAX_LOCAL_BYTES_PER_THREAD = 512 * 1024;

export interface LaunchFit {
  readonly partitions: number;
  readonly launch: { readonly blocks: number; readonly threadsPerBlock: number; readonly sharedBytes: number };
  readonly perSM: number;
  readonly resident: number;
  readonly capacity: number;
  /** Local memory (stack) per thread the kernel needs (cuFuncGetAttribute LOCAL_SIZE_BYTES). */
  readonly stackBytesPerThread: number;
  readonly registersPerThread: number;
}

export interface FitRequest {
  readonly grain: string;
  readonly abi: Abi;
  readonly fn: CudaFunction;
  /** Partitions wanted (the option or the scaled default), and whether the user fixed them. */
  readonly partitions: number;
  readonly fixed: boolean;
  readonly lanes: number;
  readonly reserveSMs: number | undefined;
  /** Blocks of the kernels resident on the device now (every backend's). */
  readonly resident: number;
}

export function fitLaunch(ctx: CudaContext, r: FitRequest): LaunchFit {
  const frame = ctx.functionAttribute(r.fn, CuFunctionAttribute.LOCAL_SIZE_BYTES);
  if (frame > MAX_LOCAL_BYTES_PER_THREAD) throw new StackFrameTooLargeError(r.grain, frame, MAX_LOCAL_BYTES_PER_THREAD);
  let partitions = r.partitions;
  let launch = r.abi.launch({ partitions, lanes: r.lanes });
  const perSM = ctx.maxActiveBlocksPerMultiprocessor(r.fn, launch.threadsPerBlock, launch.sharedBytes);
  const sms = ctx.device.multiprocessorCount;
  const reservedSMs = Math.min(sms, r.reserveSMs ?? Math.max(4, Math.floor(sms / 8)));
  const capacity = perSM * (sms - reservedSMs);
  const resident = r.resident;
  // Scaled partitions (none set by the user) give way to the kernels already resident: halved down to
  // the small-class default rather than a CoResidencyError for a third or fourth big class.
  while (!r.fixed && partitions > DEFAULT_PARTITIONS && resident + launch.blocks > capacity) {
    partitions /= 2;
    launch = r.abi.launch({ partitions, lanes: r.lanes });
  }
  if (perSM === 0 || resident + launch.blocks > capacity) {
    throw new CoResidencyError(r.grain, { requested: launch.blocks, resident, capacity, perSM, sms, reservedSMs });
  }
  return {
    partitions,
    launch,
    perSM,
    resident,
    capacity,
    stackBytesPerThread: frame,
    registersPerThread: ctx.functionAttribute(r.fn, CuFunctionAttribute.NUM_REGS),
  };
}
