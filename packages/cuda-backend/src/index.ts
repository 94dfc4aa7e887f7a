/** @ringgrain/cuda-backend: grain classes in persistent CUDA ring kernels. */
export { CudaBackend, CudaKernel, type CudaBackendOptions, type LaunchInfo } from './backend.ts';
export {
  CoResidencyError,
  CudaBackendOptionsError,
  GpuFaultError,
  GpuStateError,
  KernelStuckError,
  LaneGroupError,
  ModuleLoadWhileRunningError,
  StackFrameTooLargeError,
} from './errors.ts';
export * from './driver/index.ts';
export { BUILD_USAGE, buildKernels, buildMain, type BuildKernelsOptions, type BuiltKernel } from './build.ts';
export { IsolatedCudaBackend, type IsolatedCudaBackendOptions } from './isolated/isolated-backend.ts';
export { ArenaFullError, GpuHostError, GpuHostProtocolError, SharedMemoryError } from './isolated/errors.ts';
export type { GpuFaultCode, GpuStateCode, LaneGroupCode } from './errors.ts';
