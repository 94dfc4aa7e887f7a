/** The CUDA driver layer: koffi bindings to libcuda and NVRTC, typed errors, contexts, compile cache. */
export {
  CompilePoolError,
  CudaDriverErrorBase,
  CudaError,
  CudaUnavailableError,
  CudaUsageError,
  NvrtcError,
} from './errors.ts';
export type { DriverErrorOptions } from './errors.ts';
export {
  CU_MEMHOSTALLOC_DEVICEMAP,
  CU_MEMHOSTALLOC_PORTABLE,
  CU_STREAM_NON_BLOCKING,
  CUDA_ERROR_NOT_READY,
  CUDA_SUCCESS,
  CuDeviceAttribute,
  CuFunctionAttribute,
} from './constants.ts';
export { isStubPath, libcudaCandidates, nvrtcCandidates, openLibcuda, openNvrtc } from './library.ts';
export type { DiscoveryEnv, OpenedLibrary } from './library.ts';
export { CudaDriver, loadCudaDriver } from './driver.ts';
export type { DeviceInfo } from './driver.ts';
export { Nvrtc, loadNvrtc } from './nvrtc.ts';
export type { NvrtcCompileOptions, NvrtcOutput } from './nvrtc.ts';
export { probeCuda } from './probe.ts';
export type { CudaProbe, CudaProbeFailed, CudaProbeOk, ProbeOptions } from './probe.ts';
export { arg, KernelParamBlock } from './kernel-args.ts';
export type { KernelArg } from './kernel-args.ts';
export { CudaContext } from './context.ts';
export type {
  ContextStats,
  CudaFunction,
  CudaModule,
  CudaStream,
  DeviceBuffer,
  Dim3,
  FunctionAttributes,
  HostBuffer,
  LaunchConfig,
  MemInfo,
  ModuleGlobal,
  StreamState,
} from './context.ts';
export { cacheKey, compileCached, compileCachedAsync, defaultCacheDir } from './compile-cache.ts';
export {
  closeSharedNvrtcPools,
  COMPILE_THREADS_ENV,
  defaultCompileThreads,
  NvrtcPool,
  sharedNvrtcPool,
} from './nvrtc-pool.ts';
export type { NvrtcPoolOptions } from './nvrtc-pool.ts';
export type { NvrtcJobResult } from './nvrtc-worker.ts';

export type { CompileCachedOptions, CompileCachedResult } from './compile-cache.ts';
