/**
 * Typed programs (type level only): GrainSystem options, register options, lifecycle, events, metrics,
 * errors, persistence, timers and reminders — as README.md documents them.
 */
import { describe, expectTypeOf, it } from 'vitest';
import {
  AskManyError,
  GrainSystem,
  HandlerError,
  InvalidKeyError,
  KernelTerminatedError,
  PayloadTooLargeError,
  QueueFullError,
  RinggrainError,
  SchemaValidationError,
  Grain,
  t,
  type ClassMetrics,
  type TypesOf,
} from '@ringgrain/core';
import {
  IdleTimeoutError,
  InvalidTransitionError,
  ReminderStorageError,
  ReplyTargetError,
  StateLoadError,
  StateVersionConflictError,
  StorageUnsupportedError,
  TimerArgumentError,
  TimerSpecError,
  TimersUnsupportedError,
} from '@ringgrain/core/errors';
import type { AnyGrainClass, FlushResult, LifecycleState, ReminderInfo, RingKernel } from '@ringgrain/core/types';
import { stateTableSpec } from '@ringgrain/core/store';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { InlineBackend } from '@ringgrain/inline-backend';
import { CudaBackend, IsolatedCudaBackend, WorkerDiedError } from './backends.ts';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { Account, Body, Directory, Heart, Sensor } from './grains.ts';

describe('system options and registration', () => {
  it('README quick program type-checks', async () => {
    const system = new GrainSystem({ backends: { cpu: new CpuBackend() } });
    expectTypeOf(system.register(Account, { placement: 'cpu' })).toEqualTypeOf<GrainSystem>();
    await system.start();
    const acct = system.grain(Account, 42);
    await acct.deposit({ amount: 5 });
    acct.tell.transfer({ to: 7, amount: 2 });
    await system.shutdown();
  });

  it('every documented option', () => {
    const clock = { now: 0 };
    const system = new GrainSystem({
      backends: {
        cpu: new CpuBackend({ threads: 2, laneRestarts: 3 }),
        inline: new InlineBackend(),
        gpu: new CudaBackend({ hostLanes: 4, overflowBytes: 0 }),
        iso: new IsolatedCudaBackend({ arenaBytes: 1 << 20 }),
      },
      autoOrder: ['gpu', 'cpu'],
      clock: () => clock.now,
      logLevel: 'debug',
      handleSignals: false,
      signalExitMs: 5000,
      askTimeoutMs: 1000,
      queueFullTimeoutMs: 1000,
      heartbeatTimeoutMs: 1000,
      defaults: { ringCapacity: 1024 },
    });
    system
      .register(Account, {
        placement: 'auto',
        maxActors: 1 << 20,
        ringCapacity: 8192,
        replyCapacity: 8192,
        slotSize: 512,
      })
      .register(Body, { placement: 'inline' })
      .register(Directory, { placement: 'cpu', idleMs: 60_000 })
      .register(Heart, { placement: 'cpu' });
    system.tellManyImages = false;
    // @ts-expect-error: logLevel is one of pino's levels
    new GrainSystem({ backends: {}, logLevel: 'verbose' });
    // @ts-expect-error: backends is required
    new GrainSystem({});
    // @ts-expect-error: clock is a function returning ms
    new GrainSystem({ backends: {}, clock: 5 });
    // @ts-expect-error: ringCapacity is a number
    system.register(Account, { placement: 'cpu', ringCapacity: '1k' });
    // @ts-expect-error: no such register option
    system.register(Account, { placement: 'cpu', partitionz: 4 });
    // @ts-expect-error: not a grain class
    system.register({}, { placement: 'cpu' });
  });

  it('a class must define a handler for every method of its spec', () => {
    class Half extends Grain({
      name: 'Half',
      module: import.meta.url,
      state: t.struct({ n: t.u32 }),
      methods: { inc: { request: t.struct({}) }, get: { request: t.struct({}), reply: t.struct({ n: t.u32 }) } },
    }) {
      inc(s: TypesOf<typeof Half>['state']): void {
        s.n += 1;
      }
    }
    class Arrow extends Grain({
      name: 'Arrow',
      module: import.meta.url,
      state: t.struct({ n: t.u32 }),
      methods: { inc: { request: t.struct({}) } },
    }) {
      inc = (s: TypesOf<typeof Arrow>['state']): void => {
        s.n += 1;
      };
    }
    const system = new GrainSystem({ backends: { cpu: new CpuBackend() } });
    system.register(Arrow, { placement: 'cpu' });
    // a class known only as AnyGrainClass (loaded by name, say) still registers
    const loaded: AnyGrainClass = Account;
    system.register(loaded, { placement: 'cpu' });
    // @ts-expect-error: no handler for "get" (it failed at launch before)
    system.register(Half, { placement: 'cpu' });
  });

  it('persistent state (README "Persistent state")', async () => {
    const system = new GrainSystem({ backends: { cpu: new CpuBackend() } });
    const store = new LmdbStore({ dataDir: './state' });
    system.register(Account, { placement: 'cpu', storage: store, flushIntervalMs: 1000, idleMs: 60_000 });
    await system.start();
    await system.grain(Account, 42).deposit({ amount: 5 });
    const f = await system.flush();
    expectTypeOf(f).toEqualTypeOf<FlushResult>();
    expectTypeOf(f.written).toEqualTypeOf<number>();
    expectTypeOf(f.kept).toEqualTypeOf<number>();
    await system.flush(Account);
    await system.preload(Account);
    await system.preload(Account, [1, 2, 3]);
    expectTypeOf(await system.collectIdle()).toEqualTypeOf<number>();
    await system.collectIdle(Account);
    // @ts-expect-error: Account keys are numbers
    await system.preload(Account, ['a']);
    await system.shutdown();
    await store.close();
  });

  it('state store API (README "State storage")', async () => {
    const store = new LmdbStore({ dataDir: './state' });
    await store.open();
    const accounts = await store.table(stateTableSpec(Account.grain, 'layout'));
    const keys = Float64Array.of(1, 2, 3);
    const states = { bytes: new Uint8Array(3 * 16), stride: 16 };
    const versions = await accounts.putMany({ keys, expected: new Float64Array(3), states });
    void versions;
    const read = await accounts.getMany(keys);
    void read;
    await store.close();
  });
});

describe('lifecycle, idle, events, metrics', () => {
  it('kernel lifecycle calls', async () => {
    const system = new GrainSystem({ backends: { cpu: new CpuBackend() } });
    const k = system.kernel(Account);
    expectTypeOf(k).toEqualTypeOf<RingKernel>();
    expectTypeOf(k.state).toEqualTypeOf<LifecycleState>();
    await k.deactivate();
    await k.activate();
    await k.terminate();
    await k.terminate({ mode: 'reject', timeoutMs: 100 });
    await k.launch();
    await system.launch(Account);
    expectTypeOf(system.kernels()).toEqualTypeOf<RingKernel[]>();
    await system.idle();
    await system.idle({ timeoutMs: 1000, holdMs: 0.25 });
    await system.shutdown({ mode: 'drain' });
    // @ts-expect-error: not a lifecycle mode
    await k.terminate({ mode: 'now' });
  });

  it('events', () => {
    const system = new GrainSystem({ backends: {} });
    system.on('tellError', (e) => {
      expectTypeOf(e.grain).toEqualTypeOf<string>();
      expectTypeOf(e.method).toEqualTypeOf<string>();
      expectTypeOf(e.error).toEqualTypeOf<Error>();
      const row: number | undefined = e.row;
      void row;
    });
    system.on('transition', (e) => {
      expectTypeOf(e.from).toEqualTypeOf<LifecycleState>();
      expectTypeOf(e.to).toEqualTypeOf<LifecycleState>();
      expectTypeOf(e.grain).toEqualTypeOf<string>();
      expectTypeOf(e.backend).toEqualTypeOf<string>();
    });
    system.on('laneRestart', (e) => {
      expectTypeOf(e).toEqualTypeOf<{ grain: string; lane: number; error: Error; failedAsks: number }>();
    });
    system.on('fault', (e) => {
      expectTypeOf(e.error).toEqualTypeOf<Error>();
    });
    system.on('storageError', (e) => {
      expectTypeOf(e.op).toEqualTypeOf<'flush' | 'load' | 'preload' | 'reminder'>();
      expectTypeOf(e.keys).toEqualTypeOf<readonly (number | string)[]>();
    });
    system.once('tellError', () => {});
    system.off('tellError');
    // @ts-expect-error: no such event
    system.on('tellErorr', () => {});
    // @ts-expect-error: no such field on a tellError event
    system.on('tellError', (e) => e.rows);
  });

  it('metrics() fields', () => {
    const system = new GrainSystem({ backends: {} });
    const m = system.metrics();
    expectTypeOf(m).toEqualTypeOf<Record<string, ClassMetrics>>();
    const a = m['Account'];
    // noUncheckedIndexedAccess: a class may be missing
    expectTypeOf(a).toEqualTypeOf<ClassMetrics | undefined>();
    if (!a) return;
    const nums: number[] = [
      a.sent,
      a.processed,
      a.rejected,
      a.hostRejected,
      a.k2kReceived,
      a.k2kSent,
      a.cancelled,
      a.inboundDepth,
      a.heartbeat,
    ];
    void nums;
    expectTypeOf(a.state).toEqualTypeOf<string>();
    expectTypeOf(a.backend).toEqualTypeOf<string>();
    if (a.overflow)
      void [a.overflow.capacity, a.overflow.inUse, a.overflow.highWater, a.overflow.overflowed, a.overflow.exhausted];
    if (a.storage)
      void [
        a.storage.resident,
        a.storage.unwritten,
        a.storage.flushes,
        a.storage.rowsWritten,
        a.storage.loads,
        a.storage.loadedFound,
        a.storage.preloaded,
        a.storage.conflicts,
        a.storage.errors,
        a.storage.deactivated,
        a.storage.laneLoads,
      ];
    if (a.timers) void [a.timers.ticks, a.timers.tickErrors, a.timers.armed];
    if (a.reminders) void [a.reminders.armed, a.reminders.fired, a.reminders.writeErrors];
    expectTypeOf(system.counters(Account).sent).toEqualTypeOf<number>();
    // @ts-expect-error: no such counter
    void a.delivered;
  });
});

describe('timers and reminders API', () => {
  it('README program', async () => {
    const store = new LmdbStore({ dataDir: './state' });
    const clock = { now: 0 };
    const system = new GrainSystem({ backends: { cpu: new CpuBackend() }, clock: () => clock.now });
    system.register(Sensor, { placement: 'cpu', storage: store });
    await system.start();
    await system.reminders(Sensor).set(42, 'daily', { periodMs: 86_400_000, dueMs: 60_000 });
    expectTypeOf(await system.reminders(Sensor).clear(42, 'daily')).toEqualTypeOf<boolean>();
    expectTypeOf(system.reminders(Sensor).list()).toEqualTypeOf<ReminderInfo[]>();
    expectTypeOf(system.reminders(Sensor).list(42)).toEqualTypeOf<ReminderInfo[]>();
    clock.now += 100;
    expectTypeOf(await system.advanceTimers()).toEqualTypeOf<number>();
    await system.advanceTimers({ timeoutMs: 1000 });
    // @ts-expect-error: a reminder set needs its period
    await system.reminders(Sensor).set(42, 'daily', { dueMs: 1 });
    // @ts-expect-error: Sensor keys are numbers
    await system.reminders(Sensor).set('42', 'daily', { periodMs: 1 });
  });
});

describe('errors', () => {
  it('classes carry code, hint, cause and their own fields', () => {
    const e: unknown = undefined;
    if (e instanceof RinggrainError) {
      expectTypeOf(e.code).toEqualTypeOf<string>();
      expectTypeOf(e.hint).toEqualTypeOf<string | undefined>();
      expectTypeOf(e.cause).toEqualTypeOf<unknown>();
      expectTypeOf(e.message).toEqualTypeOf<string>();
    }
    if (e instanceof SchemaValidationError) expectTypeOf(e.path).toEqualTypeOf<ReadonlyArray<PropertyKey>>();
    if (e instanceof HandlerError) expectTypeOf([e.grain, e.method]).toEqualTypeOf<string[]>();
    if (e instanceof AskManyError) expectTypeOf([e.row, e.failedRows]).toEqualTypeOf<number[]>();
    if (e instanceof ReplyTargetError) expectTypeOf(e.field).toEqualTypeOf<string>();
    if (e instanceof IdleTimeoutError) expectTypeOf(e.unbalanced).toEqualTypeOf<readonly string[]>();
    if (e instanceof TimerSpecError)
      expectTypeOf(e.problem).toEqualTypeOf<
        'unknown-method' | 'request-not-empty' | 'bad-period' | 'bad-due' | 'too-many' | 'unknown-timer' | 'bad-name'
      >();
    if (e instanceof TimerArgumentError) void e.problem;
    const all: RinggrainError[] = [
      new InvalidKeyError('A', 1.5, 'a safe integer'),
      new InvalidTransitionError('A', 'created', 'activate'),
      new KernelTerminatedError('A'),
      new QueueFullError('A', 10),
      new PayloadTooLargeError('A.m', 300, 256, 32),
      new TimersUnsupportedError('A', 'cuda'),
      new ReminderStorageError('A', 'no storage'),
    ];
    void all;
    const classes = [StateLoadError, StateVersionConflictError, StorageUnsupportedError, WorkerDiedError];
    void classes;
  });
});
