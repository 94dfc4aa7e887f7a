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
    super(
      'GPU_HOST_ARENA_FULL',
      `the shared ring arena cannot fit ${needed} more bytes (${inUse} of ${total} in use)`,
      {
        hint:
          'raise arenaBytes in the IsolatedCudaBackend options, or give grains smaller rings (ringCapacity, ' +
          'replyCapacity, slotSize)',
      },
    );
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

/**
 * A frame between the application and its GPU host process is malformed (a field missing or of the wrong kind, a
 * batch whose lengths disagree, an unknown op or kernel). The side that read it refuses it whole: nothing in it is
 * acted on, and the application stops that GPU host (a frame it cannot read may have carried actors' states).
 */
export class GpuHostProtocolError extends RinggrainError {
  constructor(direction: 'from the GPU host' | 'to the GPU host', op: string, detail: string) {
    super('GPU_HOST_PROTOCOL', `a frame ${direction} is malformed (op ${op}): ${detail}`, {
      hint:
        'the application and its GPU host process must load the same @ringgrain/cuda-backend (check that one copy ' +
        'is installed); the GPU host was stopped, and the next launch starts a new one',
    });
  }
}
