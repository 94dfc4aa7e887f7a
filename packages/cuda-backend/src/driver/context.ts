/**
 * CudaContext: the primary context of one device, and every resource created through it.
 *
 * - The primary context is retained (cuDevicePrimaryCtxRetain), never created: cuCtxCreate changed ABI
 *   (_v4 in CUDA 13), and the primary context is the one other CUDA users in the process share.
 * - Streams are always CU_STREAM_NON_BLOCKING; launches refuse any stream this context did not create,
 *   so nothing ever runs on the legacy default stream, which would wait behind a persistent kernel.
 * - Every allocation, module and stream is tracked, so stats() measures leaks and dispose() frees all.
 * - Pinned host memory is PORTABLE | DEVICEMAP and never write-combined: the host reads it.
 */
import koffi from 'koffi';
import { performance } from 'node:perf_hooks';
import {
  CU_MEMHOSTALLOC_DEVICEMAP,
  CU_MEMHOSTALLOC_PORTABLE,
  CU_MEMHOSTREGISTER_DEVICEMAP,
  CU_MEMHOSTREGISTER_PORTABLE,
  CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
  CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
  CU_STREAM_NON_BLOCKING,
  CUDA_ERROR_NOT_READY,
  CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
  CUDA_SUCCESS,
  CuFunctionAttribute,
} from './constants.ts';
import { loadCudaDriver } from './driver.ts';
import type { CudaDriver, DeviceInfo } from './driver.ts';
import { CudaUsageError } from './errors.ts';
import { KernelParamBlock } from './kernel-args.ts';
import type { KernelArg } from './kernel-args.ts';
import type { DiscoveryEnv } from './library.ts';

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

/** The context made current on this thread by the last CudaContext call (CUDA's current context is per thread). */
let currentOnThisThread: bigint | null = null;

export class CudaContext {
  readonly driver: CudaDriver;
  readonly device: DeviceInfo;
  /** The CUdevice handle. */
  readonly cuDevice: number;
  /** The CUcontext handle (the device's primary context). */
  readonly handle: bigint;

  private readonly host = new Map<bigint, HostBuffer>();
  /** Host memory registered (not allocated) here: unregistered, never freed, at dispose. */
  private readonly registered = new Map<bigint, HostBuffer>();
  private readonly dev = new Map<bigint, DeviceBuffer>();
  private readonly modules = new Set<bigint>();
  /** Device allocations made with cuMemAllocAsync (a subset of dev). */
  private readonly async = new Set<bigint>();
  private readonly streams = new Set<bigint>();
  private readonly params: KernelParamBlock;
  private released = false;

  // Scratch out-parameters (synchronous calls on one thread: no one else uses them meanwhile).
  private readonly out64 = new BigUint64Array(1);
  private readonly out64b = new BigUint64Array(1);
  private readonly out32 = new Int32Array(1);

  private constructor(driver: CudaDriver, ordinal: number) {
    this.driver = driver;
    this.device = driver.deviceInfo(ordinal);
    this.cuDevice = driver.device(ordinal);
    const out = new BigUint64Array(1);
    driver.check('cuDevicePrimaryCtxRetain', driver.api.cuDevicePrimaryCtxRetain(out, this.cuDevice));
    this.handle = out[0] ?? 0n;
    try {
      this.makeCurrent();
    } catch (e) {
      driver.api.cuDevicePrimaryCtxRelease_v2(this.cuDevice);
      throw e;
    }
    this.params = new KernelParamBlock();
  }

  /** Retain device `device`'s primary context (default 0). Throws CudaUnavailableError without CUDA. */
  static create(opts: { device?: number; env?: DiscoveryEnv } = {}): CudaContext {
    const driver = loadCudaDriver(opts.env ? { env: opts.env } : {});
    return new CudaContext(driver, opts.device ?? 0);
  }

  get disposed(): boolean {
    return this.released;
  }

  /** Make this context current on the calling thread (done implicitly by every method). */
  makeCurrent(): void {
    this.alive();
    if (currentOnThisThread === this.handle) return;
    this.driver.check('cuCtxSetCurrent', this.driver.api.cuCtxSetCurrent(this.handle));
    currentOnThisThread = this.handle;
  }

  private alive(): void {
    if (this.released)
      throw new CudaUsageError('RG_CUDA_DISPOSED', 'this CudaContext was disposed', {
        hint: 'create a new CudaContext',
      });
  }

  private check(call: string, result: number): void {
    this.driver.check(call, result);
  }

  // ---- streams -------------------------------------------------------------------------------

  createStream(): CudaStream {
    this.makeCurrent();
    this.check('cuStreamCreate', this.driver.api.cuStreamCreate(this.out64, CU_STREAM_NON_BLOCKING));
    const handle = this.out64[0] ?? 0n;
    this.streams.add(handle);
    return { handle };
  }

  destroyStream(stream: CudaStream): void {
    this.owned(this.streams, stream.handle, 'stream');
    this.makeCurrent();
    this.check('cuStreamDestroy_v2', this.driver.api.cuStreamDestroy_v2(stream.handle));
    this.streams.delete(stream.handle);
  }

  /**
   * Whether the stream's work has finished, without blocking. A kernel fault surfaces here as a
   * CudaError (sticky: `err.sticky`), which is how a dead persistent kernel is detected off the hot path.
   */
  streamQuery(stream: CudaStream): StreamState {
    this.owned(this.streams, stream.handle, 'stream');
    this.makeCurrent();
    const r = this.driver.api.cuStreamQuery(stream.handle);
    if (r === CUDA_SUCCESS) return 'complete';
    if (r === CUDA_ERROR_NOT_READY) return 'pending';
    throw this.driver.error('cuStreamQuery', r);
  }

  /**
   * Block until the stream's work finishes. Only for work known to end (setup kernels, tests): never
   * on a stream whose persistent kernel has not been told to stop — use waitForStream for that.
   */
  synchronize(stream: CudaStream): void {
    this.owned(this.streams, stream.handle, 'stream');
    this.makeCurrent();
    this.check('cuStreamSynchronize', this.driver.api.cuStreamSynchronize(stream.handle));
  }

  /** Poll streamQuery until complete (true) or `timeoutMs` passes (false). Never blocks the event loop. */
  async waitForStream(stream: CudaStream, opts: { timeoutMs: number; pollMs?: number }): Promise<boolean> {
    const deadline = performance.now() + opts.timeoutMs;
    for (;;) {
      if (this.streamQuery(stream) === 'complete') return true;
      if (performance.now() >= deadline) return false;
      await new Promise<void>((resolve) => setTimeout(resolve, opts.pollMs ?? 1));
    }
  }

  // ---- memory --------------------------------------------------------------------------------

  /** Pinned host memory mapped into the device's address space, zero-filled. Page-aligned. */
  allocHost(bytes: number): HostBuffer {
    positiveSize(bytes, 'allocHost');
    this.makeCurrent();
    this.check(
      'cuMemHostAlloc',
      this.driver.api.cuMemHostAlloc(this.out64, bytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
    );
    const hb = this.deviceView(this.out64[0] ?? 0n, bytes, (p) => this.driver.api.cuMemFreeHost(p));
    new Uint8Array(hb.buffer).fill(0);
    this.host.set(hb.hostPtr, hb);
    return hb;
  }

  /** The device address and a zero-copy view of page-locked host memory; on failure `undo` releases it. */
  private deviceView(hostPtr: bigint, bytes: number, undo: (p: bigint) => number): HostBuffer {
    const r = this.driver.api.cuMemHostGetDevicePointer_v2(this.out64, hostPtr, 0);
    if (r !== CUDA_SUCCESS) {
      const err = this.driver.error('cuMemHostGetDevicePointer_v2', r);
      undo(hostPtr);
      throw err;
    }
    return { hostPtr, devPtr: this.out64[0] ?? 0n, bytes, buffer: koffi.view(hostPtr, bytes) };
  }

  freeHost(buf: HostBuffer): void {
    this.owned(this.host, buf.hostPtr, 'pinned host buffer');
    this.makeCurrent();
    this.check('cuMemFreeHost', this.driver.api.cuMemFreeHost(buf.hostPtr));
    this.host.delete(buf.hostPtr);
  }

  /**
   * Page-locks and maps existing host memory (e.g. a shared-memory mapping another process also maps)
   * into the device's address space. Contents are left as they are. Unregister before unmapping it.
   */
  registerHost(hostPtr: bigint, bytes: number): HostBuffer {
    positiveSize(bytes, 'registerHost');
    this.makeCurrent();
    this.check(
      'cuMemHostRegister_v2',
      this.driver.api.cuMemHostRegister_v2(hostPtr, bytes, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP),
    );
    const hb = this.deviceView(hostPtr, bytes, (p) => this.driver.api.cuMemHostUnregister(p));
    this.registered.set(hostPtr, hb);
    return hb;
  }

  unregisterHost(buf: HostBuffer): void {
    this.owned(this.registered, buf.hostPtr, 'registered host memory');
    this.makeCurrent();
    this.check('cuMemHostUnregister', this.driver.api.cuMemHostUnregister(buf.hostPtr));
    this.registered.delete(buf.hostPtr);
  }

  allocDevice(bytes: number): DeviceBuffer {
    positiveSize(bytes, 'allocDevice');
    this.makeCurrent();
    this.check('cuMemAlloc_v2', this.driver.api.cuMemAlloc_v2(this.out64, bytes));
    const db: DeviceBuffer = { devPtr: this.out64[0] ?? 0n, bytes };
    this.dev.set(db.devPtr, db);
    return db;
  }

  /**
   * Stream-ordered device memory (cuMemAllocAsync): unlike cuMemFree, its free never waits for other
   * streams' kernels, so a grain can be terminated while other ring kernels keep running.
   */
  allocDeviceAsync(bytes: number, stream: CudaStream): DeviceBuffer {
    positiveSize(bytes, 'allocDeviceAsync');
    this.makeCurrent();
    this.check('cuMemAllocAsync', this.driver.api.cuMemAllocAsync(this.out64, bytes, stream.handle));
    const db: DeviceBuffer = { devPtr: this.out64[0] ?? 0n, bytes };
    this.dev.set(db.devPtr, db);
    this.async.add(db.devPtr);
    return db;
  }

  /** Frees memory from allocDeviceAsync, ordered after the work already on `stream`. */
  freeDeviceAsync(buf: DeviceBuffer, stream: CudaStream): void {
    this.owned(this.dev, buf.devPtr, 'device buffer');
    this.makeCurrent();
    this.check('cuMemFreeAsync', this.driver.api.cuMemFreeAsync(buf.devPtr, stream.handle));
    this.dev.delete(buf.devPtr);
    this.async.delete(buf.devPtr);
  }

  /** Returns what the stream-ordered allocator keeps reserved to the device (call when no kernel runs). */
  trimMemoryPool(): void {
    this.makeCurrent();
    this.check('cuDeviceGetDefaultMemPool', this.driver.api.cuDeviceGetDefaultMemPool(this.out64, this.cuDevice));
    this.check('cuMemPoolTrimTo', this.driver.api.cuMemPoolTrimTo(this.out64[0] ?? 0n, 0));
  }

  freeDevice(buf: DeviceBuffer): void {
    this.owned(this.dev, buf.devPtr, 'device buffer');
    this.makeCurrent();
    this.check('cuMemFree_v2', this.driver.api.cuMemFree_v2(buf.devPtr));
    this.dev.delete(buf.devPtr);
  }

  /** Fill device memory (setup only: it is ordered with the legacy stream, not with ours). */
  memsetDevice(buf: DeviceBuffer, value: number, bytes = buf.bytes, offset = 0): void {
    this.owned(this.dev, buf.devPtr, 'device buffer');
    inRange(offset, bytes, buf.bytes, 'memsetDevice');
    this.makeCurrent();
    this.check('cuMemsetD8_v2', this.driver.api.cuMemsetD8_v2(buf.devPtr + BigInt(offset), value & 0xff, bytes));
  }

  /** Synchronous host → device copy: setup only, never on a per-message path. */
  copyToDevice(dst: DeviceBuffer | ModuleGlobal, src: ArrayBufferView, dstOffset = 0): void {
    this.ownedMemory(dst);
    inRange(dstOffset, src.byteLength, dst.bytes, 'copyToDevice');
    this.makeCurrent();
    this.check('cuMemcpyHtoD_v2', this.driver.api.cuMemcpyHtoD_v2(dst.devPtr + BigInt(dstOffset), src, src.byteLength));
  }

  /** Synchronous device → host copy: setup and checks only. */
  copyFromDevice(dst: ArrayBufferView, src: DeviceBuffer | ModuleGlobal, srcOffset = 0): void {
    this.ownedMemory(src);
    inRange(srcOffset, dst.byteLength, src.bytes, 'copyFromDevice');
    this.makeCurrent();
    this.check('cuMemcpyDtoH_v2', this.driver.api.cuMemcpyDtoH_v2(dst, src.devPtr + BigInt(srcOffset), dst.byteLength));
  }

  /**
   * Stream-ordered setup on a non-blocking stream (never the legacy stream while persistent kernels
   * run: the legacy stream waits for them). Memset then launch on the same stream needs no wait; anything else is
   * followed by `synchronize(stream)` on that setup stream (finite work only).
   */
  memsetDeviceAsync(buf: DeviceBuffer, value: number, stream: CudaStream, bytes = buf.bytes, offset = 0): void {
    this.owned(this.dev, buf.devPtr, 'device buffer');
    this.owned(this.streams, stream.handle, 'stream');
    inRange(offset, bytes, buf.bytes, 'memsetDeviceAsync');
    this.makeCurrent();
    this.check(
      'cuMemsetD8Async',
      this.driver.api.cuMemsetD8Async(buf.devPtr + BigInt(offset), value & 0xff, bytes, stream.handle),
    );
  }

  /** Host → device on `stream`; `src` must stay untouched until the stream is synchronized. */
  copyToDeviceAsync(dst: DeviceBuffer, src: ArrayBufferView, stream: CudaStream, dstOffset = 0): void {
    this.ownedMemory(dst);
    this.owned(this.streams, stream.handle, 'stream');
    inRange(dstOffset, src.byteLength, dst.bytes, 'copyToDeviceAsync');
    this.makeCurrent();
    this.check(
      'cuMemcpyHtoDAsync_v2',
      this.driver.api.cuMemcpyHtoDAsync_v2(dst.devPtr + BigInt(dstOffset), src, src.byteLength, stream.handle),
    );
  }

  /** Device → host on `stream`; read `dst` only after synchronizing the stream. */
  copyFromDeviceAsync(dst: ArrayBufferView, src: DeviceBuffer, stream: CudaStream, srcOffset = 0): void {
    this.ownedMemory(src);
    this.owned(this.streams, stream.handle, 'stream');
    inRange(srcOffset, dst.byteLength, src.bytes, 'copyFromDeviceAsync');
    this.makeCurrent();
    this.check(
      'cuMemcpyDtoHAsync_v2',
      this.driver.api.cuMemcpyDtoHAsync_v2(dst, src.devPtr + BigInt(srcOffset), dst.byteLength, stream.handle),
    );
  }

  // ---- peers ---------------------------------------------------------------------------------

  /** Whether this context's device can read and write `peer`'s device memory (cuDeviceCanAccessPeer). */
  canAccessPeer(peer: CudaContext): boolean {
    this.makeCurrent();
    this.check(
      'cuDeviceCanAccessPeer',
      this.driver.api.cuDeviceCanAccessPeer(this.out32, this.cuDevice, peer.cuDevice),
    );
    return this.out32[0] === 1;
  }

  /**
   * Maps `peer`'s device memory into this context (cuCtxEnablePeerAccess): kernels here may then load, store
   * and run atomics on the peer's allocations. Idempotent; the mapping lasts as long as both contexts.
   */
  enablePeerAccess(peer: CudaContext): void {
    this.makeCurrent();
    const r = this.driver.api.cuCtxEnablePeerAccess(peer.handle, 0);
    if (r !== CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) this.check('cuCtxEnablePeerAccess', r);
  }

  memInfo(): MemInfo {
    this.makeCurrent();
    this.check('cuMemGetInfo_v2', this.driver.api.cuMemGetInfo_v2(this.out64, this.out64b));
    const free = { freeBytes: Number(this.out64[0] ?? 0n), totalBytes: Number(this.out64b[0] ?? 0n) };
    // The stream-ordered pool's reservation counts as used device memory until trimmed.
    this.check('cuDeviceGetDefaultMemPool', this.driver.api.cuDeviceGetDefaultMemPool(this.out64, this.cuDevice));
    const pool = this.out64[0] ?? 0n;
    this.check(
      'cuMemPoolGetAttribute',
      this.driver.api.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, this.out64b),
    );
    const poolReservedBytes = Number(this.out64b[0] ?? 0n);
    this.check(
      'cuMemPoolGetAttribute',
      this.driver.api.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, this.out64b),
    );
    return { ...free, poolReservedBytes, poolUsedBytes: Number(this.out64b[0] ?? 0n) };
  }

  stats(): ContextStats {
    let pinnedBytes = 0;
    for (const b of this.host.values()) pinnedBytes += b.bytes;
    let deviceBytes = 0;
    for (const b of this.dev.values()) deviceBytes += b.bytes;
    return {
      pinnedBytes,
      pinnedAllocations: this.host.size,
      deviceBytes,
      deviceAllocations: this.dev.size,
      streams: this.streams.size,
      modules: this.modules.size,
    };
  }

  // ---- modules and launches ------------------------------------------------------------------

  /** Load a cubin (no JIT) or NUL-terminated PTX (driver JIT: slow, cache cubins instead). */
  loadModule(image: Uint8Array): CudaModule {
    if (image.byteLength === 0) throw new CudaUsageError('RG_CUDA_EMPTY_IMAGE', 'loadModule got an empty image');
    this.makeCurrent();
    this.check('cuModuleLoadData', this.driver.api.cuModuleLoadData(this.out64, image));
    const handle = this.out64[0] ?? 0n;
    this.modules.add(handle);
    return { handle };
  }

  unloadModule(mod: CudaModule): void {
    this.owned(this.modules, mod.handle, 'module');
    this.makeCurrent();
    this.check('cuModuleUnload', this.driver.api.cuModuleUnload(mod.handle));
    this.modules.delete(mod.handle);
  }

  getFunction(mod: CudaModule, name: string): CudaFunction {
    this.owned(this.modules, mod.handle, 'module');
    this.makeCurrent();
    this.check('cuModuleGetFunction', this.driver.api.cuModuleGetFunction(this.out64, mod.handle, name));
    return { handle: this.out64[0] ?? 0n, name, module: mod };
  }

  /** A `__device__` global of the module (declare it extern "C" to keep its name). */
  getGlobal(mod: CudaModule, name: string): ModuleGlobal {
    this.owned(this.modules, mod.handle, 'module');
    this.makeCurrent();
    this.check('cuModuleGetGlobal_v2', this.driver.api.cuModuleGetGlobal_v2(this.out64, this.out64b, mod.handle, name));
    return { devPtr: this.out64[0] ?? 0n, bytes: Number(this.out64b[0] ?? 0n), module: mod };
  }

  /** Launch asynchronously on `config.stream`. Arguments are built with `arg.u32(…)`, `arg.ptr(…)`, … */
  launch(fn: CudaFunction, config: LaunchConfig, args: readonly KernelArg[]): void {
    this.owned(this.modules, fn.module.handle, 'function (its module)');
    this.owned(this.streams, config.stream.handle, 'stream');
    const [gx, gy, gz] = dim3(config.grid, 'grid');
    const [bx, by, bz] = dim3(config.block, 'block');
    const shmem = config.sharedMemBytes ?? 0;
    if (!Number.isInteger(shmem) || shmem < 0)
      throw new CudaUsageError('RG_CUDA_BAD_LAUNCH', `sharedMemBytes must be a non-negative integer, got ${shmem}`);
    this.makeCurrent();
    const params = this.params.write(args);
    this.check(
      `cuLaunchKernel(${fn.name})`,
      this.driver.api.cuLaunchKernel(fn.handle, gx, gy, gz, bx, by, bz, shmem, config.stream.handle, params, null),
    );
  }

  /** cuOccupancyMaxActiveBlocksPerMultiprocessor: how many blocks of this size fit on one SM. */
  maxActiveBlocksPerMultiprocessor(fn: CudaFunction, blockSize: number, dynamicSharedMemBytes = 0): number {
    this.owned(this.modules, fn.module.handle, 'function (its module)');
    this.makeCurrent();
    this.check(
      'cuOccupancyMaxActiveBlocksPerMultiprocessor',
      this.driver.api.cuOccupancyMaxActiveBlocksPerMultiprocessor(
        this.out32,
        fn.handle,
        blockSize,
        dynamicSharedMemBytes,
      ),
    );
    return this.out32[0] ?? 0;
  }

  functionAttribute(fn: CudaFunction, attrib: number): number {
    this.owned(this.modules, fn.module.handle, 'function (its module)');
    this.makeCurrent();
    this.check('cuFuncGetAttribute', this.driver.api.cuFuncGetAttribute(this.out32, attrib, fn.handle));
    return this.out32[0] ?? 0;
  }

  functionAttributes(fn: CudaFunction): FunctionAttributes {
    const A = CuFunctionAttribute;
    return {
      maxThreadsPerBlock: this.functionAttribute(fn, A.MAX_THREADS_PER_BLOCK),
      sharedSizeBytes: this.functionAttribute(fn, A.SHARED_SIZE_BYTES),
      constSizeBytes: this.functionAttribute(fn, A.CONST_SIZE_BYTES),
      localSizeBytes: this.functionAttribute(fn, A.LOCAL_SIZE_BYTES),
      numRegs: this.functionAttribute(fn, A.NUM_REGS),
      ptxVersion: this.functionAttribute(fn, A.PTX_VERSION),
      binaryVersion: this.functionAttribute(fn, A.BINARY_VERSION),
    };
  }

  // ---- teardown ------------------------------------------------------------------------------

  /**
   * Free everything this context allocated and release the primary context.
   *
   * Refuses (CudaUsageError RG_CUDA_BUSY, nothing freed) while a stream still has work: freeing memory
   * under a running persistent kernel blocks until it exits — forever if it never does. Stop the
   * kernel first. After a sticky fault the frees fail; they are all still attempted, the context is
   * released (dropping the last reference resets a poisoned primary context) and the first error thrown.
   */
  dispose(opts: { reset?: boolean } = {}): void {
    if (this.released) return;
    let firstError: unknown;
    try {
      this.makeCurrent();
    } catch (e) {
      firstError = e;
    }
    const busy: bigint[] = [];
    for (const s of this.streams) {
      const r = this.driver.api.cuStreamQuery(s);
      if (r === CUDA_ERROR_NOT_READY) busy.push(s);
      else if (r !== CUDA_SUCCESS) firstError ??= this.driver.error('cuStreamQuery', r);
    }
    if (busy.length > 0 && firstError === undefined) {
      throw new CudaUsageError('RG_CUDA_BUSY', `cannot dispose: ${busy.length} stream(s) still have work in flight`, {
        hint:
          'signal the persistent kernel to stop and wait with waitForStream(stream, { timeoutMs }) before ' +
          'dispose()',
      });
    }
    const attempt = (call: string, r: number): void => {
      if (r !== CUDA_SUCCESS) firstError ??= this.driver.error(call, r);
    };
    for (const m of this.modules) attempt('cuModuleUnload', this.driver.api.cuModuleUnload(m));
    for (const d of this.dev.keys()) attempt('cuMemFree_v2', this.driver.api.cuMemFree_v2(d));
    for (const h of this.host.keys()) attempt('cuMemFreeHost', this.driver.api.cuMemFreeHost(h));
    for (const h of this.registered.keys()) attempt('cuMemHostUnregister', this.driver.api.cuMemHostUnregister(h));
    for (const s of this.streams) attempt('cuStreamDestroy_v2', this.driver.api.cuStreamDestroy_v2(s));
    this.modules.clear();
    this.async.clear();
    this.dev.clear();
    this.host.clear();
    this.registered.clear();
    this.streams.clear();
    this.params.free();
    // After a sticky fault the primary context stays poisoned while any reference to it lives (a probe,
    // another CudaContext): reset it, which destroys it for this process only (the GPU is untouched).
    if (opts.reset) attempt('cuDevicePrimaryCtxReset_v2', this.driver.api.cuDevicePrimaryCtxReset_v2(this.cuDevice));
    attempt('cuDevicePrimaryCtxRelease_v2', this.driver.api.cuDevicePrimaryCtxRelease_v2(this.cuDevice));
    this.released = true;
    // The primary context may now be gone (last reference): never assume it is still current.
    if (currentOnThisThread === this.handle) currentOnThisThread = null;
    if (firstError !== undefined) throw firstError;
  }

  private ownedMemory(m: DeviceBuffer | ModuleGlobal): void {
    if ('module' in m) this.owned(this.modules, m.module.handle, 'global (its module)');
    else this.owned(this.dev, m.devPtr, 'device buffer');
  }

  private owned(set: ReadonlySet<bigint> | ReadonlyMap<bigint, unknown>, handle: bigint, what: string): void {
    this.alive();
    if (!set.has(handle)) {
      throw new CudaUsageError(
        'RG_CUDA_FOREIGN_HANDLE',
        `this ${what} does not belong to this CudaContext (or was already freed)`,
        {
          hint: 'use handles only with the context that created them, and only once freed',
        },
      );
    }
  }
}

function positiveSize(bytes: number, call: string): void {
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new CudaUsageError(
      'RG_CUDA_BAD_SIZE',
      `${call}: size must be a positive integer number of bytes, got ${bytes}`,
    );
  }
}

function inRange(offset: number, len: number, cap: number, call: string): void {
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(len) || offset < 0 || len < 0 || offset + len > cap) {
    throw new CudaUsageError(
      'RG_CUDA_OUT_OF_BOUNDS',
      `${call}: [${offset}, ${offset + len}) is outside the ${cap}-byte buffer`,
    );
  }
}

function dim3(d: number | Dim3, what: string): Dim3 {
  const v: Dim3 = typeof d === 'number' ? [d, 1, 1] : d;
  for (const x of v) {
    if (!Number.isInteger(x) || x < 1 || x > 0x7fff_ffff) {
      throw new CudaUsageError(
        'RG_CUDA_BAD_LAUNCH',
        `${what} dimensions must be positive integers, got [${v.join(', ')}]`,
      );
    }
  }
  return v;
}

