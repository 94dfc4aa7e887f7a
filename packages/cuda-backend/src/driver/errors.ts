/**
 * Typed errors of the CUDA driver layer.
 *
 * Every error carries a stable `code` (for CUDA calls: the CUresult name that cuGetErrorName gives),
 * a `hint` saying what to do, and the `cause` when one exists. They all extend core's RinggrainError,
 * so callers can catch every Ringgrain failure one way; CudaDriverErrorBase marks this layer's errors.
 */
import { RinggrainError } from '@ringgrain/core/backend';
import type { ErrorOptions } from '@ringgrain/core/backend';

export type DriverErrorOptions = ErrorOptions;

export class CudaDriverErrorBase extends RinggrainError {
  constructor(code: string, message: string, opts: DriverErrorOptions = {}) {
    super(code, message, opts);
  }
}

/**
 * CUresult codes after which the context is unusable ("sticky" errors): every later call in that
 * context fails too. Recovery needs the primary context released to zero references (or reset)
 * and everything reloaded — see CudaContext.dispose.
 */
const STICKY_CODES: ReadonlySet<number> = new Set([
  700, // CUDA_ERROR_ILLEGAL_ADDRESS
  710, // CUDA_ERROR_ASSERT
  714, // CUDA_ERROR_HARDWARE_STACK_ERROR
  715, // CUDA_ERROR_ILLEGAL_INSTRUCTION
  716, // CUDA_ERROR_MISALIGNED_ADDRESS
  717, // CUDA_ERROR_INVALID_ADDRESS_SPACE
  718, // CUDA_ERROR_INVALID_PC
  719, // CUDA_ERROR_LAUNCH_FAILED
]);

/** What to do about the most common CUresults; the hint of a CudaError. */
function hintFor(result: number, call: string): string {
  switch (result) {
    case 1:
      return `an argument of ${call} is invalid (null handle, zero size, wrong flags); check the values passed`;
    case 2:
      return (
        'the device is out of memory: free allocations (ctx.stats() shows what this context holds) or ' +
        'allocate less'
      );
    case 3:
      return 'cuInit was not called or failed; open the driver through loadCudaDriver()';
    case 4:
      return 'the driver is shutting down (process exit); do not call CUDA from exit handlers';
    case 34:
      return (
        'the CUDA stub library (…/stubs/libcuda.so) was loaded; point RINGGRAIN_LIBCUDA at the real ' +
        'libcuda.so.1 of the installed driver'
      );
    case 35:
      return 'the installed NVIDIA driver is older than this CUDA code needs; update the driver';
    case 100:
      return 'no CUDA-capable device is visible; check nvidia-smi and CUDA_VISIBLE_DEVICES';
    case 101:
      return 'the device ordinal does not exist; use an ordinal below cuDeviceGetCount()';
    case 201:
    case 709:
      return 'no valid current context: create a CudaContext and call CUDA through it';
    case 209:
      return 'the cubin was built for another architecture; compile with -arch=sm_XX of this device (ctx.device.arch)';
    case 218:
    case 222:
      return 'the PTX is invalid or newer than this driver; compile straight to cubin with NVRTC for the device arch';
    case 500:
      return 'the named symbol is not in the module; declare kernels and globals extern "C" so NVRTC keeps their names';
    case 600:
      return 'the stream still has work in flight (cuStreamQuery): this is not a failure, poll again later';
    case 701:
      return 'the launch asks for more registers/threads/shared memory than an SM has; use a smaller block';
    case 720:
      return 'more blocks than can be co-resident; launch fewer blocks';
    default:
      if (STICKY_CODES.has(result)) {
        return (
          'a kernel faulted and the context is poisoned: dispose the CudaContext (releasing the primary ' +
          'context) and create a new one; run compute-sanitizer to find the fault'
        );
      }
      return `see the CUDA driver API documentation of ${call}`;
  }
}

/** A CUDA driver API call returned something other than CUDA_SUCCESS. */
export class CudaError extends CudaDriverErrorBase {
  /** The driver API function that failed, e.g. "cuMemAlloc_v2". */
  readonly call: string;
  /** The numeric CUresult. */
  readonly result: number;
  /** True when the error poisons the context (every later call fails): recovery needs a new context. */
  readonly sticky: boolean;

  constructor(call: string, result: number, name: string, description: string, opts: DriverErrorOptions = {}) {
    super(name, `${call} failed: ${name} (${result}): ${description}`, {
      hint: opts.hint ?? hintFor(result, call),
      ...(opts.cause === undefined ? {} : { cause: opts.cause }),
    });
    this.call = call;
    this.result = result;
    this.sticky = STICKY_CODES.has(result);
  }
}

/** NVRTC failed; for a failed compilation `log` holds the compiler's full log. */
export class NvrtcError extends CudaDriverErrorBase {
  readonly call: string;
  readonly result: number;
  /** The full NVRTC program log ("" when the failure was not a compilation). */
  readonly log: string;
  /** The program name and options of the compilation, for reproducing it. */
  readonly programName: string;
  readonly options: readonly string[];

  constructor(
    call: string,
    result: number,
    name: string,
    detail: { log?: string; programName?: string; options?: readonly string[]; hint?: string },
  ) {
    const log = detail.log ?? '';
    // The first lines of the log usually name the error; the whole log stays on `.log`.
    const excerpt = log.trim().split('\n').slice(0, 12).join('\n');
    const where = detail.programName ? ` compiling "${detail.programName}"` : '';
    super(name, `${call} failed${where}: ${name} (${result})${excerpt ? `\n${excerpt}` : ''}`, {
      hint:
        detail.hint ??
        (result === 6
          ? 'fix the CUDA source: the compile log above names file, line and error (kernels must be extern "C" ' +
            'and use no host headers)'
          : result === 5
            ? 'an NVRTC option is not valid for this NVRTC version (check -arch=sm_XX against nvrtcVersion)'
            : 'see the NVRTC documentation of this call'),
    });
    this.call = call;
    this.result = result;
    this.log = log;
    this.programName = detail.programName ?? '';
    this.options = detail.options ?? [];
  }
}

/** No usable CUDA: no driver library, only the stub, no device, or no NVRTC. `reason` says which. */
export class CudaUnavailableError extends CudaDriverErrorBase {
  readonly reason: string;

  constructor(reason: string, opts: DriverErrorOptions = {}) {
    super('CUDA_UNAVAILABLE', `CUDA is not available: ${reason}`, {
      hint:
        opts.hint ??
        "install the NVIDIA driver (libcuda.so.1) and the CUDA toolkit's NVRTC, or set RINGGRAIN_LIBCUDA / " +
          'RINGGRAIN_NVRTC to their paths; use placement "cpu" or "auto" without a GPU',
      ...(opts.cause === undefined ? {} : { cause: opts.cause }),
    });
    this.reason = reason;
  }
}

/** The driver layer was misused (bad kernel argument, foreign handle, use after dispose, busy stream). */
export class CudaUsageError extends CudaDriverErrorBase {
  constructor(code: string, message: string, opts: DriverErrorOptions = {}) {
    super(code, message, opts);
  }
}

/**
 * The compile pool (worker-pool.ts) could not run a job: it was closed (RG_COMPILE_POOL_CLOSED), its worker ended
 * while running it (RG_COMPILE_WORKER_DIED), or the job failed with an error of no known type (RG_COMPILE_JOB_FAILED).
 */
export class CompilePoolError extends CudaDriverErrorBase {
  constructor(code: string, message: string, opts: DriverErrorOptions = {}) {
    super(code, message, opts);
  }
}
