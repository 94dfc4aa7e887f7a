/** @ringgrain/cuda-backend: grain classes in persistent CUDA ring kernels. */
export { CudaBackend, CudaKernel, type CudaBackendOptions, type LaunchInfo } from './backend.ts';
export { CoResidencyError, GpuFaultError, KernelStuckError, ModuleLoadWhileRunningError, StackFrameTooLargeError } from './errors.ts';
export * from './driver/index.ts';
