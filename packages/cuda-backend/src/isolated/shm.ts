/**
 * Shared memory between the application process and its GPU host process: a file in /dev/shm mapped
 * MAP_SHARED by both (mmap through koffi; Node has no mmap). The GPU host page-locks and maps the same
 * pages into the device (cuMemHostRegister), so the rings the GPU polls are ones the application writes.
 */
import { closeSync, ftruncateSync, openSync, statfsSync, unlinkSync } from 'node:fs';
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
  /** Returns 0 or the error number (it does not set errno). */
  posix_fallocate(fd: number, off: number, len: number): number;
}
let libc: Libc | undefined;
function loadLibc(): Libc {
  if (libc) return libc;
  if (process.platform !== 'linux')
    throw new SharedMemoryError(
      'process-isolated CUDA needs Linux (/dev/shm and mmap)',
      'run the GPU grains with CudaBackend in the application process',
    );
  const lib = koffi.load('libc.so.6');
  libc = {
    mmap: lib.func(
      'uint64_t mmap(uint64_t addr, size_t len, int prot, int flags, int fd, int64_t off)',
    ) as Libc['mmap'],
    munmap: lib.func('int munmap(uint64_t addr, size_t len)') as Libc['munmap'],
    posix_fallocate: lib.func('int posix_fallocate(int fd, int64_t off, int64_t len)') as Libc['posix_fallocate'],
  };
  return libc;
}

export interface SharedMapping {
  /** The file's name while it has one (createShared unlinks it at once: the GPU host maps `fd`). */
  readonly path: string;
  /**
   * createShared: an open descriptor of the file, for the GPU host process to inherit (fork stdio) and
   * map; closeFd() once it has. -1 for a mapping of a file opened by path.
   */
  readonly fd: number;
  closeFd(): void;
  readonly bytes: number;
  readonly address: bigint;
  /** Zero-copy view of the mapping (koffi.view); invalid after unmap(). */
  readonly buffer: ArrayBuffer;
  unmap(): void;
}

/** Maps `fd`; closes it unless `keepFd` (the mapping keeps the file's pages alive). */
function map(path: string, fd: number, bytes: number, keepFd = false): SharedMapping {
  const c = loadLibc();
  const address = c.mmap(0n, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (!keepFd || address === MAP_FAILED || address === 0n) closeSync(fd);
  if (address === MAP_FAILED || address === 0n)
    throw new SharedMemoryError(
      `mmap of ${bytes} bytes of ${path} failed`,
      'check free memory in /dev/shm (df /dev/shm) or lower arenaBytes',
    );
  let mapped = true;
  let open = keepFd;
  return {
    path,
    fd: keepFd ? fd : -1,
    closeFd() {
      if (!open) return;
      open = false;
      closeSync(fd);
    },
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

/**
 * Creates and maps a new zero-filled shared file of `bytes` (a multiple of the page size), its pages
 * reserved up front (posix_fallocate): a /dev/shm too small fails here, typed, rather than as a SIGBUS
 * at the first touch past its end. The name is removed at once: the mapping and the returned descriptor
 * (for the GPU host process to inherit) keep the file, so a process killed at any point leaves none.
 */
export function createShared(bytes: number): SharedMapping {
  const path = `/dev/shm/ringgrain-${process.pid}-${randomBytes(6).toString('hex')}`;
  const c = loadLibc();
  let fd = -1;
  try {
    fd = openSync(path, 'wx+', 0o600);
    ftruncateSync(fd, bytes);
    const rc = c.posix_fallocate(fd, 0, bytes);
    if (rc !== 0) throw Object.assign(new Error(`posix_fallocate: ${errnoName(rc)}`), { errno: rc });
  } catch (e) {
    if (fd >= 0) closeSync(fd);
    unlinkShared(path);
    const free = freeBytes();
    throw new SharedMemoryError(
      `cannot reserve ${bytes} bytes of shared memory in /dev/shm: ` +
        `${(e as Error).message}${free === undefined ? '' : ` (${free} bytes free there)`}`,
      'give /dev/shm room (df /dev/shm; a container: --shm-size) or lower arenaBytes in the IsolatedCudaBackend ' +
        'options',
      e,
    );
  }
  try {
    return map(path, fd, bytes, true);
  } finally {
    unlinkShared(path);
  }
}

function errnoName(rc: number): string {
  return rc === 28
    ? 'ENOSPC (no space left)'
    : rc === 27
      ? 'EFBIG (file too large)'
      : rc === 22
        ? 'EINVAL'
        : rc === 95
          ? 'EOPNOTSUPP'
          : `errno ${rc}`;
}

function freeBytes(): number | undefined {
  try {
    const s = statfsSync('/dev/shm');
    return s.bavail * s.bsize;
  } catch {
    return undefined;
  }
}

/** The descriptor the GPU host process inherits the arena's file as (fork stdio index). */
export const ARENA_FD = 4;

/** Maps a shared file this process inherited as descriptor `fd` (the GPU host: fork stdio). */
export function openSharedFd(fd: number, bytes: number): SharedMapping {
  return map(`fd ${fd}`, fd, bytes);
}

/** Maps a shared file another process created. */
export function openShared(path: string, bytes: number): SharedMapping {
  let fd: number;
  try {
    fd = openSync(path, 'r+');
  } catch (e) {
    throw new SharedMemoryError(
      `cannot open the shared memory ${path}: ${(e as Error).message}`,
      'the application process creates it before starting the GPU host; it must still exist',
      e,
    );
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
