/** The handles and records a CudaContext hands out (context.ts re-exports them). */

/** Pinned, mapped host memory: the host reads/writes `buffer`, kernels use `devPtr`. */
export interface HostBuffer {
  readonly hostPtr: bigint;
  readonly devPtr: bigint;
  readonly bytes: number;
  /** Zero-copy view of the pinned memory (koffi.view). Invalid after freeHost / dispose: do not keep it. */
  readonly buffer: ArrayBuffer;
}

export interface DeviceBuffer {
  readonly devPtr: bigint;
  readonly bytes: number;
}

export interface CudaStream {
  readonly handle: bigint;
}

export interface CudaModule {
  readonly handle: bigint;
}

/** A `__device__` variable of a loaded module (valid while the module is loaded). */
export interface ModuleGlobal {
  readonly devPtr: bigint;
  readonly bytes: number;
  readonly module: CudaModule;
}

export interface CudaFunction {
  readonly handle: bigint;
  readonly name: string;
  readonly module: CudaModule;
}

export type Dim3 = readonly [number, number, number];

export interface LaunchConfig {
  readonly grid: number | Dim3;
  readonly block: number | Dim3;
  readonly sharedMemBytes?: number;
  /** Required: a stream from createStream() (non-blocking). The legacy default stream is never used. */
  readonly stream: CudaStream;
}

export interface FunctionAttributes {
  readonly maxThreadsPerBlock: number;
  readonly sharedSizeBytes: number;
  readonly constSizeBytes: number;
  readonly localSizeBytes: number;
  readonly numRegs: number;
  readonly ptxVersion: number;
  readonly binaryVersion: number;
}

export interface ContextStats {
  readonly pinnedBytes: number;
  readonly pinnedAllocations: number;
  readonly deviceBytes: number;
  readonly deviceAllocations: number;
  readonly streams: number;
  readonly modules: number;
}

export interface MemInfo {
  readonly freeBytes: number;
  readonly totalBytes: number;
  /** The default stream-ordered pool: bytes reserved from the device, and bytes of those in use. */
  readonly poolReservedBytes: number;
  readonly poolUsedBytes: number;
}

export type StreamState = 'complete' | 'pending';
