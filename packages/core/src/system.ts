import { EventEmitter } from 'eventemitter3';
import type { Logger } from 'pino';
import type { KernelOptions } from './backend.ts';
import { InvalidTransitionError, PlacementError, RinggrainError, UnknownGrainError } from './errors.ts';
import type {
  AnyGrainClass,
  AskMethodName,
  GrainDef,
  MethodName,
  ReplyOf,
  RequestInput,
  SpecOf,
  TypesOf,
} from './grain.ts';
import type { KernelCounters, RingKernel, TerminateOptions } from './kernel.ts';
import type { Columns, ReplyColumns } from './bulk.ts';
import { installSignalShutdown } from './signals.ts';
import { inGrainImport, noteGrainClass } from './grain-import.ts';
import { makeRefFactory, type GrainRef } from './ref.ts';
import { rejectAsk } from './pending.ts';
import { storageOptions } from './persist/options.ts';
import type { FlushResult } from './persist/write-behind.ts';
import type { ClusterRouter } from './cluster/router.ts';
import { ReminderStorageError } from './timers/errors.ts';
import {
  kernelOptionsOf,
  systemConfig,
  type RegisterOptions,
  type SystemConfig,
  type SystemOptions,
  type WithHandlers,
} from './system/options.ts';
import type { ClassMetrics, SystemEvents } from './system/events.ts';
import { SystemState, type Registration, type Route } from './system/state.ts';
import { SendClock } from './system/send-clock.ts';
import { Sender } from './system/send.ts';
import { BulkSender } from './system/bulk-send.ts';
import { SpillDrain } from './system/spill-drain.ts';
import { ReplyPump } from './system/reply-pump.ts';
import { SystemTimers, type SystemReminders } from './system/timers.ts';
import { Persistence } from './system/persistence.ts';
import { IdleCollection } from './system/idle-collection.ts';
import { Sweeper } from './system/sweep.ts';
import { waitIdle } from './system/quiescence.ts';
import {
  allocateOwnerships,
  createKernels,
  joinSystemCluster,
  launchKernels,
  resolvePlacements,
} from './system/start.ts';

export {
  DEFAULT_KERNEL_OPTIONS,
  type Placement,
  type RegisterOptions,
  type SystemOptions,
  type WithHandlers,
} from './system/options.ts';
export type { ClassMetrics, SystemEvents } from './system/events.ts';
export type { Route } from './system/state.ts';
export type { SystemReminders } from './system/timers.ts';

/**
 * The silo: registers grain classes with a placement, launches one ring kernel per class, routes
 * messages into rings, and matches replies to asks. Replies may come from any kernel (forward chains),
 * so pending asks live here, keyed by correlation id.
 *
 * A facade: each concern is a part in system/ (options, single sends and the send clock, bulk sends, the
 * reply pump and the waiting sends, the sweep, timers and reminders, persistence, idle collection,
 * quiescence, start), sharing one SystemState.
 */
export class GrainSystem extends EventEmitter<SystemEvents> {
  readonly logger: Logger;
  readonly clock: () => number;
  readonly askTimeoutMs: number;
  readonly queueFullTimeoutMs: number;
  readonly maxQueuedBytes: number;
  readonly handshakeTimeoutMs: number;
  readonly heartbeatTimeoutMs: number;
  private readonly config: SystemConfig;
  private readonly state: SystemState;
  private readonly sender: Sender;
  private readonly bulk: BulkSender;
  private readonly pump: ReplyPump;
  private readonly spillDrain: SpillDrain;
  private readonly timers: SystemTimers;
  private readonly persistence: Persistence;
  private readonly idleCollection: IdleCollection;
  private readonly sweeper: Sweeper;
  private readonly refFactories = new Map<GrainDef, (key: number | string) => unknown>();
  private started = false;
  private starting: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private uninstallSignals: (() => void) | undefined;

  constructor(opts: SystemOptions) {
    super();
    const config = (this.config = systemConfig(opts));
    this.logger = config.logger;
    this.clock = config.clock;
    this.askTimeoutMs = config.askTimeoutMs;
    this.queueFullTimeoutMs = config.queueFullTimeoutMs;
    this.maxQueuedBytes = config.maxQueuedBytes;
    this.handshakeTimeoutMs = config.handshakeTimeoutMs;
    this.heartbeatTimeoutMs = config.heartbeatTimeoutMs;
    const state = (this.state = new SystemState(config, this));
    this.sender = new Sender(state, new SendClock(state));
    this.bulk = new BulkSender(state, this.sender);
    this.timers = new SystemTimers(state, this.sender);
    this.persistence = new Persistence(state, this.timers.sendReminder);
    this.spillDrain = new SpillDrain(state, this.bulk.drainRows);
    this.pump = new ReplyPump(state, this.spillDrain, this.persistence.loadLookups, this.timers.onReminderRecord);
    state.schedulePump = () => this.pump.schedule();
    this.idleCollection = new IdleCollection(state);
    this.sweeper = new Sweeper(state, {
      drainReplies: () => this.pump.drainReplies(),
      schedulePump: state.schedulePump,
      collectIdleAll: () => this.idleCollection.collectIdleAll(),
      runTimers: () => this.timers.runTimers(),
      stopping: () => this.stopping !== undefined,
    });
  }

  /**
   * Whether tellMany hands a lane that takes column images (LaneMemory.images) one image per chunk of its
   * rows instead of a slot per row. Off: every backend gets rows (benchmarks compare the two).
   */
  get tellManyImages(): boolean {
    return this.bulk.images;
  }
  set tellManyImages(on: boolean) {
    this.bulk.images = on;
  }

  /** Late replies (their ask had timed out or was rejected); counted, not lost silently. */
  get lateReplies(): number {
    return this.pump.lateReplies;
  }

  /** The cluster this system joined (members, events, metrics), once started with `cluster`; undefined otherwise. */
  get cluster(): ClusterRouter<Route> | undefined {
    return this.state.router;
  }

  private installSignalHandlers(): void {
    if (!this.config.handleSignals || this.uninstallSignals) return;
    const signalExitMs = this.config.signalExitMs;
    this.uninstallSignals = installSignalShutdown({
      logger: this.logger,
      exitAfterMs: signalExitMs,
      shutdown: () => this.shutdown({ mode: 'reject', timeoutMs: Math.max(100, Math.floor(signalExitMs / 2)) }),
      leftBehind: () =>
        this.kernels().flatMap((k) => {
          const held = k.heldBy();
          return held === undefined ? [] : [`kernel ${k.def.name} (${k.backend.name}: ${held})`];
        }),
    });
  }

  private removeSignalHandlers(): void {
    this.uninstallSignals?.();
    this.uninstallSignals = undefined;
  }

  /**
   * `cls` must define a handler for every method its spec declares (a compile error otherwise, not a launch failure).
   */
  register<C extends AnyGrainClass>(cls: C & WithHandlers<C>, opts: RegisterOptions = {}): this {
    const def = cls.grain as GrainDef;
    const { regs, byDef } = this.state;
    if (byDef.has(def)) throw new PlacementError(`grain "${def.name}" is registered twice`);
    if (regs.some((r) => r.def.name === def.name)) {
      throw new PlacementError(`two grain classes are named "${def.name}"`, {
        hint: 'grain names must be unique in a system',
      });
    }
    if (this.started) throw new PlacementError(`register "${def.name}" before system.start()`);
    if (inGrainImport()) noteGrainClass(cls);
    const { placement = 'auto', storage, flushIntervalMs, idleMs, ...rest } = opts;
    if (def.reminders.length && !storage)
      throw new ReminderStorageError(def.name, 'it declares reminders but was registered without storage');
    const options = kernelOptionsOf(def, rest as Partial<KernelOptions>, this.config);
    const reg: Registration = {
      cls,
      def,
      placement,
      options,
      storage: storageOptions(def.name, { storage, flushIntervalMs, idleMs }),
      lastCollect: 0,
      collecting: undefined,
      dropped: 0,
    };
    regs.push(reg);
    byDef.set(def, reg);
    return this;
  }

  /**
   * Resolves placements, creates every kernel, launches and activates them. Every call until shutdown gets
   * the one start's Promise: a second caller (even one that calls while the first start runs) resolves
   * only once the system serves, and a start that failed keeps failing with its error.
   */
  start(): Promise<void> {
    // In a thread importing grain modules for their classes (grain-import.ts), never start: a module that
    // is also a program pauses here, and the importer takes the classes it registered.
    if (inGrainImport()) return new Promise<void>(() => {});
    return (this.starting ??= this.startOnce());
  }

  private async startOnce(): Promise<void> {
    this.started = true;
    const state = this.state;
    const resolved = await resolvePlacements(state);
    for (const reg of state.regs) await this.persistence.openStorage(reg);
    const ownership = this.config.cluster ? allocateOwnerships(state.regs) : undefined;
    createKernels(state, resolved, this, this.persistence, this.sender, ownership);
    await launchKernels(state.regs);
    // Reminders a stopped system missed fire now, once (reminders/service.ts), after every kernel is up.
    this.timers.runTimers();
    for (const reg of state.regs) {
      if (!reg.writeBehind) continue;
      reg.flushTimer = setInterval(() => void reg.writeBehind!.flush(), reg.storage.flushIntervalMs);
      reg.flushTimer.unref();
    }
    this.sweeper.start();
    this.installSignalHandlers();
    if (this.config.cluster) {
      const local = {
        idle: (o: { timeoutMs: number }) => this.localIdle(o),
        metrics: () => this.metrics(),
        advanceTimers: (o: { timeoutMs: number }) => this.timers.advanceTimers(o),
      };
      state.router = await joinSystemCluster(
        state,
        this.config.cluster,
        resolved,
        this.sender,
        this.persistence,
        ownership,
        local,
      );
    }
  }

  /** The kernel hosting a grain class (lifecycle control, counters). */
  kernel(cls: AnyGrainClass): RingKernel {
    const reg = this.state.byDef.get(cls.grain as GrainDef);
    if (!reg) throw new UnknownGrainError(cls.grain?.name ?? String(cls));
    if (!reg.kernel)
      throw new PlacementError(`grain "${reg.def.name}" has no kernel yet`, { hint: 'call system.start() first' });
    return reg.kernel;
  }

  kernels(): RingKernel[] {
    return this.state.kernels();
  }

  /** A typed reference: `await ref.deposit({...})` asks; `ref.tell.deposit({...})` is one-way. */
  grain<C extends AnyGrainClass>(
    cls: C,
    key: C extends { grain: GrainDef<infer S> } ? (S['key'] extends 'string' ? string : number) : never,
  ): GrainRef<C> {
    const def = cls.grain as GrainDef;
    // In a cluster, a class hosted elsewhere is reached through it (client mode).
    if (!this.state.byDef.has(def) && !(this.config.cluster && def?.methodByName))
      throw new UnknownGrainError(def?.name ?? String(cls));
    let make = this.refFactories.get(def);
    if (!make) {
      make = makeRefFactory(def, this.sender);
      this.refFactories.set(def, make);
    }
    return make(key as number | string) as GrainRef<C>;
  }

  /**
   * N tells from columns: `system.tellMany(Account, 'credit', { key: Int32Array, amount: Float64Array })`.
   * Every column is checked first (kind, range, one value per key), so a bad column throws a
   * SchemaValidationError naming the column and row and nothing is sent; then the rows go out in order,
   * exactly as N `ref.tell.method(...)` calls would (FIFO, counters, a full ring waits, handler failures
   * arrive as `tellError` events). Returns the number of messages sent.
   */
  tellMany<C extends AnyGrainClass, M extends MethodName<SpecOf<C>>>(
    cls: C,
    method: M,
    columns: Columns<RequestInput<SpecOf<C>, M>, TypesOf<C>['key']>,
  ): number {
    return this.bulk.tellMany(cls, method, columns);
  }

  /**
   * N asks from columns, like `tellMany`: `await system.askMany(Account, 'deposit', { key, amount })`
   * resolves with the replies as columns (a Float64Array per numeric reply field, an array otherwise),
   * row i answering ask i. Columns are checked first as in tellMany (a bad column throws and sends
   * nothing); the asks then go out in order and are answered in flight. If any fails, it rejects after
   * all have settled with an AskManyError naming the first failed row and its error.
   */
  askMany<C extends AnyGrainClass, M extends AskMethodName<SpecOf<C>>>(
    cls: C,
    method: M,
    columns: Columns<RequestInput<SpecOf<C>, M>, TypesOf<C>['key']>,
  ): Promise<ReplyColumns<ReplyOf<SpecOf<C>, M>>> {
    return this.bulk.askMany(cls, method, columns);
  }

  /** Untyped send used by refs; `corr` 0 means a tell. */
  send(
    def: GrainDef,
    methodName: string,
    key: number | string,
    payload: unknown,
    ask: boolean,
  ): Promise<unknown> | undefined {
    return this.sender.sendRoute(this.sender.route(def, methodName), key, payload, ask);
  }

  /** Resolves a grain class and method once; refs keep the result so sends skip the lookups. */
  route(def: GrainDef, methodName: string): Route {
    return this.sender.route(def, methodName);
  }

  /** The send path of refs: route resolved when the ref was made. A bad key fails the send (an ask rejects). */
  sendRoute(
    route: Route,
    key: number | string,
    payload: unknown,
    ask: boolean,
    into?: Readonly<Record<string, unknown>>,
  ): Promise<unknown> | undefined {
    return this.sender.sendRoute(route, key, payload, ask, into);
  }

  /** KernelHost: asks waiting on a kernel's replies. */
  pendingAsksOf(kernel: RingKernel): number {
    return this.state.pending.countOf(kernel);
  }

  /** KernelHost: sends accepted for a kernel that still wait for ring space. */
  waitingSendsOf(kernel: RingKernel): number {
    return this.state.spills.get(kernel)?.size ?? 0;
  }

  /** KernelHost: fails every ask waiting on a kernel and every send waiting for its ring. */
  rejectAsksOf(kernel: RingKernel, error: Error): void {
    const pending = this.state.pending;
    for (const [corr, p] of pending) {
      if (p.kernel !== kernel) continue;
      pending.delete(corr);
      rejectAsk(corr, p, error);
    }
    this.spillDrain.cancel(kernel, error);
  }

  /** KernelHost: a kernel acknowledged STOP at terminate: deactivate every actor (onDeactivate), write the states. */
  stopped(kernel: RingKernel): Promise<void> {
    return this.persistence.stopped(kernel);
  }

  /** KernelHost: before STOP (where the backend asks): deactivate every actor and write the states while it runs. */
  beforeStop(kernel: RingKernel): Promise<void> {
    return this.persistence.beforeStop(kernel);
  }

  /**
   * Runs the timers and reminders due by the system's clock now: fires the due reminders (tells) and,
   * with an injected clock, publishes its time to the kernels and resolves once every active kernel has
   * run the ticks due by it (as turns: a later ask sees their effects). Tests step time with it:
   * `clock.now += 100; await system.advanceTimers()`. Resolves to the reminders fired.
   */
  advanceTimers(opts: { timeoutMs?: number } = {}): Promise<number> {
    // A cluster client hosts no kernel: the silos' timers advance, each by its own clock (cluster/control.ts).
    if (this.state.router && this.state.regs.length === 0) return this.state.router.advanceTimers(opts);
    return this.timers.advanceTimers(opts);
  }

  /**
   * The reminders of a grain class (registered with storage and declaring `reminders`): set, clear and
   * list them from outside a handler. Set and clear resolve once the store committed the row.
   */
  reminders<C extends AnyGrainClass>(cls: C): SystemReminders<C> {
    return this.timers.reminders(cls);
  }

  /**
   * Writes every dirty actor's state now (all grain classes with storage, or one), in one bulk write per
   * class. Resolves once written; rows that could not be (a version conflict, a store failure) are
   * reported as `storageError` events and stay dirty: `kept` counts them.
   */
  flush(cls?: AnyGrainClass): Promise<FlushResult> {
    return this.persistence.flush(cls);
  }

  /**
   * Loads stored states into the kernel before messages ask for them: the keys given, or every stored
   * actor of the class (a scan in key order). Actors the kernel holds already keep their state; actors
   * that find no room are left to load on their first message. Resolves to how many were uploaded.
   */
  preload<C extends AnyGrainClass>(cls: C, keys?: ReadonlyArray<TypesOf<C>['key']>): Promise<number> {
    return this.persistence.preload(cls, keys);
  }

  /**
   * Deactivates now the actors of a class registered with `idleMs` (or all such classes) whose last turn
   * is older than `idleMs` by the system's clock; the sweep does this on its own every `idleMs / 2`.
   * Resolves to how many were deactivated, counting those of a collection already under way (which it
   * waits for): once it resolves, every such actor is deactivated and its state handed to the write-behind.
   */
  collectIdle(cls?: AnyGrainClass): Promise<number> {
    return this.idleCollection.collectIdle(cls);
  }

  counters(cls: AnyGrainClass): KernelCounters {
    return this.kernel(cls).counters();
  }

  metrics(): Record<string, ClassMetrics> {
    const out: Record<string, ClassMetrics> = {};
    for (const reg of this.state.regs) {
      const k = reg.kernel;
      if (!k) continue;
      const overflow = k.overflow();
      const storage = reg.writeBehind?.metrics();
      const timers = k.backendKernel?.timerStats?.();
      const reminders = reg.reminders?.metrics();
      const devices = k.backendKernel?.deviceMemory?.();
      out[k.def.name] = {
        ...k.counters(),
        state: k.state,
        backend: k.backend.name,
        ...(overflow ? { overflow } : {}),
        ...(storage ? { storage } : {}),
        ...(timers ? { timers } : {}),
        ...(reminders ? { reminders } : {}),
        ...(devices ? { devices } : {}),
      };
    }
    return out;
  }

  /**
   * Resolves when everything sent has been processed: no send waits for ring space, and for every kernel
   * `sent + k2kReceived = processed + rejected + hostRejected` with nothing in its inbound ring, and in
   * total K2K sent = K2K received (so the K2K chains that host messages caused have ended too).
   * Throws IdleTimeoutError (naming what did not balance) after `timeoutMs`.
   *
   * Why that is exact: each kernel publishes its counters as of some moment of its own, so one balanced
   * reading can mix a kernel seen before a K2K message reached it with its sender seen after a turn that
   * the message set off. So it takes two waves (termination detection by four counters): a first
   * balanced reading gives D, everything finished as of then; then every running kernel is asked for a
   * publication made after that reading (RingKernel.requestPublication), and the second reading must
   * balance with the same D finished and no turn under way (`queued`, a GPU kernel's publisher runs beside
   * its turns). Everything that was in flight at the first reading is sent in the second and not
   * finished in the first, so equal counts leave nothing in flight. Counts must then hold for `holdMs`
   * (default 0.25) from the first reading: a margin, not the proof. Polls on every event-loop turn for
   * the first 20 ms (a GPU step often settles within a millisecond), then every millisecond.
   */
  idle(opts: { timeoutMs?: number; holdMs?: number } = {}): Promise<void> {
    // A cluster client hosts no kernel: what it sent was processed when the cluster is idle (cluster/control.ts).
    if (this.state.router && this.state.regs.length === 0) return this.state.router.idle(opts);
    return this.localIdle(opts);
  }

  /** idle() of this system's own kernels (a silo answers a client's idle() with it). */
  private localIdle(opts: { timeoutMs?: number; holdMs?: number }): Promise<void> {
    return waitIdle(this.state, () => this.pump.drainReplies(), opts);
  }

  async launch(cls: AnyGrainClass): Promise<void> {
    const k = this.kernel(cls);
    await k.launch();
    await k.activate();
  }

  /**
   * Terminates every kernel (draining by default), then releases backends. A call while a shutdown runs
   * gets that shutdown's Promise (two terminates of one kernel would be an invalid transition).
   */
  shutdown(opts: TerminateOptions = {}): Promise<void> {
    return (this.stopping ??= this.shutdownOnce(opts).finally(() => (this.stopping = undefined)));
  }

  private async shutdownOnce(opts: TerminateOptions): Promise<void> {
    const state = this.state;
    this.removeSignalHandlers();
    // Leave the cluster first: partitions move to the others while this silo still forwards and serves.
    await state.router?.close();
    state.router = undefined;
    this.sweeper.stop();
    // Every kernel stops before any kernel's memory is freed (kernel.ts terminate: keepMemory).
    for (const reg of state.regs) {
      if (reg.flushTimer) clearInterval(reg.flushTimer);
      reg.flushTimer = undefined;
    }
    const live = this.kernels().filter((k) => k.state !== 'terminated' && k.state !== 'created');
    // Each terminate deactivates its actors and flushes their states once STOP is acknowledged (stopped()).
    for (const k of live) {
      // A terminate the application called meanwhile (kernel(G).terminate()) already did this one's work.
      await k.terminate({ ...opts, keepMemory: true }).catch((e: unknown) => {
        if (!(e instanceof InvalidTransitionError && k.state === 'terminated')) throw e;
      });
    }
    for (const k of live) await k.releaseMemory();
    // A kernel that could not stop: what earlier deactivations left unwritten still goes out.
    for (const reg of state.regs) if (reg.writeBehind) await reg.writeBehind.flush();
    for (const reg of state.regs) await reg.reminders?.settled();
    for (const b of new Set(this.kernels().map((k) => k.backend))) await b.dispose();
    this.started = false;
    this.starting = undefined;
  }
}

export { RinggrainError };
