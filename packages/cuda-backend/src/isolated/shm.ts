/**
 * Shared memory between the application process and its GPU host process: a file in /dev/shm mapped
 * MAP_SHARED by both (mmap through koffi; Node has no mmap). The GPU host page-locks and maps the same
 * pages into the device (cuMemHostRegister), so the rings the GPU polls are ones the application writes.
 */
import { closeSync, ftruncateSync, openSync, unlinkSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import koffi from 'koffi';
import { SharedMemoryError } from './errors.ts';

const PROT_READ = 1;
const PROT_WRITE = 2;
const MAP_SHARED = 1;
const MAP_FAILED = 0xffffffffffffffffn;

interface Libc {
  mmap(addr: bigint, len: number, prot: number, flags: number, fd: number, off: number): bigint;
  munmap(addr: bigint, len: number): number;
}
let libc: Libc | undefined;
function loadLibc(): Libc {
  if (libc) return libc;
  if (process.platform !== 'linux') throw new SharedMemoryError('process-isolated CUDA needs Linux (/dev/shm and mmap)', 'run the GPU grains with CudaBackend in the application process');
  const lib = koffi.load('libc.so.6');
  libc = {
    mmap: lib.func('uint64_t mmap(uint64_t addr, size_t len, int prot, int flags, int fd, int64_t off)') as Libc['mmap'],
    munmap: lib.func('int munmap(uint64_t addr, size_t len)') as Libc['munmap'],
  };
  return libc;
}

export interface SharedMapping {
  readonly path: string;
  readonly bytes: number;
  readonly address: bigint;
  /** Zero-copy view of the mapping (koffi.view); invalid after unmap(). */
  readonly buffer: ArrayBuffer;
  unmap(): void;
}

function map(path: string, fd: number, bytes: number): SharedMapping {
  const c = loadLibc();
  const address = c.mmap(0n, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  closeSync(fd); // the mapping keeps the file's pages alive
  if (address === MAP_FAILED || address === 0n) throw new SharedMemoryError(`mmap of ${bytes} bytes of ${path} failed`, 'check free memory in /dev/shm (df /dev/shm) or lower arenaBytes');
  let mapped = true;
  return {
    path,
    bytes,
    address,
    buffer: koffi.view(address, bytes),
    unmap() {
      if (!mapped) return;
      mapped = false;
      c.munmap(address, bytes);
    },
  };
}

/** Creates and maps a new zero-filled shared file of `bytes` (a multiple of the page size). */
export function createShared(bytes: number): SharedMapping {
  const path = `/dev/shm/ringgrain-${process.pid}-${randomBytes(6).toString('hex')}`;
  let fd: number;
  try {
    fd = openSync(path, 'wx+', 0o600);
    ftruncateSync(fd, bytes);
  } catch (e) {
    throw new SharedMemoryError(`cannot create ${bytes} bytes of shared memory at ${path}: ${(e as Error).message}`, 'check that /dev/shm exists and has room (df /dev/shm), or lower arenaBytes', e);
  }
  try {
    return map(path, fd, bytes);
  } catch (e) {
    unlinkSync(path);
    throw e;
  }
}

/** Maps a shared file another process created. */
export function openShared(path: string, bytes: number): SharedMapping {
  let fd: number;
  try {
    fd = openSync(path, 'r+');
  } catch (e) {
    throw new SharedMemoryError(`cannot open the shared memory ${path}: ${(e as Error).message}`, 'the application process creates it before starting the GPU host; it must still exist', e);
  }
  return map(path, fd, bytes);
}

/** Removes the file's name; mappings stay valid until unmapped. */
export function unlinkShared(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}
