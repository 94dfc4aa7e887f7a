import { KernelFaultError, RinggrainError, type ErrorOptions } from '@ringgrain/core/backend';

/** GPU_HOST_EXITED: the GPU host process of IsolatedCudaBackend ended (a fault killed it, or it crashed). */
export type GpuFaultCode = 'GPU_FAULT' | 'GPU_KERNEL_EXITED' | 'GPU_CONTEXT_POISONED' | 'GPU_HOST_EXITED';

/**
 * The GPU running a ring kernel faulted (illegal address, trap, launch failure: a sticky CUDA error seen
 * by a stream query off the hot path), or the kernel exited without being told to. It is a
 * KernelFaultError, so core rejects every pending ask of the kernel with it; `code` says which.
 */
export class GpuFaultError extends KernelFaultError {
  /** CUresult of the fault when the driver reported one (e.g. 700 = CUDA_ERROR_ILLEGAL_ADDRESS). */
  readonly cudaResult: number | undefined;
  /** The device ordinal of the GPU that faulted, where a class runs on several (CudaBackend `devices`). */
  readonly device: number | undefined;

  constructor(
    grain: string,
    code: GpuFaultCode,
    detail: string,
    opts: ErrorOptions & { cudaResult?: number; device?: number } = {},
  ) {
    super(grain, detail, {
      hint:
        code === 'GPU_KERNEL_EXITED'
          ? 'the persistent kernel ended by itself; terminate the grain and launch it again'
          : 'every pending ask was rejected; terminate the grain (and every other grain on this GPU) and launch ' +
            'again: the backend then creates a fresh CUDA context. Run compute-sanitizer to find the fault',
      ...opts,
    });
    (this as { code: string }).code = code;
    this.cudaResult = opts.cudaResult;
    this.device = opts.device;
  }
}

/**
 * A launch that could not become fully resident next to the kernels already running (persistent kernels must all be
 * resident at once).
 */
export class CoResidencyError extends RinggrainError {
  readonly requestedBlocks: number;
  readonly residentBlocks: number;
  readonly capacityBlocks: number;

  constructor(
    grain: string,
    detail: { requested: number; resident: number; capacity: number; perSM: number; sms: number; reservedSMs: number },
  ) {
    super(
      'GPU_CO_RESIDENCY',
      `grain "${grain}": its ring kernel needs ${detail.requested} blocks, but ${detail.resident} of the ` +
        `${detail.capacity} this backend may keep resident are taken ` +
        `(${detail.perSM} blocks/SM × (${detail.sms} SMs − ${detail.reservedSMs} left free)); a persistent ` +
        `kernel that cannot become resident would wait forever`,
      { hint: 'terminate another grain first, lower `partitions`, or lower `reserveSMs` in the CudaBackend options' },
    );
    this.requestedBlocks = detail.requested;
    this.residentBlocks = detail.resident;
    this.capacityBlocks = detail.capacity;
  }
}

/** A kernel did not exit within the stop timeout after STOP: its context cannot be freed safely. */
export class KernelStuckError extends RinggrainError {
  constructor(grain: string, ms: number) {
    super(
      'GPU_KERNEL_STUCK',
      `grain "${grain}": the ring kernel did not exit within ${ms} ms of STOP; its CUDA context is poisoned and ` +
        `its memory was left allocated (freeing it under a running kernel would block forever)`,
      {
        hint:
          'a handler loop ran past its iteration budget or a K2K target never drained; restart the process ' +
          'to reclaim the GPU',
      },
    );
  }
}

/**
 * A grain's module had to be loaded while ring kernels run. Loading a CUDA module waits for every
 * running kernel, and a persistent kernel never ends by itself: the load would hang the process.
 */
export class ModuleLoadWhileRunningError extends RinggrainError {
  constructor(grain: string, running: readonly string[]) {
    super(
      'GPU_LOAD_WHILE_RUNNING',
      `grain "${grain}": its CUDA module is not loaded and ring kernels are running (${running.join(', ')}); ` +
        `loading a module waits for every running kernel, which would never return`,
      {
        hint:
          'register every grain placed on this CudaBackend before system.start() (their modules are all ' +
          'loaded before the first ring kernel starts), or terminate the running grains first',
      },
    );
  }
}

/**
 * A grain's ring kernel needs more stack per thread than a CUDA thread may have. The decoded request
 * and reply of a turn live on the stack, so every element up to a `t.vec`/`t.array` bound counts.
 */
export class StackFrameTooLargeError extends RinggrainError {
  constructor(grain: string, frameBytes: number, limitBytes: number) {
    super(
      'GPU_STACK_FRAME',
      `grain "${grain}": its ring kernel needs ${frameBytes.toLocaleString('en')} bytes of stack per thread (the ` +
        `decoded request and reply, with arrays and vectors at their declared bounds), above the ` +
        `${limitBytes.toLocaleString('en')} bytes a CUDA thread may have`,
      {
        hint:
          "lower the bounds of t.vec/t.array fields in this grain's method schemas (each element of a bound " +
          'is reserved per thread), or place this grain on the cpu backend',
      },
    );
  }
}

/**
 * What went wrong with a CUDA kernel's persistent state (write-behind, core persist/):
 * GPU_STATE_STRING_KEYS: the kernel holds string-keyed actors by interned id only, so their keys cannot be read back;
 * GPU_STATE_UNAVAILABLE: the kernel faulted or was disposed, its states are gone;
 * GPU_STATE_GATHER: the driver failed the gather (launch or copy);
 * GPU_STATE_BAD_UPLOAD: an upload's rows do not match the state layout (stride, lengths, keys).
 */
export type GpuStateCode =
  | 'GPU_STATE_STRING_KEYS'
  | 'GPU_STATE_UNAVAILABLE'
  | 'GPU_STATE_GATHER'
  | 'GPU_STATE_BAD_UPLOAD';

const STATE_HINTS: Readonly<Record<GpuStateCode, string>> = {
  GPU_STATE_STRING_KEYS:
    'give the grain class integer keys, or place it on the cpu backend, to keep its state in a store',
  GPU_STATE_UNAVAILABLE:
    'the states still dirty on the GPU are lost with the kernel; terminate the grain and launch it again (stored ' +
    'states load on first activation)',
  GPU_STATE_GATHER:
    'the dirty marks of the actors not read out stay set: the next flush tries again; see the cause for the ' +
    'driver error',
  GPU_STATE_BAD_UPLOAD:
    'upload rows of the grain state layout size (layoutOf(grain.state).size), one key per row, and a found flag ' +
    'per row',
};

export class GpuStateError extends RinggrainError {
  constructor(grain: string, code: GpuStateCode, detail: string, opts: ErrorOptions = {}) {
    super(code, `grain "${grain}": ${detail}`, { hint: STATE_HINTS[code], ...opts });
  }
}

/** A CudaBackend option is out of range (as CpuBackendOptionsError is for the CPU backend). */
export class CudaBackendOptionsError extends RinggrainError {
  constructor(detail: string) {
    super('CUDA_BACKEND_OPTIONS', `CudaBackend: ${detail}`, {
      hint: 'see CudaBackendOptions for each option\'s range, or leave it out for its default',
    });
  }
}

/**
 * A grain class cannot be spread over this backend's lane groups (`devices`): GPU_NO_PEER_ACCESS, two of the
 * listed GPUs cannot map each other's memory, so a K2K send from one to a key of the other would have to cross
 * the host (not built: the class is refused at launch).
 */
export type LaneGroupCode = 'GPU_NO_PEER_ACCESS';

export class LaneGroupError extends RinggrainError {
  /** The device ordinals concerned (from, to). */
  readonly devices: readonly number[];

  constructor(grain: string, code: LaneGroupCode, detail: string, devices: readonly number[]) {
    super(code, `grain "${grain}": ${detail}`, {
      hint:
        'list only GPUs that reach each other peer to peer (NVLink, or PCIe P2P: `nvidia-smi topo -m`), or ' +
        'give the class a CudaBackend of one device',
    });
    this.devices = devices;
  }
}
