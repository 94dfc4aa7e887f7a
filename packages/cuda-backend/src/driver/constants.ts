/**
 * Numeric constants of the CUDA driver API and NVRTC that this layer uses, copied from cuda.h and
 * nvrtc.h of CUDA 13.0 (they are ABI: they never change between versions).
 */

export const CUDA_SUCCESS = 0;
/** cuStreamQuery: work still pending. Not an error. */
export const CUDA_ERROR_NOT_READY = 600;
export const CUDA_ERROR_NO_DEVICE = 100;
export const CUDA_ERROR_STUB_LIBRARY = 34;
/** cuCtxEnablePeerAccess: this context already maps the peer's memory. Not an error. */
export const CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704;

/** CUstream_flags */
export const CU_STREAM_NON_BLOCKING = 0x1;

/** cuMemHostAlloc flags. WRITECOMBINED is deliberately absent: the host reads what the GPU writes. */
export const CU_MEMHOSTALLOC_PORTABLE = 0x01;
/** cuMemHostRegister flags (cuda.h CU_MEMHOSTREGISTER_*): usable from every context, mapped into the device. */
export const CU_MEMHOSTREGISTER_PORTABLE = 0x01;
export const CU_MEMHOSTREGISTER_DEVICEMAP = 0x02;
export const CU_MEMHOSTALLOC_DEVICEMAP = 0x02;

/** CUdevice_attribute values used here. */
export const CuDeviceAttribute = {
  MAX_THREADS_PER_BLOCK: 1,
  MAX_SHARED_MEMORY_PER_BLOCK: 8,
  WARP_SIZE: 10,
  MULTIPROCESSOR_COUNT: 16,
  INTEGRATED: 18,
  CAN_MAP_HOST_MEMORY: 19,
  CONCURRENT_KERNELS: 31,
  PCI_BUS_ID: 33,
  PCI_DEVICE_ID: 34,
  L2_CACHE_SIZE: 38,
  MAX_THREADS_PER_MULTIPROCESSOR: 39,
  UNIFIED_ADDRESSING: 41,
  PCI_DOMAIN_ID: 50,
  COMPUTE_CAPABILITY_MAJOR: 75,
  COMPUTE_CAPABILITY_MINOR: 76,
  MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: 81,
  MAX_REGISTERS_PER_MULTIPROCESSOR: 82,
  HOST_NATIVE_ATOMIC_SUPPORTED: 86,
  COOPERATIVE_LAUNCH: 95,
  MAX_BLOCKS_PER_MULTIPROCESSOR: 106,
} as const;
export type CuDeviceAttribute = (typeof CuDeviceAttribute)[keyof typeof CuDeviceAttribute];

/** CUfunction_attribute values. */
export const CuFunctionAttribute = {
  MAX_THREADS_PER_BLOCK: 0,
  SHARED_SIZE_BYTES: 1,
  CONST_SIZE_BYTES: 2,
  LOCAL_SIZE_BYTES: 3,
  NUM_REGS: 4,
  PTX_VERSION: 5,
  BINARY_VERSION: 6,
  MAX_DYNAMIC_SHARED_SIZE_BYTES: 8,
} as const;
export type CuFunctionAttribute = (typeof CuFunctionAttribute)[keyof typeof CuFunctionAttribute];

export const NVRTC_SUCCESS = 0;
/** nvrtcResult names (nvrtcGetErrorString gives prose, not the enum name); later codes print as NVRTC_ERROR_<n>. */
export const NVRTC_RESULT_NAMES: Readonly<Record<number, string>> = {
  0: 'NVRTC_SUCCESS',
  1: 'NVRTC_ERROR_OUT_OF_MEMORY',
  2: 'NVRTC_ERROR_PROGRAM_CREATION_FAILURE',
  3: 'NVRTC_ERROR_INVALID_INPUT',
  4: 'NVRTC_ERROR_INVALID_PROGRAM',
  5: 'NVRTC_ERROR_INVALID_OPTION',
  6: 'NVRTC_ERROR_COMPILATION',
  7: 'NVRTC_ERROR_BUILTIN_OPERATION_FAILURE',
  8: 'NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION',
  9: 'NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION',
  10: 'NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID',
  11: 'NVRTC_ERROR_INTERNAL_ERROR',
  12: 'NVRTC_ERROR_TIME_FILE_WRITE_FAILED',
};
/** CUmemPool_attribute (cuda.h): bytes the default pool holds from the OS, and bytes of it in use. */
export const CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5;
export const CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7;
