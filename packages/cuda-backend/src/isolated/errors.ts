import { RinggrainError } from '@ringgrain/core/backend';

/** /dev/shm or mmap failed while setting up the memory shared with the GPU host process. */
export class SharedMemoryError extends RinggrainError {
  constructor(message: string, hint: string, cause?: unknown) {
    super('GPU_HOST_SHARED_MEMORY', message, { hint, ...(cause === undefined ? {} : { cause }) });
  }
}

/** The shared arena has no room for another kernel's rings. */
export class ArenaFullError extends RinggrainError {
  constructor(needed: number, total: number, inUse: number) {
    super('GPU_HOST_ARENA_FULL', `the shared ring arena cannot fit ${needed} more bytes (${inUse} of ${total} in use)`, {
      hint: 'raise arenaBytes in the IsolatedCudaBackend options, or give grains smaller rings (ringCapacity, replyCapacity, slotSize)',
    });
  }
}

/** The GPU host process did not answer in time, or failed an operation (the message says which). */
export class GpuHostError extends RinggrainError {
  constructor(message: string, code = 'GPU_HOST', originalName?: string) {
    super(code, originalName && originalName !== 'Error' ? `${originalName}: ${message}` : message, {
      hint: 'see the GPU host process output on stderr; a launch after a failure starts a new GPU host',
    });
  }
}
