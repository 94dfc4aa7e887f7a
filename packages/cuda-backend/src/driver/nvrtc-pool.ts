/**
 * NVRTC compiles on worker threads of their own (worker-pool.ts), one per core by default: a system that places
 * many classes on the GPU compiles them all side by side. koffi's async call ran them on libuv's threadpool (4
 * threads, shared with fs), which compiled at most 4 at a time. NVRTC's errors come back typed as in this thread
 * (NvrtcError with the full log, CudaUsageError, CudaUnavailableError).
 *
 * Threads: `CudaBackend({ compileThreads })`, `ringgrain build --threads`, else $RINGGRAIN_COMPILE_THREADS, else
 * os.availableParallelism(). 0 compiles without the pool (koffi's async call on libuv's threads, as before).
 */
import os from 'node:os';
import { CompilePoolError, CudaUnavailableError, CudaUsageError, NvrtcError } from './errors.ts';
import type { DiscoveryEnv } from './library.ts';
import type { NvrtcCompileOptions } from './nvrtc.ts';
import type { NvrtcJob, NvrtcJobResult } from './nvrtc-worker.ts';
import { handlerUrl, WorkerPool, type SerializedError } from './worker-pool.ts';

export const COMPILE_THREADS_ENV = 'RINGGRAIN_COMPILE_THREADS';

/** Compile threads when none are given: $RINGGRAIN_COMPILE_THREADS, else one per core. */
export function defaultCompileThreads(env: DiscoveryEnv = process.env): number {
  const v = env[COMPILE_THREADS_ENV];
  if (v === undefined || v === '') return os.availableParallelism();
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    throw new CudaUsageError('RG_BAD_COMPILE_THREADS', `${COMPILE_THREADS_ENV}="${v}" is not a whole number ≥ 0`, {
      hint:
        `set ${COMPILE_THREADS_ENV} to the number of NVRTC compiles to run at once (0: no worker threads), ` +
        'or unset it for one per core',
    });
  }
  return n;
}

/** The message without the "\n  hint: …" that RinggrainError appends (the constructor appends it again). */
function bare(e: SerializedError): string {
  const hint = typeof e['hint'] === 'string' ? `\n  hint: ${e['hint']}` : '';
  return hint && e.message.endsWith(hint) ? e.message.slice(0, -hint.length) : e.message;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** A worker's error as the typed error the same call throws on this thread. */
export function reviveNvrtcError(e: SerializedError): Error {
  const hint = str(e['hint']);
  if (e.type === 'NvrtcError') {
    return new NvrtcError(
      str(e['call']) ?? 'nvrtcCompileProgram',
      Number(e['result']),
      str(e['code']) ?? 'NVRTC_ERROR',
      {
        log: str(e['log']) ?? '',
        ...(typeof e['programName'] === 'string' ? { programName: e['programName'] } : {}),
        ...(Array.isArray(e['options']) ? { options: e['options'] as string[] } : {}),
        ...(hint ? { hint } : {}),
      },
    );
  }
  if (e.type === 'CudaUsageError')
    return new CudaUsageError(str(e['code']) ?? 'RG_NVRTC_USAGE', bare(e), hint ? { hint } : {});
  if (e.type === 'CudaUnavailableError')
    return new CudaUnavailableError(str(e['reason']) ?? bare(e), hint ? { hint } : {});
  return new CompilePoolError(
    'RG_COMPILE_JOB_FAILED',
    `an NVRTC compile failed on its worker thread: ${e.type}: ${e.message}`,
    {
      hint: 'an unexpected error in the compile worker; compileThreads: 0 compiles on this thread instead',
    },
  );
}

export interface NvrtcPoolOptions {
  readonly threads: number;
  /** The NVRTC library every worker opens (the main thread's Nvrtc.libPath, so the cache key's version holds). */
  readonly libPath: string;
  /** Workers end after this many ms without a compile (default 2,000). */
  readonly idleMs?: number;
}

export class NvrtcPool {
  private readonly pool: WorkerPool<NvrtcJob, NvrtcJobResult>;

  constructor(readonly options: NvrtcPoolOptions) {
    this.pool = new WorkerPool<NvrtcJob, NvrtcJobResult>({
      handler: handlerUrl(new URL('./nvrtc-worker.ts', import.meta.url)),
      init: { libPath: options.libPath },
      threads: options.threads,
      ...(options.idleMs === undefined ? {} : { idleMs: options.idleMs }),
      name: 'ringgrain:nvrtc',
      reviveError: reviveNvrtcError,
    });
  }

  /** Nvrtc.compile on a worker thread (after the compiles asked for before it). */
  compile(source: string, opts: NvrtcCompileOptions): Promise<NvrtcJobResult> {
    return this.pool.run({
      source,
      opts: {
        arch: opts.arch,
        ...(opts.name === undefined ? {} : { name: opts.name }),
        ...(opts.extraOpts ? { extraOpts: [...opts.extraOpts] } : {}),
      },
    });
  }

  /** Compiles handed to a worker, workers started, most compiles that ran at once. */
  get stats(): { readonly jobs: number; readonly workersStarted: number; readonly maxRunning: number } {
    return { ...this.pool.stats };
  }

  get alive(): number {
    return this.pool.alive;
  }

  whenStopped(): Promise<void> {
    return this.pool.whenStopped();
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

const shared = new Map<string, NvrtcPool>();

/** The process's pool for this many threads and this NVRTC (made on first use; its workers end when idle). */
export function sharedNvrtcPool(threads: number, libPath: string): NvrtcPool {
  const key = `${threads}\u0000${libPath}`;
  let p = shared.get(key);
  if (!p) shared.set(key, (p = new NvrtcPool({ threads, libPath })));
  return p;
}

/** Ends the workers of every shared pool now (a CLI's last step; a later compile makes a new pool). */
export async function closeSharedNvrtcPools(): Promise<void> {
  const pools = [...shared.values()];
  shared.clear();
  await Promise.all(pools.map((p) => p.close()));
}
