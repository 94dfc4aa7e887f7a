/**
 * A CudaContext's memory: pinned host memory (PORTABLE | DEVICEMAP, never write-combined: the host reads it),
 * device allocations (plain and stream-ordered), fills and copies, and the device's free memory.
 */
import koffi from 'koffi';
import {
  CU_MEMHOSTALLOC_DEVICEMAP,
  CU_MEMHOSTALLOC_PORTABLE,
  CU_MEMHOSTREGISTER_DEVICEMAP,
  CU_MEMHOSTREGISTER_PORTABLE,
  CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
  CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
  CUDA_SUCCESS,
} from './constants.ts';
import { inRange, positiveSize } from './context-core.ts';
import type { ContextCore } from './context-core.ts';
import type { CudaStream, DeviceBuffer, HostBuffer, MemInfo, ModuleGlobal } from './context-types.ts';

export class ContextMemory {
  constructor(private readonly core: ContextCore) {}

  allocHost(bytes: number): HostBuffer {
    const c = this.core;
    positiveSize(bytes, 'allocHost');
    c.makeCurrent();
    c.check(
      'cuMemHostAlloc',
      c.driver.api.cuMemHostAlloc(c.out64, bytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
    );
    const hb = this.deviceView(c.out64[0] ?? 0n, bytes, (p) => c.driver.api.cuMemFreeHost(p));
    new Uint8Array(hb.buffer).fill(0);
    c.host.set(hb.hostPtr, hb);
    return hb;
  }

  /** The device address and a zero-copy view of page-locked host memory; on failure `undo` releases it. */
  private deviceView(hostPtr: bigint, bytes: number, undo: (p: bigint) => number): HostBuffer {
    const c = this.core;
    const r = c.driver.api.cuMemHostGetDevicePointer_v2(c.out64, hostPtr, 0);
    if (r !== CUDA_SUCCESS) {
      const err = c.driver.error('cuMemHostGetDevicePointer_v2', r);
      undo(hostPtr);
      throw err;
    }
    return { hostPtr, devPtr: c.out64[0] ?? 0n, bytes, buffer: koffi.view(hostPtr, bytes) };
  }

  freeHost(buf: HostBuffer): void {
    const c = this.core;
    c.owned(c.host, buf.hostPtr, 'pinned host buffer');
    c.makeCurrent();
    c.check('cuMemFreeHost', c.driver.api.cuMemFreeHost(buf.hostPtr));
    c.host.delete(buf.hostPtr);
  }

  registerHost(hostPtr: bigint, bytes: number): HostBuffer {
    const c = this.core;
    positiveSize(bytes, 'registerHost');
    c.makeCurrent();
    c.check(
      'cuMemHostRegister_v2',
      c.driver.api.cuMemHostRegister_v2(hostPtr, bytes, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP),
    );
    const hb = this.deviceView(hostPtr, bytes, (p) => c.driver.api.cuMemHostUnregister(p));
    c.registered.set(hostPtr, hb);
    return hb;
  }

  unregisterHost(buf: HostBuffer): void {
    const c = this.core;
    c.owned(c.registered, buf.hostPtr, 'registered host memory');
    c.makeCurrent();
    c.check('cuMemHostUnregister', c.driver.api.cuMemHostUnregister(buf.hostPtr));
    c.registered.delete(buf.hostPtr);
  }

  allocDevice(bytes: number): DeviceBuffer {
    const c = this.core;
    positiveSize(bytes, 'allocDevice');
    c.makeCurrent();
    c.check('cuMemAlloc_v2', c.driver.api.cuMemAlloc_v2(c.out64, bytes));
    const db: DeviceBuffer = { devPtr: c.out64[0] ?? 0n, bytes };
    c.dev.set(db.devPtr, db);
    return db;
  }

  allocDeviceAsync(bytes: number, stream: CudaStream): DeviceBuffer {
    const c = this.core;
    positiveSize(bytes, 'allocDeviceAsync');
    c.makeCurrent();
    c.check('cuMemAllocAsync', c.driver.api.cuMemAllocAsync(c.out64, bytes, stream.handle));
    const db: DeviceBuffer = { devPtr: c.out64[0] ?? 0n, bytes };
    c.dev.set(db.devPtr, db);
    c.async.add(db.devPtr);
    return db;
  }

  freeDeviceAsync(buf: DeviceBuffer, stream: CudaStream): void {
    const c = this.core;
    c.owned(c.dev, buf.devPtr, 'device buffer');
    c.makeCurrent();
    c.check('cuMemFreeAsync', c.driver.api.cuMemFreeAsync(buf.devPtr, stream.handle));
    c.dev.delete(buf.devPtr);
    c.async.delete(buf.devPtr);
  }

  trimMemoryPool(): void {
    const c = this.core;
    c.makeCurrent();
    c.check('cuDeviceGetDefaultMemPool', c.driver.api.cuDeviceGetDefaultMemPool(c.out64, c.cuDevice));
    c.check('cuMemPoolTrimTo', c.driver.api.cuMemPoolTrimTo(c.out64[0] ?? 0n, 0));
  }

  freeDevice(buf: DeviceBuffer): void {
    const c = this.core;
    c.owned(c.dev, buf.devPtr, 'device buffer');
    c.makeCurrent();
    c.check('cuMemFree_v2', c.driver.api.cuMemFree_v2(buf.devPtr));
    c.dev.delete(buf.devPtr);
  }

  memsetDevice(buf: DeviceBuffer, value: number, bytes: number, offset: number): void {
    const c = this.core;
    c.owned(c.dev, buf.devPtr, 'device buffer');
    inRange(offset, bytes, buf.bytes, 'memsetDevice');
    c.makeCurrent();
    c.check('cuMemsetD8_v2', c.driver.api.cuMemsetD8_v2(buf.devPtr + BigInt(offset), value & 0xff, bytes));
  }

  copyToDevice(dst: DeviceBuffer | ModuleGlobal, src: ArrayBufferView, dstOffset: number): void {
    const c = this.core;
    c.ownedMemory(dst);
    inRange(dstOffset, src.byteLength, dst.bytes, 'copyToDevice');
    c.makeCurrent();
    c.check('cuMemcpyHtoD_v2', c.driver.api.cuMemcpyHtoD_v2(dst.devPtr + BigInt(dstOffset), src, src.byteLength));
  }

  copyFromDevice(dst: ArrayBufferView, src: DeviceBuffer | ModuleGlobal, srcOffset: number): void {
    const c = this.core;
    c.ownedMemory(src);
    inRange(srcOffset, dst.byteLength, src.bytes, 'copyFromDevice');
    c.makeCurrent();
    c.check('cuMemcpyDtoH_v2', c.driver.api.cuMemcpyDtoH_v2(dst, src.devPtr + BigInt(srcOffset), dst.byteLength));
  }

  memsetDeviceAsync(buf: DeviceBuffer, value: number, stream: CudaStream, bytes: number, offset: number): void {
    const c = this.core;
    c.owned(c.dev, buf.devPtr, 'device buffer');
    c.owned(c.streams, stream.handle, 'stream');
    inRange(offset, bytes, buf.bytes, 'memsetDeviceAsync');
    c.makeCurrent();
    c.check(
      'cuMemsetD8Async',
      c.driver.api.cuMemsetD8Async(buf.devPtr + BigInt(offset), value & 0xff, bytes, stream.handle),
    );
  }

  copyToDeviceAsync(dst: DeviceBuffer, src: ArrayBufferView, stream: CudaStream, dstOffset: number): void {
    const c = this.core;
    c.ownedMemory(dst);
    c.owned(c.streams, stream.handle, 'stream');
    inRange(dstOffset, src.byteLength, dst.bytes, 'copyToDeviceAsync');
    c.makeCurrent();
    c.check(
      'cuMemcpyHtoDAsync_v2',
      c.driver.api.cuMemcpyHtoDAsync_v2(dst.devPtr + BigInt(dstOffset), src, src.byteLength, stream.handle),
    );
  }

  copyFromDeviceAsync(dst: ArrayBufferView, src: DeviceBuffer, stream: CudaStream, srcOffset: number): void {
    const c = this.core;
    c.ownedMemory(src);
    c.owned(c.streams, stream.handle, 'stream');
    inRange(srcOffset, dst.byteLength, src.bytes, 'copyFromDeviceAsync');
    c.makeCurrent();
    c.check(
      'cuMemcpyDtoHAsync_v2',
      c.driver.api.cuMemcpyDtoHAsync_v2(dst, src.devPtr + BigInt(srcOffset), dst.byteLength, stream.handle),
    );
  }

  memInfo(): MemInfo {
    const c = this.core;
    const api = c.driver.api;
    c.makeCurrent();
    c.check('cuMemGetInfo_v2', api.cuMemGetInfo_v2(c.out64, c.out64b));
    const free = { freeBytes: Number(c.out64[0] ?? 0n), totalBytes: Number(c.out64b[0] ?? 0n) };
    // The stream-ordered pool's reservation counts as used device memory until trimmed.
    c.check('cuDeviceGetDefaultMemPool', api.cuDeviceGetDefaultMemPool(c.out64, c.cuDevice));
    const pool = c.out64[0] ?? 0n;
    c.check('cuMemPoolGetAttribute', api.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, c.out64b));
    const poolReservedBytes = Number(c.out64b[0] ?? 0n);
    c.check('cuMemPoolGetAttribute', api.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, c.out64b));
    return { ...free, poolReservedBytes, poolUsedBytes: Number(c.out64b[0] ?? 0n) };
  }
}
