/**
 * CudaContext: the primary context of one device, and every resource created through it.
 *
 * - The primary context is retained (cuDevicePrimaryCtxRetain), never created: cuCtxCreate changed ABI
 *   (_v4 in CUDA 13), and the primary context is the one other CUDA users in the process share.
 * - Streams are always CU_STREAM_NON_BLOCKING; launches refuse any stream this context did not create,
 *   so nothing ever runs on the legacy default stream, which would wait behind a persistent kernel.
 * - Every allocation, module and stream is tracked, so stats() measures leaks and dispose() frees all.
 * - Pinned host memory is PORTABLE | DEVICEMAP and never write-combined: the host reads it.
 *
 * The class is the facade: streams (context-streams.ts), memory (context-memory.ts), modules and launches
 * (context-modules.ts) share the tracked handles of context-core.ts; the context's life and its peers are here.
 */
import { CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, CUDA_SUCCESS } from './constants.ts';
import { ContextCore } from './context-core.ts';
import { ContextMemory } from './context-memory.ts';
import { ContextModules } from './context-modules.ts';
import { ContextStreams } from './context-streams.ts';
import type {
  ContextStats,
  CudaFunction,
  CudaModule,
  CudaStream,
  DeviceBuffer,
  FunctionAttributes,
  HostBuffer,
  LaunchConfig,
  MemInfo,
  ModuleGlobal,
  StreamState,
} from './context-types.ts';
import { loadCudaDriver } from './driver.ts';
import type { CudaDriver, DeviceInfo } from './driver.ts';
import { CudaUsageError } from './errors.ts';
import type { KernelArg } from './kernel-args.ts';
import type { DiscoveryEnv } from './library.ts';

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
} from './context-types.ts';

export class CudaContext {
  readonly driver: CudaDriver;
  readonly device: DeviceInfo;
  /** The CUdevice handle. */
  readonly cuDevice: number;
  /** The CUcontext handle (the device's primary context). */
  readonly handle: bigint;

  private readonly core: ContextCore;
  private readonly streams: ContextStreams;
  private readonly memory: ContextMemory;
  private readonly modules: ContextModules;

  private constructor(driver: CudaDriver, ordinal: number) {
    this.driver = driver;
    this.device = driver.deviceInfo(ordinal);
    this.cuDevice = driver.device(ordinal);
    const out = new BigUint64Array(1);
    driver.check('cuDevicePrimaryCtxRetain', driver.api.cuDevicePrimaryCtxRetain(out, this.cuDevice));
    this.handle = out[0] ?? 0n;
    this.core = new ContextCore(driver, this.cuDevice, this.handle);
    try {
      this.makeCurrent();
    } catch (e) {
      driver.api.cuDevicePrimaryCtxRelease_v2(this.cuDevice);
      throw e;
    }
    this.streams = new ContextStreams(this.core);
    this.memory = new ContextMemory(this.core);
    this.modules = new ContextModules(this.core);
  }

  /** Retain device `device`'s primary context (default 0). Throws CudaUnavailableError without CUDA. */
  static create(opts: { device?: number; env?: DiscoveryEnv } = {}): CudaContext {
    const driver = loadCudaDriver(opts.env ? { env: opts.env } : {});
    return new CudaContext(driver, opts.device ?? 0);
  }

  get disposed(): boolean {
    return this.core.released;
  }

  /** Make this context current on the calling thread (done implicitly by every method). */
  makeCurrent(): void {
    this.core.makeCurrent();
  }

  // ---- streams -------------------------------------------------------------------------------

  createStream(): CudaStream {
    return this.streams.create();
  }

  destroyStream(stream: CudaStream): void {
    this.streams.destroy(stream);
  }

  /**
   * Whether the stream's work has finished, without blocking. A kernel fault surfaces here as a
   * CudaError (sticky: `err.sticky`), which is how a dead persistent kernel is detected off the hot path.
   */
  streamQuery(stream: CudaStream): StreamState {
    return this.streams.query(stream);
  }

  /**
   * Block until the stream's work finishes. Only for work known to end (setup kernels, tests): never
   * on a stream whose persistent kernel has not been told to stop — use waitForStream for that.
   */
  synchronize(stream: CudaStream): void {
    this.streams.synchronize(stream);
  }

  /** Poll streamQuery until complete (true) or `timeoutMs` passes (false). Never blocks the event loop. */
  waitForStream(stream: CudaStream, opts: { timeoutMs: number; pollMs?: number }): Promise<boolean> {
    return this.streams.waitFor(stream, opts);
  }

  // ---- memory --------------------------------------------------------------------------------

  /** Pinned host memory mapped into the device's address space, zero-filled. Page-aligned. */
  allocHost(bytes: number): HostBuffer {
    return this.memory.allocHost(bytes);
  }

  freeHost(buf: HostBuffer): void {
    this.memory.freeHost(buf);
  }

  /**
   * Page-locks and maps existing host memory (e.g. a shared-memory mapping another process also maps)
   * into the device's address space. Contents are left as they are. Unregister before unmapping it.
   */
  registerHost(hostPtr: bigint, bytes: number): HostBuffer {
    return this.memory.registerHost(hostPtr, bytes);
  }

  unregisterHost(buf: HostBuffer): void {
    this.memory.unregisterHost(buf);
  }

  allocDevice(bytes: number): DeviceBuffer {
    return this.memory.allocDevice(bytes);
  }

  /**
   * Stream-ordered device memory (cuMemAllocAsync): unlike cuMemFree, its free never waits for other
   * streams' kernels, so a grain can be terminated while other ring kernels keep running.
   */
  allocDeviceAsync(bytes: number, stream: CudaStream): DeviceBuffer {
    return this.memory.allocDeviceAsync(bytes, stream);
  }

  /** Frees memory from allocDeviceAsync, ordered after the work already on `stream`. */
  freeDeviceAsync(buf: DeviceBuffer, stream: CudaStream): void {
    this.memory.freeDeviceAsync(buf, stream);
  }

  /** Returns what the stream-ordered allocator keeps reserved to the device (call when no kernel runs). */
  trimMemoryPool(): void {
    this.memory.trimMemoryPool();
  }

  freeDevice(buf: DeviceBuffer): void {
    this.memory.freeDevice(buf);
  }

  /** Fill device memory (setup only: it is ordered with the legacy stream, not with ours). */
  memsetDevice(buf: DeviceBuffer, value: number, bytes = buf.bytes, offset = 0): void {
    this.memory.memsetDevice(buf, value, bytes, offset);
  }

  /** Synchronous host → device copy: setup only, never on a per-message path. */
  copyToDevice(dst: DeviceBuffer | ModuleGlobal, src: ArrayBufferView, dstOffset = 0): void {
    this.memory.copyToDevice(dst, src, dstOffset);
  }

  /** Synchronous device → host copy: setup and checks only. */
  copyFromDevice(dst: ArrayBufferView, src: DeviceBuffer | ModuleGlobal, srcOffset = 0): void {
    this.memory.copyFromDevice(dst, src, srcOffset);
  }

  /**
   * Stream-ordered setup on a non-blocking stream (never the legacy stream while persistent kernels
   * run: the legacy stream waits for them). Memset then launch on the same stream needs no wait; anything else is
   * followed by `synchronize(stream)` on that setup stream (finite work only).
   */
  memsetDeviceAsync(buf: DeviceBuffer, value: number, stream: CudaStream, bytes = buf.bytes, offset = 0): void {
    this.memory.memsetDeviceAsync(buf, value, stream, bytes, offset);
  }

  /** Host → device on `stream`; `src` must stay untouched until the stream is synchronized. */
  copyToDeviceAsync(dst: DeviceBuffer, src: ArrayBufferView, stream: CudaStream, dstOffset = 0): void {
    this.memory.copyToDeviceAsync(dst, src, stream, dstOffset);
  }

  /** Device → host on `stream`; read `dst` only after synchronizing the stream. */
  copyFromDeviceAsync(dst: ArrayBufferView, src: DeviceBuffer, stream: CudaStream, srcOffset = 0): void {
    this.memory.copyFromDeviceAsync(dst, src, stream, srcOffset);
  }

  // ---- peers ---------------------------------------------------------------------------------

  /** Whether this context's device can read and write `peer`'s device memory (cuDeviceCanAccessPeer). */
  canAccessPeer(peer: CudaContext): boolean {
    const c = this.core;
    c.makeCurrent();
    c.check('cuDeviceCanAccessPeer', this.driver.api.cuDeviceCanAccessPeer(c.out32, this.cuDevice, peer.cuDevice));
    return c.out32[0] === 1;
  }

  /**
   * Maps `peer`'s device memory into this context (cuCtxEnablePeerAccess): kernels here may then load, store
   * and run atomics on the peer's allocations. Idempotent; the mapping lasts as long as both contexts.
   */
  enablePeerAccess(peer: CudaContext): void {
    this.core.makeCurrent();
    const r = this.driver.api.cuCtxEnablePeerAccess(peer.handle, 0);
    if (r !== CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) this.core.check('cuCtxEnablePeerAccess', r);
  }

  memInfo(): MemInfo {
    return this.memory.memInfo();
  }

  stats(): ContextStats {
    return this.core.stats();
  }

  // ---- modules and launches ------------------------------------------------------------------

  /** Load a cubin (no JIT) or NUL-terminated PTX (driver JIT: slow, cache cubins instead). */
  loadModule(image: Uint8Array): CudaModule {
    return this.modules.load(image);
  }

  unloadModule(mod: CudaModule): void {
    this.modules.unload(mod);
  }

  getFunction(mod: CudaModule, name: string): CudaFunction {
    return this.modules.getFunction(mod, name);
  }

  /** A `__device__` global of the module (declare it extern "C" to keep its name). */
  getGlobal(mod: CudaModule, name: string): ModuleGlobal {
    return this.modules.getGlobal(mod, name);
  }

  /** Launch asynchronously on `config.stream`. Arguments are built with `arg.u32(…)`, `arg.ptr(…)`, … */
  launch(fn: CudaFunction, config: LaunchConfig, args: readonly KernelArg[]): void {
    this.modules.launch(fn, config, args);
  }

  /** cuOccupancyMaxActiveBlocksPerMultiprocessor: how many blocks of this size fit on one SM. */
  maxActiveBlocksPerMultiprocessor(fn: CudaFunction, blockSize: number, dynamicSharedMemBytes = 0): number {
    return this.modules.maxActiveBlocksPerMultiprocessor(fn, blockSize, dynamicSharedMemBytes);
  }

  functionAttribute(fn: CudaFunction, attrib: number): number {
    return this.modules.functionAttribute(fn, attrib);
  }

  functionAttributes(fn: CudaFunction): FunctionAttributes {
    return this.modules.functionAttributes(fn);
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
    if (this.core.released) return;
    let firstError: unknown;
    try {
      this.core.makeCurrent();
    } catch (e) {
      firstError = e;
    }
    const attempt = (call: string, r: number): void => {
      if (r !== CUDA_SUCCESS) firstError ??= this.driver.error(call, r);
    };
    const busy = this.streams.busy(attempt);
    if (busy.length > 0 && firstError === undefined) {
      throw new CudaUsageError('RG_CUDA_BUSY', `cannot dispose: ${busy.length} stream(s) still have work in flight`, {
        hint:
          'signal the persistent kernel to stop and wait with waitForStream(stream, { timeoutMs }) before ' +
          'dispose()',
      });
    }
    this.core.releaseAll(attempt);
    this.modules.free();
    // After a sticky fault the primary context stays poisoned while any reference to it lives (a probe,
    // another CudaContext): reset it, which destroys it for this process only (the GPU is untouched).
    if (opts.reset) attempt('cuDevicePrimaryCtxReset_v2', this.driver.api.cuDevicePrimaryCtxReset_v2(this.cuDevice));
    attempt('cuDevicePrimaryCtxRelease_v2', this.driver.api.cuDevicePrimaryCtxRelease_v2(this.cuDevice));
    this.core.released = true;
    // The primary context may now be gone (last reference): never assume it is still current.
    this.core.forgetCurrent();
    if (firstError !== undefined) throw firstError;
  }
}
