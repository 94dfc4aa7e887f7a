/**
 * A pool of worker threads that run one kind of job (NVRTC compiles: nvrtc-pool.ts), at most `threads` at a time,
 * in the order they were asked for. Why threads of its own: koffi's async calls run on libuv's threadpool (4
 * threads by default, shared with fs and dns), so a system of many CUDA classes compiled at most 4 at a time.
 *
 * A worker loads the handler module (`createHandler(init)` → `(job) => { result, transfer? }`) once and then runs
 * one job at a time. Workers start on demand, are `unref`'d while they wait (a waiting pool never keeps the
 * process alive) and all end after `idleMs` without work; `close()` ends them at once. A handler's error comes
 * back as plain data and `reviveError` turns it into the caller's typed error again.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker, type TransferListItem } from 'node:worker_threads';
import { CompilePoolError } from './errors.ts';

/** An error as the worker sends it: its class name, name, message, stack and its plain own fields (code, log, …). */
export interface SerializedError {
  readonly type: string;
  readonly name: string;
  readonly message: string;
  readonly stack?: string;
  readonly causeMessage?: string;
  readonly [field: string]: unknown;
}

export interface WorkerPoolOptions {
  /** The handler module (a .ts module gets tsx registered in the worker; a built .js does not need it). */
  readonly handler: URL;
  /** Passed to the handler's createHandler once per worker (structured-cloned). */
  readonly init?: unknown;
  /** Most jobs running at once, = most workers (≥ 1). */
  readonly threads: number;
  /** Workers end after this many ms without a job (default 2,000). */
  readonly idleMs?: number;
  /** Thread names (shown in profiles): `${name}-${n}`. */
  readonly name?: string;
  /** The caller's typed error for a handler's error (default: a CompilePoolError carrying its message). */
  readonly reviveError?: (e: SerializedError) => Error;
}

interface Job {
  readonly id: number;
  readonly job: unknown;
  readonly transfer: readonly TransferListItem[];
  resolve(v: unknown): void;
  reject(e: Error): void;
}

interface Slot {
  readonly worker: Worker;
  readonly n: number;
  job: Job | undefined;
  /** Jobs this worker finished (a worker that dies before its first counts toward a failing start). */
  done: number;
  lastError: Error | undefined;
  /** Ended by the idle shutdown (not a failure). */
  stoppedIdle: boolean;
}

const WORKER_ENTRY = new URL('./pool-worker-entry.mjs', import.meta.url);
/** Workers that die in a row before finishing a job: past this the queue is refused instead of respawning. */
const MAX_FAILED_STARTS = 3;

/**
 * Inspector and per-process flags are not for workers (`new Worker` throws ERR_WORKER_INVALID_EXEC_ARGV on them), and
 * --input-type (of `node -e`) fails the worker's file entry with ERR_INPUT_TYPE_NOT_ALLOWED.
 */
function workerExecArgv(): string[] {
  return process.execArgv.filter(
    (a) =>
      !a.startsWith('--inspect') &&
      !/^--expose[-_]gc$/.test(a) &&
      !a.startsWith('--cpu-prof') &&
      !a.startsWith('--input-type'),
  );
}

/** The built sibling (.js) of a .ts module when it exists (an installed package), else the module itself. */
export function handlerUrl(tsModule: URL): URL {
  const js = new URL(tsModule.href.replace(/\.ts$/, '.js'));
  return existsSync(fileURLToPath(js)) ? js : tsModule;
}

export class WorkerPool<J, R> {
  readonly threads: number;
  readonly idleMs: number;
  private readonly queue: Job[] = [];
  private readonly slots = new Set<Slot>();
  private nextId = 1;
  private nextWorker = 1;
  private failedStarts = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private stoppedWaiters: Array<() => void> = [];
  /** Jobs handed to a worker, and workers started, since the pool was made. */
  readonly stats = { jobs: 0, workersStarted: 0, maxRunning: 0 };

  constructor(private readonly opts: WorkerPoolOptions) {
    if (!Number.isInteger(opts.threads) || opts.threads < 1) {
      throw new CompilePoolError(
        'RG_COMPILE_POOL_THREADS',
        `a compile pool needs a whole number of threads ≥ 1, got ${opts.threads}`,
        {
          hint: 'pass compileThreads ≥ 1 (or 0 to compile on libuv threads without a pool)',
        },
      );
    }
    this.threads = opts.threads;
    this.idleMs = opts.idleMs ?? 2_000;
  }

  /** Workers alive now. */
  get alive(): number {
    return this.slots.size;
  }

  /** Jobs running now. */
  get running(): number {
    let n = 0;
    for (const s of this.slots) if (s.job) n++;
    return n;
  }

  get queued(): number {
    return this.queue.length;
  }

  /** Runs `job` on a worker (after the jobs asked for before it); `transfer` moves buffers instead of copying them. */
  run(job: J, transfer: readonly TransferListItem[] = []): Promise<R> {
    if (this.closed)
      return Promise.reject(
        new CompilePoolError('RG_COMPILE_POOL_CLOSED', 'the compile pool is closed', {
          hint: 'make a new pool (or use the shared one: sharedNvrtcPool)',
        }),
      );
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, job, transfer, resolve: resolve as (v: unknown) => void, reject });
      this.dispatch();
    });
  }

  /** Resolves once no worker is alive and nothing is queued (after the idle shutdown or close). */
  whenStopped(): Promise<void> {
    if (this.slots.size === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.stoppedWaiters.push(resolve));
  }

  /** Refuses queued jobs (RG_COMPILE_POOL_CLOSED), ends every worker (their running jobs are refused too). */
  async close(): Promise<void> {
    this.closed = true;
    this.clearIdle();
    const err = (): CompilePoolError =>
      new CompilePoolError('RG_COMPILE_POOL_CLOSED', 'the compile pool was closed before this job finished', {
        hint: 'close the pool only after its jobs have settled',
      });
    for (const j of this.queue.splice(0)) j.reject(err());
    const exits: Promise<number>[] = [];
    for (const s of this.slots) {
      if (s.job) s.job.reject(err());
      s.job = undefined;
      exits.push(s.worker.terminate());
    }
    await Promise.all(exits);
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot: Slot | undefined;
      for (const s of this.slots) if (!s.job) slot = s;
      if (!slot && this.slots.size < this.threads) slot = this.spawn();
      if (!slot) break;
      const job = this.queue.shift() as Job;
      slot.job = job;
      slot.worker.ref();
      this.stats.jobs++;
      this.stats.maxRunning = Math.max(this.stats.maxRunning, this.running);
      slot.worker.postMessage({ id: job.id, job: job.job }, job.transfer as TransferListItem[]);
    }
    if (this.running > 0 || this.queue.length > 0) this.clearIdle();
    else this.armIdle();
  }

  private spawn(): Slot {
    const n = this.nextWorker++;
    const worker = new Worker(WORKER_ENTRY, {
      workerData: { handler: this.opts.handler.href, init: this.opts.init },
      execArgv: workerExecArgv(),
      name: `${this.opts.name ?? 'ringgrain:pool'}-${n}`,
    });
    const slot: Slot = { worker, n, job: undefined, done: 0, lastError: undefined, stoppedIdle: false };
    this.slots.add(slot);
    this.stats.workersStarted++;
    worker.on('message', (m: { id: number; ok: boolean; result?: unknown; error?: SerializedError }) =>
      this.settled(slot, m),
    );
    worker.on('error', (e) => {
      slot.lastError = e;
    });
    worker.on('exit', (code) => this.exited(slot, code));
    return slot;
  }

  private settled(slot: Slot, m: { id: number; ok: boolean; result?: unknown; error?: SerializedError }): void {
    const job = slot.job;
    if (!job || job.id !== m.id) return;
    slot.job = undefined;
    slot.done++;
    this.failedStarts = 0;
    slot.worker.unref();
    if (m.ok) job.resolve(m.result);
    else job.reject(this.revive(m.error as SerializedError));
    this.dispatch();
  }

  private revive(e: SerializedError): Error {
    if (this.opts.reviveError) return this.opts.reviveError(e);
    return new CompilePoolError('RG_COMPILE_JOB_FAILED', `a compile job failed: ${e.type}: ${e.message}`, {
      hint: "the message above is the worker's error",
    });
  }

  private exited(slot: Slot, code: number): void {
    this.slots.delete(slot);
    if (slot.job) {
      const why = slot.lastError ? `${slot.lastError.message} (exit code ${code})` : `exit code ${code}`;
      slot.job.reject(
        new CompilePoolError('RG_COMPILE_WORKER_DIED', `compile worker ${slot.n} ended while it ran a job: ${why}`, {
          hint:
            'a crash inside the compiler (or out of memory); compile with fewer threads ' +
            '(compileThreads, RINGGRAIN_COMPILE_THREADS) or run it again',
          ...(slot.lastError ? { cause: slot.lastError } : {}),
        }),
      );
      slot.job = undefined;
    }
    if (slot.done === 0 && !this.closed && !slot.stoppedIdle) this.failedStarts++;
    if (this.failedStarts >= MAX_FAILED_STARTS) {
      const why = slot.lastError ? slot.lastError.message : `exit code ${code}`;
      for (const j of this.queue.splice(0)) {
        j.reject(
          new CompilePoolError(
            'RG_COMPILE_WORKER_DIED',
            `${MAX_FAILED_STARTS} compile workers in a row ended before finishing a job (last: ${why})`,
            { hint: 'the worker cannot start here; compileThreads: 0 compiles without worker threads' },
          ),
        );
      }
    }
    if (!this.closed) this.dispatch();
    if (this.slots.size === 0 && this.queue.length === 0) for (const w of this.stoppedWaiters.splice(0)) w();
  }

  private armIdle(): void {
    if (this.idleTimer || this.slots.size === 0) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.running > 0 || this.queue.length > 0) return;
      for (const s of this.slots) {
        s.stoppedIdle = true;
        void s.worker.terminate();
      }
    }, this.idleMs);
    this.idleTimer.unref();
  }

  private clearIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }
}
