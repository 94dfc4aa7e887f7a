/**
 * The loaded and initialised CUDA driver: libcuda opened, every symbol bound, cuInit done, at least
 * one device present. Device queries need no context, so probing stays cheap (no GPU memory taken).
 */
import koffi from 'koffi';
import { bindCudaApi } from './cuda-api.ts';
import type { CudaApi } from './cuda-api.ts';
import { CUDA_ERROR_NO_DEVICE, CUDA_ERROR_STUB_LIBRARY, CUDA_SUCCESS, CuDeviceAttribute } from './constants.ts';
import { CudaError, CudaUnavailableError } from './errors.ts';
import { openLibcuda } from './library.ts';
import type { DiscoveryEnv } from './library.ts';

export interface DeviceInfo {
  readonly ordinal: number;
  readonly name: string;
  readonly computeCapability: { readonly major: number; readonly minor: number };
  /** NVRTC / ptxas target of this device, e.g. "sm_90". */
  readonly arch: string;
  readonly pciBusId: string;
  readonly multiprocessorCount: number;
  readonly maxThreadsPerBlock: number;
  readonly maxThreadsPerMultiprocessor: number;
  readonly maxBlocksPerMultiprocessor: number;
  readonly warpSize: number;
  readonly maxSharedMemoryPerBlock: number;
  readonly maxSharedMemoryPerMultiprocessor: number;
  readonly maxRegistersPerMultiprocessor: number;
  readonly l2CacheBytes: number;
  readonly canMapHostMemory: boolean;
  readonly unifiedAddressing: boolean;
  readonly concurrentKernels: boolean;
  /** False on x86 + PCIe: no read-modify-write atomics shared with the host (single-writer words only). */
  readonly hostNativeAtomics: boolean;
  readonly cooperativeLaunch: boolean;
  readonly integrated: boolean;
}

export class CudaDriver {
  readonly api: CudaApi;
  /** The libcuda file that was loaded. */
  readonly libPath: string;
  /** cuDriverGetVersion, e.g. 13000 for CUDA 13.0. */
  readonly version: number;
  readonly deviceCount: number;

  // Scratch out-parameters, reused: calls are synchronous, so nothing else can touch them meanwhile.
  private readonly i32 = new Int32Array(1);

  private constructor(api: CudaApi, libPath: string) {
    this.api = api;
    this.libPath = libPath;
    this.init();
    this.check('cuDriverGetVersion', api.cuDriverGetVersion(this.i32));
    this.version = this.i32[0] ?? 0;
    this.check('cuDeviceGetCount', api.cuDeviceGetCount(this.i32));
    this.deviceCount = this.i32[0] ?? 0;
    if (this.deviceCount < 1) {
      throw new CudaUnavailableError(`the driver at ${libPath} reports no CUDA device (cuDeviceGetCount = 0)`);
    }
  }

  /** Open libcuda, bind it and cuInit. Throws CudaUnavailableError when any of that is impossible. */
  static open(env: DiscoveryEnv = process.env): CudaDriver {
    // Lazy module loading (the default since CUDA 11.7) loads a kernel's code at its first launch, and
    // loading waits for every running kernel: with a persistent kernel alive that wait never ends
    // (measured on the H100: test/gpu/blocking-probe.cu). Load eagerly unless the user chose otherwise.
    if (process.env['CUDA_MODULE_LOADING'] === undefined) process.env['CUDA_MODULE_LOADING'] = 'EAGER';
    const lib = openLibcuda(env);
    let api: CudaApi;
    try {
      api = bindCudaApi(lib.handle);
    } catch (e) {
      lib.handle.unload();
      throw new CudaUnavailableError(
        `${lib.path} lacks a driver API symbol this backend needs (driver too old?): ${String(e)}`,
        { cause: e },
      );
    }
    return new CudaDriver(api, lib.path);
  }

  private init(): void {
    const r = this.api.cuInit(0);
    if (r === CUDA_SUCCESS) return;
    const err = this.error('cuInit', r);
    if (r === CUDA_ERROR_NO_DEVICE) {
      throw new CudaUnavailableError(`the driver at ${this.libPath} found no CUDA device (cuInit: ${err.code})`, {
        cause: err,
        hint: 'check nvidia-smi and CUDA_VISIBLE_DEVICES',
      });
    }
    if (r === CUDA_ERROR_STUB_LIBRARY) {
      throw new CudaUnavailableError(
        `${this.libPath} is the toolkit's stub libcuda, not a driver (cuInit: ${err.code})`,
        { cause: err },
      );
    }
    throw new CudaUnavailableError(
      `cuInit failed in ${this.libPath}: ${err.code}: ${err.message.split('\n')[0] ?? ''}`,
      { cause: err },
    );
  }

  /** Build the CudaError for a failed call, naming it with cuGetErrorName / cuGetErrorString. */
  error(call: string, result: number): CudaError {
    let name = `CUDA_ERROR_${result}`;
    let description = 'unknown CUresult';
    const p = new BigUint64Array(1);
    if (this.api.cuGetErrorName(result, p) === CUDA_SUCCESS && p[0]) name = koffi.decode.string(p[0]);
    if (this.api.cuGetErrorString(result, p) === CUDA_SUCCESS && p[0]) description = koffi.decode.string(p[0]);
    return new CudaError(call, result, name, description);
  }

  /** Throw a CudaError unless `result` is CUDA_SUCCESS. Every driver call goes through here. */
  check(call: string, result: number): void {
    if (result !== CUDA_SUCCESS) throw this.error(call, result);
  }

  device(ordinal: number): number {
    if (!Number.isInteger(ordinal) || ordinal < 0 || ordinal >= this.deviceCount) {
      throw new CudaUnavailableError(`CUDA device ${ordinal} does not exist (this machine has ${this.deviceCount})`, {
        hint: `use a device ordinal from 0 to ${this.deviceCount - 1}`,
      });
    }
    this.check('cuDeviceGet', this.api.cuDeviceGet(this.i32, ordinal));
    return this.i32[0] ?? 0;
  }

  attribute(dev: number, attrib: number): number {
    this.check('cuDeviceGetAttribute', this.api.cuDeviceGetAttribute(this.i32, attrib, dev));
    return this.i32[0] ?? 0;
  }

  deviceName(dev: number): string {
    const buf = new Uint8Array(256);
    this.check('cuDeviceGetName', this.api.cuDeviceGetName(buf, buf.length, dev));
    const end = buf.indexOf(0);
    return Buffer.from(buf.subarray(0, end < 0 ? buf.length : end)).toString('utf8');
  }

  deviceInfo(ordinal: number): DeviceInfo {
    const dev = this.device(ordinal);
    const a = (attr: number): number => this.attribute(dev, attr);
    const A = CuDeviceAttribute;
    const major = a(A.COMPUTE_CAPABILITY_MAJOR);
    const minor = a(A.COMPUTE_CAPABILITY_MINOR);
    const hex = (n: number, w: number): string => n.toString(16).padStart(w, '0');
    return {
      ordinal,
      name: this.deviceName(dev),
      computeCapability: { major, minor },
      arch: `sm_${major}${minor}`,
      pciBusId: `${hex(a(A.PCI_DOMAIN_ID), 4)}:${hex(a(A.PCI_BUS_ID), 2)}:${hex(a(A.PCI_DEVICE_ID), 2)}.0`,
      multiprocessorCount: a(A.MULTIPROCESSOR_COUNT),
      maxThreadsPerBlock: a(A.MAX_THREADS_PER_BLOCK),
      maxThreadsPerMultiprocessor: a(A.MAX_THREADS_PER_MULTIPROCESSOR),
      maxBlocksPerMultiprocessor: a(A.MAX_BLOCKS_PER_MULTIPROCESSOR),
      warpSize: a(A.WARP_SIZE),
      maxSharedMemoryPerBlock: a(A.MAX_SHARED_MEMORY_PER_BLOCK),
      maxSharedMemoryPerMultiprocessor: a(A.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
      maxRegistersPerMultiprocessor: a(A.MAX_REGISTERS_PER_MULTIPROCESSOR),
      l2CacheBytes: a(A.L2_CACHE_SIZE),
      canMapHostMemory: a(A.CAN_MAP_HOST_MEMORY) !== 0,
      unifiedAddressing: a(A.UNIFIED_ADDRESSING) !== 0,
      concurrentKernels: a(A.CONCURRENT_KERNELS) !== 0,
      hostNativeAtomics: a(A.HOST_NATIVE_ATOMIC_SUPPORTED) !== 0,
      cooperativeLaunch: a(A.COOPERATIVE_LAUNCH) !== 0,
      integrated: a(A.INTEGRATED) !== 0,
    };
  }

  /** "13.0" for 13000. */
  get versionString(): string {
    return `${Math.floor(this.version / 1000)}.${Math.floor((this.version % 1000) / 10)}`;
  }
}

let shared: CudaDriver | undefined;

/**
 * The process-wide driver (opened once; libcuda is never unloaded). Passing `env` opens a separate,
 * uncached instance — for tests of discovery. Throws CudaUnavailableError without a driver or device.
 */
export function loadCudaDriver(opts: { env?: DiscoveryEnv } = {}): CudaDriver {
  if (opts.env) return CudaDriver.open(opts.env);
  shared ??= CudaDriver.open(process.env);
  return shared;
}
