/**
 * What the CUDA backends of one process share per device. Every backend in a process uses the device's one
 * primary context, so a driver call that waits for running kernels waits for every backend's kernels: what
 * may block is decided device-wide here.
 */
import type { CudaKernel } from './backend.ts';
import type { CudaContext } from './driver/index.ts';

const runningByDevice = new Map<number, Set<CudaKernel>>();
/** Contexts released while kernels of other backends still ran: disposed when none runs. */
export const deferredByDevice = new Map<number, CudaContext[]>();
/**
 * Devices whose primary context took a sticky fault in this process. Measured on the H100 (driver
 * 580): after the fault, resetting and releasing the primary context, cuDevicePrimaryCtxRetain still
 * returns CUDA_ERROR_ILLEGAL_ADDRESS — CUDA keeps such an error for the life of the process.
 */
export const stickyByDevice = new Map<number, Error>();

export function runningOn(device: number): Set<CudaKernel> {
  let s = runningByDevice.get(device);
  if (!s) runningByDevice.set(device, (s = new Set()));
  return s;
}
