/**
 * Raw koffi bindings to the CUDA driver API: exactly the calls a persistent ring-kernel backend needs.
 *
 * Conventions (koffi 3):
 * - Every CUresult is returned as a number and must go through CudaDriver.check.
 * - Out-parameters are declared `void *` and given a typed array (Int32Array / BigUint64Array of
 *   length 1): koffi passes a typed array's data pointer directly, so the driver writes into it.
 * - Handles (CUcontext, CUmodule, CUfunction, CUstream) are opaque pointers, i.e. BigInt in koffi 3.
 * - CUdeviceptr is `unsigned long long`: declared uint64_t and passed as BigInt.
 * - Versioned symbols are bound by their real names (cuMemAlloc_v2, …): the unversioned exports are
 *   the old ABI kept for binaries built against CUDA < 3.2 (or < 11 for the primary-context calls).
 */
import type { LibraryHandle } from 'koffi';

type Ptr = bigint | null;
/** A writable out-parameter: the driver writes through the typed array's data pointer. */
type Out32 = Int32Array | Uint32Array;
type Out64 = BigUint64Array | BigInt64Array;

export interface CudaApi {
  cuInit(flags: number): number;
  cuDriverGetVersion(version: Out32): number;
  cuDeviceGet(device: Out32, ordinal: number): number;
  cuDeviceGetCount(count: Out32): number;
  cuDeviceGetName(name: Uint8Array, len: number, dev: number): number;
  cuDeviceGetAttribute(value: Out32, attrib: number, dev: number): number;
  cuDevicePrimaryCtxRetain(ctx: Out64, dev: number): number;
  cuDevicePrimaryCtxRelease_v2(dev: number): number;
  cuDevicePrimaryCtxReset_v2(dev: number): number;
  cuCtxSetCurrent(ctx: Ptr): number;
  cuDeviceCanAccessPeer(canAccessPeer: Out32, dev: number, peerDev: number): number;
  cuCtxEnablePeerAccess(peerContext: bigint, flags: number): number;
  cuGetErrorName(error: number, str: Out64): number;
  cuGetErrorString(error: number, str: Out64): number;
  cuModuleLoadData(module: Out64, image: Uint8Array): number;
  cuModuleUnload(module: bigint): number;
  cuModuleGetFunction(fn: Out64, module: bigint, name: string): number;
  cuModuleGetGlobal_v2(dptr: Out64, bytes: Out64, module: bigint, name: string): number;
  cuLaunchKernel(
    f: bigint,
    gridX: number,
    gridY: number,
    gridZ: number,
    blockX: number,
    blockY: number,
    blockZ: number,
    sharedMemBytes: number,
    stream: bigint,
    kernelParams: Ptr,
    extra: Ptr,
  ): number;
  cuStreamCreate(stream: Out64, flags: number): number;
  cuStreamQuery(stream: bigint): number;
  cuStreamSynchronize(stream: bigint): number;
  cuStreamDestroy_v2(stream: bigint): number;
  cuMemAlloc_v2(dptr: Out64, bytes: number): number;
  cuMemFree_v2(dptr: bigint): number;
  cuMemAllocAsync(dptr: Out64, bytes: number, stream: bigint): number;
  cuMemFreeAsync(dptr: bigint, stream: bigint): number;
  cuDeviceGetDefaultMemPool(pool: Out64, dev: number): number;
  cuMemPoolTrimTo(pool: bigint, minBytesToKeep: number): number;
  cuMemPoolGetAttribute(pool: bigint, attr: number, value: Out64): number;
  cuMemsetD8_v2(dptr: bigint, value: number, count: number): number;
  cuMemcpyHtoD_v2(dst: bigint, src: ArrayBufferView, bytes: number): number;
  cuMemcpyDtoH_v2(dst: ArrayBufferView, src: bigint, bytes: number): number;
  cuMemsetD8Async(dptr: bigint, value: number, count: number, stream: bigint): number;
  cuMemcpyHtoDAsync_v2(dst: bigint, src: ArrayBufferView, bytes: number, stream: bigint): number;
  cuMemcpyDtoHAsync_v2(dst: ArrayBufferView, src: bigint, bytes: number, stream: bigint): number;
  cuMemHostAlloc(pp: Out64, bytes: number, flags: number): number;
  cuMemFreeHost(p: bigint): number;
  cuMemHostRegister_v2(p: bigint, bytes: number, flags: number): number;
  cuMemHostUnregister(p: bigint): number;
  cuMemHostGetDevicePointer_v2(dptr: Out64, p: bigint, flags: number): number;
  cuMemGetInfo_v2(free: Out64, total: Out64): number;
  cuOccupancyMaxActiveBlocksPerMultiprocessor(
    numBlocks: Out32,
    fn: bigint,
    blockSize: number,
    dynamicSmemBytes: number,
  ): number;
  cuFuncGetAttribute(value: Out32, attrib: number, fn: bigint): number;
}

/** C prototypes, parsed by koffi. `void *` everywhere a pointer is an out-parameter or opaque handle. */
const PROTOTYPES: Readonly<Record<keyof CudaApi, string>> = {
  cuInit: 'int cuInit(unsigned int flags)',
  cuDriverGetVersion: 'int cuDriverGetVersion(void *version)',
  cuDeviceGet: 'int cuDeviceGet(void *device, int ordinal)',
  cuDeviceGetCount: 'int cuDeviceGetCount(void *count)',
  cuDeviceGetName: 'int cuDeviceGetName(void *name, int len, int dev)',
  cuDeviceGetAttribute: 'int cuDeviceGetAttribute(void *value, int attrib, int dev)',
  cuDevicePrimaryCtxRetain: 'int cuDevicePrimaryCtxRetain(void *ctx, int dev)',
  cuDevicePrimaryCtxRelease_v2: 'int cuDevicePrimaryCtxRelease_v2(int dev)',
  cuDevicePrimaryCtxReset_v2: 'int cuDevicePrimaryCtxReset_v2(int dev)',
  cuCtxSetCurrent: 'int cuCtxSetCurrent(void *ctx)',
  cuDeviceCanAccessPeer: 'int cuDeviceCanAccessPeer(void *canAccessPeer, int dev, int peerDev)',
  cuCtxEnablePeerAccess: 'int cuCtxEnablePeerAccess(void *peerContext, unsigned int flags)',
  cuGetErrorName: 'int cuGetErrorName(int error, void *str)',
  cuGetErrorString: 'int cuGetErrorString(int error, void *str)',
  cuModuleLoadData: 'int cuModuleLoadData(void *module, const void *image)',
  cuModuleUnload: 'int cuModuleUnload(void *module)',
  cuModuleGetFunction: 'int cuModuleGetFunction(void *fn, void *module, const char *name)',
  cuModuleGetGlobal_v2: 'int cuModuleGetGlobal_v2(void *dptr, void *bytes, void *module, const char *name)',
  cuLaunchKernel:
    'int cuLaunchKernel(void *f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned ' +
    'int by, unsigned int bz, unsigned int shmem, void *stream, void *params, void *extra)',
  cuStreamCreate: 'int cuStreamCreate(void *stream, unsigned int flags)',
  cuStreamQuery: 'int cuStreamQuery(void *stream)',
  cuStreamSynchronize: 'int cuStreamSynchronize(void *stream)',
  cuStreamDestroy_v2: 'int cuStreamDestroy_v2(void *stream)',
  cuMemAlloc_v2: 'int cuMemAlloc_v2(void *dptr, size_t bytes)',
  cuMemFree_v2: 'int cuMemFree_v2(uint64_t dptr)',
  cuMemAllocAsync: 'int cuMemAllocAsync(void *dptr, size_t bytes, void *stream)',
  cuMemFreeAsync: 'int cuMemFreeAsync(uint64_t dptr, void *stream)',
  cuDeviceGetDefaultMemPool: 'int cuDeviceGetDefaultMemPool(void *pool, int dev)',
  cuMemPoolTrimTo: 'int cuMemPoolTrimTo(void *pool, size_t minBytesToKeep)',
  cuMemPoolGetAttribute: 'int cuMemPoolGetAttribute(void *pool, int attr, void *value)',
  cuMemsetD8_v2: 'int cuMemsetD8_v2(uint64_t dptr, uint8_t value, size_t count)',
  cuMemcpyHtoD_v2: 'int cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t bytes)',
  cuMemcpyDtoH_v2: 'int cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t bytes)',
  cuMemsetD8Async: 'int cuMemsetD8Async(uint64_t dptr, uint8_t value, size_t count, void *stream)',
  cuMemcpyHtoDAsync_v2: 'int cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t bytes, void *stream)',
  cuMemcpyDtoHAsync_v2: 'int cuMemcpyDtoHAsync_v2(void *dst, uint64_t src, size_t bytes, void *stream)',
  cuMemHostAlloc: 'int cuMemHostAlloc(void *pp, size_t bytes, unsigned int flags)',
  cuMemFreeHost: 'int cuMemFreeHost(void *p)',
  cuMemHostRegister_v2: 'int cuMemHostRegister_v2(void *p, size_t bytes, unsigned int flags)',
  cuMemHostUnregister: 'int cuMemHostUnregister(void *p)',
  cuMemHostGetDevicePointer_v2: 'int cuMemHostGetDevicePointer_v2(void *dptr, void *p, unsigned int flags)',
  cuMemGetInfo_v2: 'int cuMemGetInfo_v2(void *free, void *total)',
  cuOccupancyMaxActiveBlocksPerMultiprocessor:
    'int cuOccupancyMaxActiveBlocksPerMultiprocessor(void *numBlocks, void *fn, int blockSize, size_t dynamicSmem)',
  cuFuncGetAttribute: 'int cuFuncGetAttribute(void *value, int attrib, void *fn)',
};

/** Bind every function; a missing symbol throws (the caller turns that into CudaUnavailableError). */
export function bindCudaApi(lib: LibraryHandle): CudaApi {
  const api: Record<string, unknown> = {};
  for (const [name, proto] of Object.entries(PROTOTYPES)) api[name] = lib.func(proto);
  return api as unknown as CudaApi;
}
