import { RinggrainError, type ErrorOptions } from '@ringgrain/core/backend';

export class WorkerDiedError extends RinggrainError {
  constructor(grain: string, detail: string, opts: ErrorOptions = {}) {
    super('WORKER_DIED', `grain "${grain}": its worker thread ended: ${detail}`, {
      hint:
        'every pending ask was rejected; terminate the kernel and launch it again (the pool has already ' +
        'replaced the thread)',
      ...opts,
    });
  }
}

export class GrainModuleError extends RinggrainError {
  constructor(grain: string, module: string, detail: string, opts: ErrorOptions = {}) {
    super('GRAIN_MODULE', `grain "${grain}": cannot load its class from ${module}: ${detail}`, {
      hint: 'export the grain class from the module named in its spec (module: import.meta.url)',
      ...opts,
    });
  }
}

// A kernel's full actor table: core's, so the host rebuilds it from a failed turn's reply (turn-error.ts).
export { StateTableFullError } from '@ringgrain/core/backend';

export class K2KTargetError extends RinggrainError {
  constructor(target: string, detail: string) {
    super('K2K_TARGET', `send to grain "${target}" failed: ${detail}`, {
      hint: 'the target grain must be registered on the same backend and launched',
    });
  }
}

export class CpuBackendOptionsError extends RinggrainError {
  constructor(detail: string) {
    super('CPU_BACKEND_OPTIONS', `CpuBackend: ${detail}`, {
      hint: 'pass new CpuBackend({ threads: n }) with n ≥ 1, or leave threads out for one per core but one',
    });
  }
}
