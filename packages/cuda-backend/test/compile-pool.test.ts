/**
 * The compile pool (src/driver/worker-pool.ts) with a handler that compiles nothing (fixtures/fake-compile.ts), so it
 * runs everywhere: jobs start in the order asked, at most `threads` at once (jobs wait on a gate the test opens,
 * so the count is seen, not timed), each result reaches its own caller, a handler's error comes back typed, a
 * worker that dies fails its job only, and the workers end when idle, at close, and never keep a process alive.
 */
import { execFile } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { CompilePoolError, NvrtcError } from '../src/driver/errors.ts';
import { defaultCompileThreads, reviveNvrtcError } from '../src/driver/nvrtc-pool.ts';
import { CudaBackendOptionsError } from '../src/errors.ts';
import { resolveOptions } from '../src/options.ts';
import { WorkerPool, type SerializedError } from '../src/driver/worker-pool.ts';
import { ACTIVE, FakeCompileError, GATE, MAX, ORDER, STARTS, type FakeJob } from './fixtures/fake-compile.ts';

const HANDLER = new URL('./fixtures/fake-compile.ts', import.meta.url);
type Out = { n: number; doubled: number; thread: number };

const pools: WorkerPool<FakeJob, Out>[] = [];
function pool(
  threads: number,
  extra: { idleMs?: number; failInit?: boolean; revive?: boolean } = {},
): WorkerPool<FakeJob, Out> {
  const p = new WorkerPool<FakeJob, Out>({
    handler: HANDLER,
    init: { failInit: extra.failInit ?? false },
    threads,
    ...(extra.idleMs === undefined ? {} : { idleMs: extra.idleMs }),
    ...(extra.revive
      ? { reviveError: (e: SerializedError) => new FakeCompileError(Number(e['n']), String(e['log'])) }
      : {}),
  });
  pools.push(p);
  return p;
}
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

/** Waits (bounded) until `cond` holds: the workers report through shared memory, so this polls it. */
async function until(cond: () => boolean, what: string, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function gateBlock(): { shared: SharedArrayBuffer; words: Int32Array; open(): void } {
  const shared = new SharedArrayBuffer(4 * 64);
  const words = new Int32Array(shared);
  return {
    shared,
    words,
    open: () => {
      Atomics.store(words, GATE, 1);
      Atomics.notify(words, GATE);
    },
  };
}

describe('compile pool (fake compile function, worker threads)', () => {
  it('runs at most `threads` jobs at once; the rest wait their turn; each result reaches its caller', async () => {
    const p = pool(2);
    const g = gateBlock();
    const jobs = Array.from({ length: 6 }, (_, n) => p.run({ n, shared: g.shared }));
    await until(() => Atomics.load(g.words, STARTS) === 2, 'two jobs have started');
    // Both workers are held at the gate: no third job can have started, four wait in the queue.
    expect(p.running).toBe(2);
    expect(p.queued).toBe(4);
    expect(Atomics.load(g.words, ACTIVE)).toBe(2);
    expect([g.words[ORDER], g.words[ORDER + 1]].sort()).toEqual([0, 1]);
    g.open();
    const out = await Promise.all(jobs);
    expect(out.map((o) => [o.n, o.doubled])).toEqual(Array.from({ length: 6 }, (_, n) => [n, n * 2]));
    expect(Atomics.load(g.words, MAX)).toBe(2);
    expect(p.stats).toMatchObject({ jobs: 6, workersStarted: 2, maxRunning: 2 });
    expect(new Set(out.map((o) => o.thread)).size).toBe(2);
  }, 120_000);

  it('one thread runs the jobs in the order they were asked for', async () => {
    const p = pool(1);
    const g = gateBlock();
    g.open();
    const out = await Promise.all(Array.from({ length: 5 }, (_, n) => p.run({ n, shared: g.shared })));
    expect(out.map((o) => o.n)).toEqual([0, 1, 2, 3, 4]);
    expect(Array.from(g.words.subarray(ORDER, ORDER + 5))).toEqual([0, 1, 2, 3, 4]);
    expect(Atomics.load(g.words, MAX)).toBe(1);
  }, 120_000);

  it("a handler's error fails its own job, typed by reviveError; the other jobs and the pool go on", async () => {
    const p = pool(2, { revive: true });
    const results = await Promise.allSettled([p.run({ n: 0 }), p.run({ n: 1, fail: 'plain' }), p.run({ n: 2 })]);
    expect(results[0]).toMatchObject({ status: 'fulfilled', value: { n: 0 } });
    expect(results[2]).toMatchObject({ status: 'fulfilled', value: { n: 2 } });
    const bad = results[1] as PromiseRejectedResult;
    expect(bad.reason).toBeInstanceOf(FakeCompileError);
    expect(bad.reason).toMatchObject({ n: 1, log: 'line 1: error in job 1' });
    await expect(p.run({ n: 3 })).resolves.toMatchObject({ doubled: 6 });
  }, 120_000);

  it('an NvrtcError thrown on a worker comes back an NvrtcError with its log, program and options', async () => {
    const p = new WorkerPool<FakeJob, Out>({ handler: HANDLER, init: {}, threads: 1, reviveError: reviveNvrtcError });
    pools.push(p);
    const e = await p.run({ n: 7, fail: 'nvrtc' }).catch((x: unknown) => x);
    const here = new NvrtcError('nvrtcCompileProgram', 6, 'NVRTC_ERROR_COMPILATION', {
      log: 'job7.cu(1): error: identifier "x" is undefined',
      programName: 'job7.cu',
      options: ['-arch=sm_90'],
    });
    expect(e).toBeInstanceOf(NvrtcError);
    expect(e).toMatchObject({
      code: 'NVRTC_ERROR_COMPILATION',
      result: 6,
      log: here.log,
      programName: 'job7.cu',
      options: ['-arch=sm_90'],
      message: here.message,
    });
  }, 120_000);

  it('without reviveError a failure is a CompilePoolError; a failed start fails each job with its reason', async () => {
    const plain = pool(1);
    const e = await plain.run({ n: 1, fail: 'plain' }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(CompilePoolError);
    expect(e).toMatchObject({ code: 'RG_COMPILE_JOB_FAILED' });
    expect((e as Error).message).toContain('FakeCompileError: fake compile 1 failed');
    const broken = pool(1, { failInit: true, revive: true });
    const both = await Promise.allSettled([broken.run({ n: 1 }), broken.run({ n: 2 })]);
    for (const r of both)
      expect(r).toMatchObject({ status: 'rejected', reason: { log: 'the handler could not start' } });
  }, 120_000);

  it('a worker that dies fails only its job (RG_COMPILE_WORKER_DIED); the next job gets a new worker', async () => {
    const p = pool(1);
    const [dead, next] = await Promise.allSettled([p.run({ n: 1, crash: true }), p.run({ n: 2 })]);
    expect(dead).toMatchObject({ status: 'rejected', reason: { code: 'RG_COMPILE_WORKER_DIED' } });
    expect((dead as PromiseRejectedResult).reason).toBeInstanceOf(CompilePoolError);
    expect((dead as PromiseRejectedResult).reason.message).toContain('exit code 3');
    expect(next).toMatchObject({ status: 'fulfilled', value: { n: 2 } });
    expect(p.stats.workersStarted).toBe(2);
  }, 120_000);

  it('workers end after idleMs without work; a later job starts them again', async () => {
    const p = pool(2, { idleMs: 20 });
    await Promise.all([p.run({ n: 1 }), p.run({ n: 2 })]);
    await p.whenStopped();
    expect(p.alive).toBe(0);
    await expect(p.run({ n: 3 })).resolves.toMatchObject({ n: 3 });
    await p.whenStopped();
    expect(p.alive).toBe(0);
  }, 120_000);

  it('close refuses queued and running jobs (RG_COMPILE_POOL_CLOSED), ends the workers, refuses more', async () => {
    const p = pool(1);
    const g = gateBlock();
    const jobs = [0, 1, 2].map((n) => p.run({ n, shared: g.shared }).catch((x: unknown) => x));
    await until(() => Atomics.load(g.words, STARTS) === 1, 'the first job has started');
    await p.close();
    for (const e of await Promise.all(jobs)) expect(e).toMatchObject({ code: 'RG_COMPILE_POOL_CLOSED' });
    expect(p.alive).toBe(0);
    await expect(p.run({ n: 3 })).rejects.toMatchObject({ code: 'RG_COMPILE_POOL_CLOSED' });
  }, 120_000);

  it("a process that never closes its pool still exits (idle workers are unref'd)", async () => {
    const script = `
      import { WorkerPool } from './src/driver/worker-pool.ts';
      const handler = new URL('./test/fixtures/fake-compile.ts', import.meta.url);
      const p = new WorkerPool({ handler, init: {}, threads: 2, idleMs: 600000 });
      const out = await Promise.all([p.run({ n: 20 }), p.run({ n: 21 })]);
      console.log(out.map((o) => o.doubled).join(','));
    `;
    const cwd = fileURLToPath(new URL('..', import.meta.url));
    const r = await new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        ['--import', 'tsx', '--input-type=module', '-e', script],
        { cwd, timeout: 90_000 },
        (error, out, err) =>
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, out, err }),
      );
      child.stdin?.end();
    });
    expect(r.err).toBe('');
    expect(r).toMatchObject({ code: 0, out: '40,42\n' });
  }, 120_000);
});

describe('compile threads: the option and the environment', () => {
  it('CudaBackend compileThreads takes a whole number ≥ 0 (0: no pool); anything else is refused', () => {
    expect(resolveOptions({ compileThreads: 0 }).compileThreads).toBe(0);
    expect(resolveOptions({ compileThreads: 12 }).compileThreads).toBe(12);
    expect(resolveOptions({}).compileThreads).toBeUndefined();
    for (const bad of [-1, 1.5, Number.NaN]) {
      expect(() => resolveOptions({ compileThreads: bad })).toThrow(CudaBackendOptionsError);
    }
  });

  it('RINGGRAIN_COMPILE_THREADS: a whole number, else one thread per core; a bad value says what to set', () => {
    expect(defaultCompileThreads({ RINGGRAIN_COMPILE_THREADS: '3' })).toBe(3);
    expect(defaultCompileThreads({ RINGGRAIN_COMPILE_THREADS: '0' })).toBe(0);
    expect(defaultCompileThreads({})).toBe(availableParallelism());
    const bad = { RINGGRAIN_COMPILE_THREADS: 'lots' };
    expect(() => defaultCompileThreads(bad)).toThrow(/RINGGRAIN_COMPILE_THREADS="lots"/);
  });
});
