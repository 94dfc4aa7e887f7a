import { EventEmitter } from 'eventemitter3';
import { pino, type Logger } from 'pino';
import type { ActorKey, Backend, BackendKernel, KernelOptions, OverflowStats, PersistencePlan } from './backend.ts';
import {
  AskManyError,
  AskTimeoutError,
  SchemaValidationError,
  IdleTimeoutError,
  BackendUnavailableError,
  DecodeError,
  InvalidKeyError,
  InvalidTransitionError,
  KernelFaultError,
  KernelNotRunningError,
  PlacementError,
  QueueFullError,
  ReplyTargetError,
  RinggrainError,
  UnknownGrainError,
  UnknownMethodError,
} from './errors.ts';
import type { AnyGrainClass, AskMethodName, GrainDef, MethodDef, MethodName, ReplyOf, RequestInput, SpecOf, TypesOf } from './grain.ts';
import { RingKernel, type KernelCounters, type TerminateOptions, type TransitionEvent } from './kernel.ts';
import { compileRowLoop, type RowLoop } from './row-codegen.ts';
import { fixedWriter, type FixedWrite } from './tell-image.ts';
import { laneOfKey } from './lanes.ts';
import { columnImageBytes, columnImageFields, packColumnImageRows, type ColumnField } from './column-image.ts';
import { PendingAsks, type AskBatch, type PendingAsk } from './pending.ts';
import type { RingProducer } from './ring.ts';
import { DEFAULT_MAX_QUEUED_BYTES, Spill, type RowsSegment, type SlotTarget } from './spill.ts';
import { validateColumns, type Columns, type ReplyColumns } from './bulk.ts';
import { scaledDefault } from './timeouts.ts';
import { installSignalShutdown } from './signals.ts';
import { readableStderr } from './log.ts';
import { inGrainImport, noteGrainClass } from './grain-import.ts';
import { COUNTERS, HOST_SENDER, SLOT, SlotFlag } from './protocol.ts';
import { makeRefFactory, type GrainRef } from './ref.ts';
import { SlotReader, SlotWriter, TEXT_CUT_MARK, splitKeyHi, splitKeyLo } from './slot.ts';
import { isNumericScalar, type Schema } from './schema/types.ts';
import { KINDS } from './schema/kinds.ts';
import type { StateStore } from './store/types.ts';
import { StateLoadError, StorageUnsupportedError } from './store/errors.ts';
import { errorOfReply, type LoadFailures } from './reply-error.ts';
import { SystemOptionsError } from './errors.ts';
import { stateTableSpec } from './store/scan.ts';
import { HOOK_METHOD, KERNEL_RECORD } from './grain.ts';
import { ReminderService, type ReminderInfo, type ReminderMetrics } from './reminders/service.ts';
import { ReminderStorageError, TimersUnsupportedError } from './timers/errors.ts';
import type { TimerStart } from './timers/spec.ts';
import type { TimerStats } from './backend.ts';
import { waitUntil } from './wait.ts';
import { WriteBehind, type FlushResult, type StorageErrorEvent, type StorageMetrics } from './persist/write-behind.ts';
import { storageOptions, type ResolvedStorageOptions, type StorageOptions } from './persist/options.ts';
import { LOCAL, type ClusterRouter } from './cluster/router.ts';
import { joinCluster, remoteRegistration } from './cluster/attach.ts';
import type { Cluster } from './cluster/types.ts';
import { allocateOwnership } from './cluster/ownership.ts';
import { ClusterK2KUnsupportedError } from './cluster/errors.ts';

/** A class whose instances have a method for each of its spec's methods (any class when its spec is not known). */
export type WithHandlers<C extends AnyGrainClass> = string extends MethodName<SpecOf<C>> ? unknown : { new (): { readonly [M in MethodName<SpecOf<C>>]: (...args: never[]) => unknown } };

/** A backend's name as given in `backends` (e.g. 'cpu', 'cuda', or any name of yours), or 'auto'. */
export type Placement = 'auto' | (string & {});

export interface RegisterOptions extends Partial<KernelOptions>, StorageOptions {
  placement?: Placement;
}

export interface SystemOptions {
  /**
   * Backends by name; core never imports one and names none. Typically `{ cpu: new CpuBackend(), cuda:
   * new CudaBackend() }`; a placement is one of these names or 'auto'.
   */
  backends: Readonly<Record<string, Backend>>;
  /**
   * Which backends `placement: 'auto'` tries, in order: the first whose probe passes. Default: every
   * backend given, by its `autoRank` (an accelerator first), ties in the order given.
   */
  autoOrder?: readonly string[];
  logger?: Logger;
  /** Level of the default logger (JSON lines on stderr); default RINGGRAIN_LOG or 'info'. */
  logLevel?: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /**
   * Clock for ctx.now() of host-sent messages (ms). Inject a fake for deterministic tests. With an
   * injected clock, timers run on it too: the host publishes its time to the kernels (every sweep, and at
   * `advanceTimers()`); without one, each kernel's timers read the kernel's own clock (Date.now()).
   */
  clock?: () => number;
  defaults?: Partial<KernelOptions>;
  /** Default timeouts here are multiplied by RINGGRAIN_TIMEOUT_SCALE (runs under a sanitizer or debugger). */
  askTimeoutMs?: number;
  /** How long a send waits for space in a full ring before it fails with QueueFullError. */
  queueFullTimeoutMs?: number;
  /**
   * Per kernel, the most bytes that sends waiting for its full ring may take (default 256 MiB): past it a
   * send fails at the call with QueueLimitError, so a loop that never yields cannot run out of memory.
   */
  maxQueuedBytes?: number;
  handshakeTimeoutMs?: number;
  /** A kernel whose heartbeat stands still this long while asks wait on it is declared faulted. */
  heartbeatTimeoutMs?: number;
  /** Microseconds the host spins for replies before it sleeps; low latency for awaited asks. */
  replySpinMicros?: number;
  /**
   * On SIGINT/SIGTERM, terminate every kernel (pending asks rejected, GPU work stopped, memory freed) and
   * exit with 130/143. Default true; set false if the application handles signals itself.
   */
  handleSignals?: boolean;
  /** After SIGINT/SIGTERM the process exits within this many ms even if a kernel cannot be stopped (default 5000). */
  signalExitMs?: number;
  /**
   * Join a cluster of silos (e.g. `natsCluster({ servers, name })` from `@ringgrain/cluster-nats`): keys of
   * the classes registered here are spread over the silos hosting them; other classes are reached as a
   * client. Without it the system is one process and needs no server (docs/cluster.md).
   */
  cluster?: Cluster;
}

/** Placement names a backend the system was not given: the first fix is to pass one, not a driver. */
const BACKEND_CLASSES: Record<string, readonly [string, string]> = {
  cuda: ['CudaBackend', '@ringgrain/cuda-backend'],
  cpu: ['CpuBackend', '@ringgrain/cpu-backend'],
  inline: ['InlineBackend', '@ringgrain/inline-backend'],
};
function missingBackendHint(name: string): string {
  const c = BACKEND_CLASSES[name];
  const pass = c ? `new GrainSystem({ backends: { ${name}: new ${c[0]}(), ... } }) (${c[0]} from ${c[1]})` : `new GrainSystem({ backends: { ${name}: <a backend>, ... } })`;
  return `pass a "${name}" backend: ${pass}, or register the class with placement "auto"`;
}

/** Resources that do not keep a finished program alive by themselves (stdio, message ports; checkForgottenShutdown). */
const QUIET_RESOURCES = new Set(['TTYWrap', 'PipeWrap', 'MessagePort']);

/** The largest reply ring that follows a larger inbound ring by default (register says why). */
const REPLY_RING_FOLLOWS_UP_TO = 16_384;

export const DEFAULT_KERNEL_OPTIONS: KernelOptions = {
  slotSize: 256,
  ringCapacity: 4096,
  replyCapacity: 4096,
  maxActors: 1 << 17,
  turnBudget: 1 << 20,
};

/**
 * askMany's replies into columns, both paths: row i's reply fields go to out[field][i]; once every row has
 * settled it resolves with the columns, or rejects with an AskManyError naming the lowest failed row.
 */
function replyColumns(n: number, out: Record<string, Float64Array | unknown[]>, replyNames: readonly string[], where: string, resolve: (v: unknown) => void, reject: (e: Error) => void): Pick<AskBatch, 'ok' | 'fail' | 'okInPlace'> {
  let left = n;
  let failed = 0;
  let first: { row: number; error: Error } | undefined;
  const settle = () => {
    if (--left > 0) return;
    if (first) reject(new AskManyError(where, first.row, failed, n, first.error));
    else resolve(out);
  };
  if (n === 0) resolve(out);
  return {
    ok: (row, r) => {
      const rec = r as Record<string, unknown>;
      for (const f of replyNames) out[f]![row] = rec[f];
      settle();
    },
    okInPlace: settle,
    fail: (row, e) => {
      failed++;
      if (!first || row < first.row) first = { row, error: e };
      settle();
    },
  };
}

/** A batch entry is settled through its batch (resolveAsk / rejectAsk), never through these. */
function unexpected(): never {
  throw new Error('internal: an askMany row was settled as a single ask');
}

/** Settles one pending ask (a row of a batch, or a single ask). */
function resolveAsk(corr: number, p: PendingAsk, v: unknown): void {
  if (p.batch) p.batch.ok(corr - p.batch.corrBase, v);
  else p.resolve(v);
}
function rejectAsk(corr: number, p: PendingAsk, e: Error): void {
  if (p.batch) p.batch.fail(corr - p.batch.corrBase, e);
  else p.reject(e);
}
/** The kernel lane that owes an ask's reply (a batch row's from its key). */
function laneOfAsk(corr: number, p: PendingAsk): number {
  return p.batch ? laneOfKey(p.batch.key[corr - p.batch.corrBase]!, p.batch.lanes) : p.lane;
}

/** tellMany's rows from `rows.next` on, waiting for ring space as one spill segment. */
interface RowsWaiting extends RowsSegment {
  readonly rows: BulkRows;
  readonly def: MethodDef;
}

/** tellMany calls shorter than this write rows (an image's slot, pack and buffer hand-off cost more). */
const IMAGE_MIN_ROWS = 64;
/** Tells and asks written before their seqs are published (ring.ts claimHeld): at most this many a lane. */
const HOLD_RUN = 32;
/** Sends of one synchronous burst that carry one reading of the default clock (sendTime). */
const SEND_TIME_REUSE = 256;

/** Rows of these fields one buffer of `bytes` holds. */
function imageRowsFitting(fields: readonly ColumnField[], bytes: number): number {
  const perRow = columnImageBytes(fields, 2) - columnImageBytes(fields, 1) + 8;
  let rows = Math.floor(bytes / perRow);
  while (rows > 0 && columnImageBytes(fields, rows) > bytes) rows--;
  return rows;
}

interface BulkRows {
  next: number;
  readonly end: number;
  readonly key: ArrayLike<unknown>;
  readonly cols: Record<string, ArrayLike<unknown>>;
  readonly names: readonly string[];
  /** The generated row loop (row-codegen.ts) and its columns in schema order, once chosen; null where it does not apply (a field that is not a scalar, string keys). */
  loop?: { readonly run: RowLoop; readonly cols: ReadonlyArray<ArrayLike<unknown>> } | null;
  /** askMany's rows: row i is an ask with correlation id corrBase + i (its pending entry is made up front). */
  readonly corrBase?: number;
  /** tellMany's rows as column images (next/end then count rows sent, not call indices). */
  readonly images?: ImageRows;
}

/** The call's index of the first row of a waiting segment not sent (image rows: the least over lanes). */
function firstUnsent(seg: RowsWaiting): number {
  const img = seg.rows.images;
  if (!img) return seg.rows.next;
  let first = seg.rows.end;
  for (const [l, list] of img.lists.entries()) if (img.at[l]! < list.length) first = Math.min(first, list[img.at[l]!]!);
  return first;
}

interface ImageRows {
  readonly fields: readonly ColumnField[];
  readonly key: ArrayLike<number>;
  /** The request's columns in field order. */
  readonly cols: ReadonlyArray<ArrayLike<unknown>>;
  readonly method: MethodDef;
  /** Per lane: its rows' indices in call order, and how many of them were sent. */
  readonly lists: readonly Int32Array[];
  readonly at: Int32Array;
  /** Rows one image buffer holds. */
  readonly perImage: number;
}

export interface SystemEvents {
  transition: (e: TransitionEvent) => void;
  /** A tell (no asker to reject) failed in its handler or was refused by the kernel. */
  tellError: (e: { grain: string; method: string; error: Error; row?: number }) => void;
  fault: (e: { grain: string; error: Error }) => void;
  /**
   * A state store operation failed (write-behind, load on first activation, preload): a version
   * conflict (StateVersionConflictError: the actor stays dirty and is tried again), an unreachable or
   * full store, a row that does not decode (StateLoadError: the actor's waiting messages were rejected).
   */
  storageError: (e: StorageErrorEvent) => void;
  /**
   * A lane's consumer died and the backend restarted it (the CPU pool's threads): the asks that waited on
   * that lane failed with `error`; the kernel keeps serving.
   */
  laneRestart: (e: { grain: string; lane: number; error: Error; failedAsks: number }) => void;
}

/** One grain class's figures in `system.metrics()`. */
export type ClassMetrics = KernelCounters & {
  state: string;
  backend: string;
  overflow?: OverflowStats;
  storage?: StorageMetrics;
  /** Timer ticks the kernel ran (not messages: they are outside sent/processed), when the class has timers. */
  timers?: TimerStats;
  reminders?: ReminderMetrics;
};

/** A grain class + method resolved once (refs hold these). */
export interface Route {
  readonly reg: { readonly def: GrainDef; kernel?: RingKernel; readonly storage: { readonly storage?: unknown } };
  readonly method: MethodDef;
  /** The fixed-image writer of single sends (tell-image.ts) for the kernel it was made for; null where it does not apply. */
  fixed?: { readonly kernel: RingKernel; readonly write: FixedWrite | null };
}

interface Registration {
  cls: AnyGrainClass;
  def: GrainDef;
  placement: Placement;
  options: KernelOptions;
  kernel?: RingKernel;
  storage: ResolvedStorageOptions;
  writeBehind?: WriteBehind;
  flushTimer?: ReturnType<typeof setInterval> | undefined;
  /** The host clock at the last idle collection, and the one under way (the sweep's or collectIdle's). */
  lastCollect: number;
  collecting: Promise<number> | undefined;
  /** Deactivations on a class with idleMs and no storage (nothing to write). */
  dropped: number;
  /** The class's reminders (it declares some, and has storage). */
  reminders?: ReminderService;
}

/**
 * The silo: registers grain classes with a placement, launches one ring kernel per class, routes
 * messages into rings, and matches replies to asks. Replies may come from any kernel (forward chains),
 * so pending asks live here, keyed by correlation id.
 */
export class GrainSystem extends EventEmitter<SystemEvents> {
  /**
   * Whether tellMany hands a lane that takes column images (LaneMemory.images) one image per chunk of its
   * rows instead of a slot per row. Off: every backend gets rows (benchmarks compare the two).
   */
  tellManyImages = true;
  readonly logger: Logger;
  readonly clock: () => number;
  /** Where kernels' timers read the time: the injected clock (published by the host) or their own. */
  private readonly timerClock: 'kernel' | 'host';
  private readonly backends: Readonly<Record<string, Backend>>;
  private readonly autoOrder: readonly string[];
  private readonly regs: Registration[] = [];
  private readonly byDef = new Map<GrainDef, Registration>();
  private readonly pending = new PendingAsks();
  /** Per kernel, the sends that wait for room in its inbound ring (FIFO per kernel). */
  private readonly spills = new Map<RingKernel, Spill>();
  /** Kernels whose spill is not empty. */
  private readonly waiting = new Set<RingKernel>();
  private readonly writer = new SlotWriter();
  private readonly reader = new SlotReader();
  private readonly refFactories = new Map<GrainDef, (key: number | string) => unknown>();
  private readonly stringKeys = new Map<GrainDef, Map<string, number>>();
  private corr = 0;
  /** Whether correlation ids ever wrapped around (then a new range is checked against pending asks). */
  private corrWrapped = false;
  private pumpScheduled = false;
  private sleeping = false;
  private sweeper: ReturnType<typeof setInterval> | undefined;
  private readonly heartbeats = new Map<RingKernel, Array<{ beat: number; at: number }>>();
  /** Per kernel, the lane restarts the sweep has already handled (backend.ts KernelHealth.laneRestarts). */
  private readonly laneRestartsSeen = new Map<RingKernel, number[]>();
  private started = false;
  private readonly handleSignals: boolean;
  private uninstallSignals: (() => void) | undefined;
  private readonly signalExitMs: number;
  readonly askTimeoutMs: number;
  readonly queueFullTimeoutMs: number;
  readonly maxQueuedBytes: number;
  readonly handshakeTimeoutMs: number;
  readonly heartbeatTimeoutMs: number;
  private readonly replySpinMicros: number;
  private readonly defaults: KernelOptions;
  private readonly userDefaults: Partial<KernelOptions>;
  /**
   * Recent failed loads by message text: the kernel rejects an actor's waiting messages with the text of
   * the StateLoadError the host gave it, and the host turns such a reply back into that typed error (the
   * asker gets StateLoadError with its cause, not a HandlerError). Bounded: the newest LOAD_FAILURES.
   */
  private readonly loadFailures = new Map<string, StateLoadError>();
  /** Late replies (their ask had timed out or was rejected); counted, not lost silently. */
  lateReplies = 0;
  private readonly clusterOpt: Cluster | undefined;
  private router: ClusterRouter<Route> | undefined;
  /** Per hosted class, its partition ownership shared with the kernels (cluster/ownership.ts); cluster only. */
  private ownership: Map<string, SharedArrayBuffer> | undefined;
  /** The cluster this system joined (members, events, metrics), once started with `cluster`; undefined otherwise. */
  get cluster(): ClusterRouter<Route> | undefined {
    return this.router;
  }

  constructor(opts: SystemOptions) {
    super();
    this.backends = opts.backends;
    const given = Object.keys(opts.backends);
    for (const n of opts.autoOrder ?? []) {
      if (!given.includes(n)) throw new PlacementError(`autoOrder names "${n}", which is not one of the backends given (${given.join(', ') || 'none'})`, { hint: 'list only names that are keys of `backends`' });
    }
    this.autoOrder = opts.autoOrder ?? given.map((n, i) => ({ n, i, rank: opts.backends[n]!.autoRank ?? 0 })).sort((a, b) => b.rank - a.rank || a.i - b.i).map((x) => x.n);
    // On a terminal, lines a person reads; piped or redirected, JSON lines (for log tools).
    this.logger = opts.logger ?? pino({ name: 'ringgrain', level: opts.logLevel ?? process.env['RINGGRAIN_LOG'] ?? 'info' }, process.stderr.isTTY ? readableStderr() : pino.destination(2));
    this.clock = opts.clock ?? Date.now;
    this.clockInjected = opts.clock !== undefined;
    this.timerClock = opts.clock ? 'host' : 'kernel';
    this.defaults = { ...DEFAULT_KERNEL_OPTIONS, ...opts.defaults };
    this.userDefaults = opts.defaults ?? {};
    this.askTimeoutMs = opts.askTimeoutMs ?? scaledDefault(30_000);
    this.queueFullTimeoutMs = opts.queueFullTimeoutMs ?? scaledDefault(5_000);
    this.maxQueuedBytes = opts.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES;
    if (typeof this.maxQueuedBytes !== 'number' || !(this.maxQueuedBytes > 0)) throw new SystemOptionsError(`maxQueuedBytes must be a number of bytes > 0, got ${opts.maxQueuedBytes}`);
    this.handshakeTimeoutMs = opts.handshakeTimeoutMs ?? scaledDefault(10_000);
    this.heartbeatTimeoutMs = opts.heartbeatTimeoutMs ?? scaledDefault(5_000);
    this.replySpinMicros = opts.replySpinMicros ?? 200;
    this.handleSignals = opts.handleSignals ?? true;
    this.signalExitMs = opts.signalExitMs ?? 5_000;
    // Timeouts must be > 0 (NaN and negatives fired at once); replySpinMicros may be 0 (no spin).
    for (const [name, v] of [['askTimeoutMs', this.askTimeoutMs], ['queueFullTimeoutMs', this.queueFullTimeoutMs], ['handshakeTimeoutMs', this.handshakeTimeoutMs], ['heartbeatTimeoutMs', this.heartbeatTimeoutMs], ['signalExitMs', this.signalExitMs]] as const) {
      if (typeof v !== 'number' || !(v > 0)) throw new SystemOptionsError(`${name} must be a number of milliseconds > 0, got ${String(v)}`);
    }
    if (typeof this.replySpinMicros !== 'number' || !(this.replySpinMicros >= 0)) throw new SystemOptionsError(`replySpinMicros must be a number ≥ 0, got ${String(this.replySpinMicros)}`);
    this.clusterOpt = opts.cluster;
  }

  private installSignalHandlers(): void {
    if (!this.handleSignals || this.uninstallSignals) return;
    this.uninstallSignals = installSignalShutdown({
      logger: this.logger,
      exitAfterMs: this.signalExitMs,
      shutdown: () => this.shutdown({ mode: 'reject', timeoutMs: Math.max(100, Math.floor(this.signalExitMs / 2)) }),
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

  /** `cls` must define a handler for every method its spec declares (a compile error otherwise, not a launch failure). */
  register<C extends AnyGrainClass>(cls: C & WithHandlers<C>, opts: RegisterOptions = {}): this {
    const def = cls.grain as GrainDef;
    if (this.byDef.has(def)) throw new PlacementError(`grain "${def.name}" is registered twice`);
    if (this.regs.some((r) => r.def.name === def.name)) {
      throw new PlacementError(`two grain classes are named "${def.name}"`, { hint: 'grain names must be unique in a system' });
    }
    if (this.started) throw new PlacementError(`register "${def.name}" before system.start()`);
    if (inGrainImport()) noteGrainClass(cls);
    const { placement = 'auto', storage, flushIntervalMs, idleMs, ...rest } = opts;
    if (def.reminders.length && !storage) throw new ReminderStorageError(def.name, 'it declares reminders but was registered without storage');
    const given = rest as Partial<KernelOptions>;
    const options: { -readonly [K in keyof KernelOptions]: KernelOptions[K] } = { ...this.defaults, ...given };
    // A reply ring follows a larger inbound ring unless set (up to 16,384 slots): a batch of asks as large
    // as the inbound ring otherwise waits on reply space (askMany of 10,000 rows on the H100: 1.8 M rows/s
    // with 16,384 reply slots, 0.9 M with 4,096).
    if (given.replyCapacity === undefined && this.userDefaults.replyCapacity === undefined && options.ringCapacity > options.replyCapacity) {
      options.replyCapacity = Math.min(options.ringCapacity, Math.max(options.replyCapacity, REPLY_RING_FOLLOWS_UP_TO));
    }
    // Checked here, not by the first message: maxActors 0 (or 1.5, NaN) used to start, then fail every turn
    // with 'all 0 actor slots are taken'.
    if (!Number.isSafeInteger(options.maxActors) || options.maxActors < 1) {
      throw new PlacementError(`grain "${def.name}": maxActors must be a positive integer (actor slots a lane holds), got ${options.maxActors}`, { hint: 'leave it out for 131,072' });
    }
    const reg: Registration = { cls, def, placement, options, storage: storageOptions(def.name, { storage, flushIntervalMs, idleMs }), lastCollect: 0, collecting: undefined, dropped: 0 };
    this.regs.push(reg);
    this.byDef.set(def, reg);
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

  private starting: Promise<void> | undefined;

  private async startOnce(): Promise<void> {
    this.started = true;
    const probes = new Map<string, Awaited<ReturnType<Backend['probe']>>>();
    const probe = async (name: string) => {
      const b = Object.hasOwn(this.backends, name) ? this.backends[name] : undefined;
      if (!b) return { ok: false, reason: `no "${name}" backend was given to the system` };
      if (!probes.has(name)) probes.set(name, await b.probe());
      return probes.get(name)!;
    };
    const resolved = new Map<Registration, Backend>();
    for (const reg of this.regs) {
      let name: string;
      if (reg.placement === 'auto') {
        const passed: string[] = [];
        let chosen: string | undefined;
        for (const n of this.autoOrder) {
          const p = await probe(n);
          if (p.ok) {
            chosen = n;
            break;
          }
          passed.push(`${n}: ${p.reason ?? 'probe failed'}`);
        }
        if (chosen === undefined) {
          const error = new BackendUnavailableError('auto', `no backend can run here (${passed.join('; ') || 'none was given'})`);
          if (!this.clusterOpt) throw error;
          this.logger.warn({ grain: reg.def.name }, `cluster: ${reg.def.name} is not hosted here (${error.message.split('\n')[0]}); its keys go to silos that host it`);
          continue;
        }
        name = chosen;
        const dev = (await probe(name)).device;
        this.logger.info({ grain: reg.def.name, placement: name }, `placement auto: ${reg.def.name} on ${name}${dev ? ` (${dev})` : ''}${passed.length ? `; passed over ${passed.join('; ')}` : ''}`);
      } else name = reg.placement;
      const p = await probe(name);
      if (!p.ok) {
        const error = new BackendUnavailableError(name, p.reason ?? 'probe failed', Object.hasOwn(this.backends, name) ? undefined : missingBackendHint(name));
        // In a cluster a class this silo cannot run is hosted by the silos that can (a cuda class on GPU silos).
        if (!this.clusterOpt) throw error;
        this.logger.warn({ grain: reg.def.name, placement: name }, `cluster: ${reg.def.name} is not hosted here (${error.message.split('\n')[0]}); its keys go to silos that host it`);
        continue;
      }
      resolved.set(reg, this.backends[name]!);
    }
    if (resolved.size < this.regs.length) this.regs.splice(0, this.regs.length, ...this.regs.filter((r) => resolved.has(r)));
    for (const reg of this.regs) await this.openStorage(reg);
    // In a cluster, each class's partition ownership, shared with the kernels (K2K to keys not owned here is refused).
    const ownership = this.clusterOpt ? this.regs.map(() => allocateOwnership()) : undefined;
    this.ownership = ownership ? new Map(this.regs.map((r, i) => [r.def.name, ownership[i]!])) : undefined;
    for (const [i, reg] of this.regs.entries()) {
      const backend = resolved.get(reg)!;
      const grains = this.regs.map((r) => (resolved.get(r) === backend ? r.def : undefined));
      const owned = ownership && { ownership: this.regs.map((r, j) => (resolved.get(r) === backend ? ownership[j] : undefined)), remoteSend: this.remoteSendFn };
      const persistence = this.persistencePlan(reg);
      const kernel = new RingKernel({
        grainId: i,
        def: reg.def,
        backend,
        options: reg.options,
        logger: this.logger,
        host: this,
        makeKernel: async () => {
          const timers = reg.def.timers.length ? { timers: { clock: this.timerClock } } : {};
          const k = await backend.createKernel({ grainId: i, grain: reg.def, cls: reg.cls, grains, options: reg.options, logger: this.logger, ...(persistence ? { persistence } : {}), ...timers, ...owned });
          if (reg.def.timers.length && !(k.timerStats && k.publishTime && k.timersCaughtUp)) {
            await k.dispose();
            throw new TimersUnsupportedError(reg.def.name, backend.name);
          }
          if (persistence && !(k.readDirty && k.writeStates && k.deactivateIdle)) {
            await k.dispose();
            throw new StorageUnsupportedError(reg.storage.storage?.kind ?? 'idleMs', reg.def.name, backend.name);
          }
          return k;
        },
      });
      kernel.on('transition', (e) => this.emit('transition', e));
      kernel.on('fault', (e) => this.emit('fault', e));
      reg.kernel = kernel;
    }
    // Every kernel's memory first, then the launches (RingKernel.prepare says why).
    try {
      for (const reg of this.regs) await reg.kernel!.prepare();
    } catch (e) {
      for (const reg of this.regs) await reg.kernel!.unprepare();
      throw e;
    }
    try {
      for (const reg of this.regs) await reg.kernel!.launch();
    } finally {
      for (const reg of this.regs) await reg.kernel!.unprepare();
    }
    for (const reg of this.regs) await reg.kernel!.activate();
    // Reminders a stopped system missed fire now, once (reminders/service.ts), after every kernel is up.
    this.runTimers();
    for (const reg of this.regs) {
      if (!reg.writeBehind) continue;
      reg.flushTimer = setInterval(() => void reg.writeBehind!.flush(), reg.storage.flushIntervalMs);
      reg.flushTimer.unref();
    }
    this.sweeper = setInterval(() => this.sweep(), 50);
    this.sweeper.unref();
    this.installSignalHandlers();
    if (this.clusterOpt) {
      for (const reg of this.regs) {
        const k = reg.kernel?.backendKernel;
        if (k && !k.checksOwnership) this.logger.warn({ grain: reg.def.name, backend: resolved.get(reg)!.name }, `cluster: ${reg.def.name} runs on backend "${resolved.get(reg)!.name}", whose kernels do not check partition ownership on K2K sends: a ctx.send/forward from it to a key another silo owns activates that key here too (docs/cluster.md)`);
      }
      this.router = await this.joinCluster(this.clusterOpt, resolved);
    }
  }

  private joinCluster(cluster: Cluster, resolved: Map<Registration, Backend>): Promise<ClusterRouter<Route>> {
    const grains = Object.fromEntries(this.regs.map((r) => [r.def.name, resolved.get(r)!.name]));
    const host = {
      logger: this.logger,
      askTimeoutMs: this.askTimeoutMs,
      hostedRoute: (grain: string, method: string) => {
        const reg = this.regs.find((r) => r.def.name === grain);
        const m = reg?.def.methodByName.get(method);
        return m ? { route: this.route(reg!.def, method), method: m } : undefined;
      },
      sendLocal: (route: Route, key: number | string, payload: unknown, ask: boolean) => this.sendLocal(route, key, payload, ask),
      handOff: (grain: string) => this.handOff(grain),
      ownership: (grain: string) => this.ownership?.get(grain),
    };
    return joinCluster(cluster, host, grains, this.logger);
  }

  /**
   * Cluster handoff of a class this silo lost partitions of: every actor not in a turn is deactivated (its
   * state to the write-behind), then written, so the new owners load the newest state. Actors of the
   * partitions kept here reload on their next message.
   */
  private async handOff(grain: string): Promise<void> {
    const reg = this.regs.find((r) => r.def.name === grain);
    const impl = reg?.kernel?.backendKernel;
    if (!reg?.writeBehind || !impl?.deactivateIdle || reg.kernel!.state !== 'active') return;
    while (reg.collecting) await reg.collecting;
    await impl.deactivateIdle(Number.MAX_VALUE, this.clock());
    await this.flush(reg.cls);
  }

  /** The kernel hosting a grain class (lifecycle control, counters). */
  kernel(cls: AnyGrainClass): RingKernel {
    const reg = this.byDef.get(cls.grain as GrainDef);
    if (!reg) throw new UnknownGrainError(cls.grain?.name ?? String(cls));
    if (!reg.kernel) throw new PlacementError(`grain "${reg.def.name}" has no kernel yet`, { hint: 'call system.start() first' });
    return reg.kernel;
  }

  kernels(): RingKernel[] {
    return this.regs.flatMap((r) => (r.kernel ? [r.kernel] : []));
  }

  /** A typed reference: `await ref.deposit({...})` asks; `ref.tell.deposit({...})` is one-way. */
  grain<C extends AnyGrainClass>(cls: C, key: C extends { grain: GrainDef<infer S> } ? (S['key'] extends 'string' ? string : number) : never): GrainRef<C> {
    const def = cls.grain as GrainDef;
    // In a cluster, a class hosted elsewhere is reached through it (client mode).
    if (!this.byDef.has(def) && !(this.clusterOpt && def?.methodByName)) throw new UnknownGrainError(def?.name ?? String(cls));
    let make = this.refFactories.get(def);
    if (!make) {
      make = makeRefFactory(def, this);
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
  tellMany<C extends AnyGrainClass, M extends MethodName<SpecOf<C>>>(cls: C, method: M, columns: Columns<RequestInput<SpecOf<C>, M>, TypesOf<C>['key']>): number {
    const def = cls.grain as GrainDef;
    const route = this.route(def, method);
    const cols = columns as unknown as Record<string, ArrayLike<unknown>>;
    const n = validateColumns(`${def.name}.${method} (tellMany)`, route.method, def.keyKind === 'string', cols, route.reg.storage.storage !== undefined);
    if (this.router !== undefined) return this.tellRowsOneByOne(route, cols, n);
    let rows: BulkRows = { next: 0, end: n, key: cols['key']!, cols, names: route.method.request.fieldNames };
    const kernel = route.reg.kernel;
    if (!kernel) throw new KernelNotRunningError(def.name, 'not started');
    if (!kernel.accepting) kernel.assertAccepting();
    if (n >= IMAGE_MIN_ROWS && this.tellManyImages && def.keyKind !== 'string') {
      const images = this.imageRows(kernel, route.method, cols, n);
      if (images) rows = { ...rows, images };
    }
    // Straight into the ring while it has room and nothing waits before us; the rest waits as ONE segment.
    // A row that cannot be encoded (a payload over the slot: only encoding tells) is a tellError event with
    // its row and the others still go, as on the waiting path (drainRows): throwing here lost the rows after
    // it, and the caller could not tell which rows had been sent.
    const seg: RowsWaiting = { rows, method, def: route.method };
    if (!this.spills.get(kernel)?.size) this.drainRows(kernel, seg);
    if (rows.next < rows.end) {
      this.spillOf(kernel).pushRows(seg, performance.now());
      this.waiting.add(kernel);
      this.schedulePump();
    }
    return n;
  }

  /** tellMany in a cluster: each row routed on its own (its key's owner may be here or on another silo). */
  private tellRowsOneByOne(route: Route, cols: Record<string, ArrayLike<unknown>>, n: number): number {
    const names = route.method.request.fieldNames;
    const key = cols['key']!;
    for (let i = 0; i < n; i++) {
      const payload: Record<string, unknown> = {};
      for (const f of names) payload[f] = cols[f]![i];
      const p = this.sendRoute(route, key[i] as number | string, payload, false);
      if (p) p.catch(() => {});
    }
    return n;
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
    const def = cls.grain as GrainDef;
    const route = this.route(def, method);
    const where = `${def.name}.${method} (askMany)`;
    const reply = route.method.reply;
    if (!reply) return Promise.reject(new SchemaValidationError(where, [], `method "${method}" has no reply; send its messages with tellMany`));
    const cols = columns as unknown as Record<string, ArrayLike<unknown>>;
    let n: number;
    try {
      n = validateColumns(where, route.method, def.keyKind === 'string', cols, route.reg.storage.storage !== undefined);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    const out: Record<string, Float64Array | unknown[]> = {};
    for (const f of reply.fieldNames) {
      const s = reply.fields[f]!;
      out[f] = isNumericScalar(s) ? new Float64Array(n) : new Array<unknown>(n);
    }
    const names = route.method.request.fieldNames;
    const replyNames = reply.fieldNames;
    const key = cols['key']!;
    const fast = this.askRows(def, route, cols, n, out, replyNames, where);
    if (fast) return fast as Promise<ReplyColumns<ReplyOf<SpecOf<C>, M>>>;
    return new Promise((resolve, reject) => {
      const rows = replyColumns(n, out, replyNames, where, resolve as (v: unknown) => void, reject);
      for (let i = 0; i < n; i++) {
        const payload: Record<string, unknown> = {};
        for (const f of names) payload[f] = cols[f]![i];
        let p: Promise<unknown> | undefined;
        try {
          p = this.sendRoute(route, key[i] as number | string, payload, true);
        } catch (e) {
          rows.fail(i, e as Error);
          continue;
        }
        p!.then(
          (r) => rows.ok(i, r),
          (e: unknown) => rows.fail(i, e as Error),
        );
      }
    });
  }

  /**
   * askMany's fast path (int keys, scalar request fields, no send of this kernel waiting for ring space):
   * rows are written like tellMany's (row-codegen.ts, a loop generated per method) with the ASK flag and
   * correlation ids corrBase + i, and replies go straight into the columns: no payload object and no
   * Promise per row. A ring that fills makes the rest wait as one segment, as for tellMany. Undefined
   * where it does not apply (askMany then sends row by row).
   */
  private askRows(def: GrainDef, route: Route, cols: Record<string, ArrayLike<unknown>>, n: number, out: Record<string, Float64Array | unknown[]>, replyNames: readonly string[], where: string): Promise<unknown> | undefined {
    const kernel = route.reg.kernel;
    if (n === 0 || def.keyKind === 'string' || !kernel || !kernel.accepting || this.spills.get(kernel)?.size || this.router) return undefined;
    const key = cols['key'] as ArrayLike<number>;
    const run = compileRowLoop(route.method, kernel.grainId, key, cols, kernel.lanes[0]!.inbound.payloadCapacity, true);
    if (!run) return undefined;
    const corrBase = this.reserveCorrs(n);
    if (corrBase === undefined) return undefined;
    const names = route.method.request.fieldNames;
    return new Promise((resolve, reject) => {
      const batch: AskBatch = { corrBase, n, key, lanes: kernel.lanes.length, columns: replyNames.map((f) => out[f]!), ...replyColumns(n, out, replyNames, where, resolve, reject) };
      this.pending.addBatch({ resolve: unexpected, reject: unexpected, kernel, lane: 0, method: route.method, deadline: performance.now() + this.askTimeoutMs, batch });
      const rows: BulkRows = { next: 0, end: n, key, cols, names, loop: { run, cols: names.map((f) => cols[f]!) }, corrBase };
      this.writeRows(kernel, route.method, rows);
      if (rows.next < n) {
        this.spillOf(kernel).pushRows({ rows, method: route.method.name, def: route.method } as RowsWaiting, performance.now());
        this.waiting.add(kernel);
      }
      this.schedulePump();
    });
  }

  /** n consecutive correlation ids none of which a pending ask holds (undefined: none free right now). */
  private reserveCorrs(n: number): number | undefined {
    for (let tries = 0; tries < 4; tries++) {
      let base = (this.corr + 1) >>> 0;
      if (base === 0 || base + n > 0xffffffff) base = 1;
      let clash = false;
      // Ids are handed out in increasing order, so a clash needs a wrap-around of 2^32 asks; checked anyway.
      if (this.corrWrapped) for (let c = base; c < base + n && !clash; c++) clash = this.pending.has(c);
      if (base === 1 && this.corr !== 0) this.corrWrapped = true;
      this.corr = base + n - 1;
      if (!clash) return base;
    }
    return undefined;
  }

  /** Untyped send used by refs; `corr` 0 means a tell. */
  send(def: GrainDef, methodName: string, key: number | string, payload: unknown, ask: boolean): Promise<unknown> | undefined {
    return this.sendRoute(this.route(def, methodName), key, payload, ask);
  }

  /** Resolves a grain class and method once; refs keep the result so sends skip the lookups. */
  route(def: GrainDef, methodName: string): Route {
    const reg = this.byDef.get(def) ?? (this.clusterOpt ? remoteRegistration(def) : undefined);
    if (!reg) throw new UnknownGrainError(def.name);
    const method = def.methodByName.get(methodName);
    if (!method) throw new UnknownMethodError(def.name, methodName);
    return { reg, method };
  }

  /** The send path of refs: route resolved when the ref was made. A bad key fails the send (an ask rejects). */
  sendRoute(route: Route, key: number | string, payload: unknown, ask: boolean, into?: Readonly<Record<string, unknown>>): Promise<unknown> | undefined {
    checkKey(route.reg.def, key, route.reg.storage.storage !== undefined);
    if (into !== undefined) checkInto(route.method, into);
    if (this.router !== undefined) {
      const r = this.router.intercept(route.reg.def, route.method, key, payload, ask, into);
      if (r !== LOCAL) return r;
    } else if (route.reg.kernel === undefined && this.clusterOpt) throw new KernelNotRunningError(route.reg.def.name, 'not started (the cluster is joined by system.start())');
    return this.sendLocal(route, key, payload, ask, into);
  }

  /**
   * A kernel's K2K send to a key this silo does not own (KernelPlan.remoteSend), in the order the kernel
   * hands them over (FIFO per sender → actor). A tell is routed to the owner as an application tell is (a
   * failure: a tellError event). A forward (corr: this host's ask that the forwarding turn owed) is routed
   * as an ask, whose reply (or error) settles the original ask: the kernel never replies to it.
   */
  private readonly remoteSendFn = (target: number, method: string, key: number | string, payload: unknown, corr: number): void => {
    const reg = this.regs[target];
    const grain = reg?.def.name ?? String(target);
    const p = corr !== 0 ? this.pending.get(corr) : undefined;
    // The forwarded ask already settled (timed out, its lane failed): nothing waits for a reply.
    if (corr !== 0 && p === undefined) return;
    if (p) this.pending.delete(corr);
    try {
      if (reg === undefined || this.router === undefined) throw new ClusterK2KUnsupportedError(grain, key, method, corr !== 0);
      const r = this.sendRoute(this.route(reg.def, method), key, payload, p !== undefined, p?.into) as Promise<unknown> | undefined;
      if (p) r!.then((v) => resolveAsk(corr, p, v), (e: unknown) => rejectAsk(corr, p, e as Error));
      // A tell's wait for ring space (the key moved here meanwhile): its failure is already a tellError.
      else r?.catch(() => {});
    } catch (e) {
      if (p) rejectAsk(corr, p, e as Error);
      else this.emit('tellError', { grain, method, error: e as Error });
    }
  };

  /** sendRoute without cluster routing: the key is served by this process. */
  private sendLocal(route: Route, key: number | string, payload: unknown, ask: boolean, into?: Readonly<Record<string, unknown>>): Promise<unknown> | undefined {
    const kernel = route.reg.kernel;
    if (!kernel) throw new KernelNotRunningError(route.reg.def.name, 'not started');
    if (!kernel.accepting) kernel.assertAccepting();
    const method = route.method;
    const corr = ask ? this.nextCorr() : 0;
    const lane = kernel.laneOf(key);
    // FIFO per sender → kernel: once anything waits for space in this kernel's rings, later sends wait behind it.
    const spill = this.spills.get(kernel);
    let fixed: FixedWrite | null = null;
    if (typeof key === 'number') {
      let f = route.fixed;
      if (f === undefined || f.kernel !== kernel) route.fixed = f = { kernel, write: fixedWriter(method, kernel.grainId, kernel.lanes[0]!.inbound.payloadCapacity) };
      fixed = f.write;
    }
    if ((spill === undefined || spill.size === 0) && this.tryWrite(kernel, lane, method, key, payload, corr, fixed)) {
      kernel.sent++;
      return ask ? this.awaitReply(corr, kernel, lane, method, into) : undefined;
    }
    // The ring is full: encode now (a bad payload still throws here) into the kernel's spill.
    const s = spill ?? this.spillOf(kernel);
    const { chunk, at } = s.target();
    if (fixed === null || !fixed(chunk.i32, chunk.dv, chunk.u8, at, payload, key as number, corr, this.sendTime())) this.encode(chunk, at, kernel, method, key, payload, corr);
    const written = s.commit(chunk, at, lane);
    this.waiting.add(kernel);
    this.schedulePump();
    return ask ? this.awaitReply(corr, kernel, lane, method, into) : written;
  }

  private spillOf(kernel: RingKernel): Spill {
    let s = this.spills.get(kernel);
    if (!s) this.spills.set(kernel, (s = new Spill(kernel.lanes[0]!.inbound.slotSize, kernel.def.name, this.maxQueuedBytes)));
    return s;
  }

  /** Encodes into the lane's next free slot and publishes it; false when the ring is full. Throws on bad input. */
  private tryWrite(kernel: RingKernel, lane: number, method: MethodDef, key: number | string, payload: unknown, corr: number, fixed: FixedWrite | null = null): boolean {
    const producer = kernel.lanes[lane]!.producer;
    const first = !this.burst;
    const slot = producer.claimHeld();
    if (slot < 0) {
      // Full with slots still held: publish them, so the consumer can make the room we wait for.
      if (producer.held !== 0) {
        producer.releaseHeld();
        kernel.wake(lane);
      }
      return false;
    }
    const r = producer.ring;
    try {
      // The fixed image where it applies; anything it refuses goes through the general encoder (typed errors).
      if (fixed === null || !fixed(r.i32, r.dv, r.u8, slot, payload, key as number, corr, this.sendTime())) this.encode(r, slot, kernel, method, key, payload, corr);
    } catch (e) {
      producer.dropHeld(); // a bad payload: the slot is not ours to publish
      throw e;
    }
    // Published in runs (ring.ts claimHeld): the first send of a synchronous burst at once (a lone ask
    // waits for nothing), then every HOLD_RUN slots and at the burst's end (a microtask), with one wake
    // of the consumer each; head (for observers) at the burst's end.
    if (producer.held >= HOLD_RUN || first) {
      producer.releaseHeld();
      kernel.wake(lane);
    }
    if (!this.burst) this.startBurst();
    return true;
  }

  /** Header and payload of one message at `slot` of `ring` (a ring, or a spill chunk); all but seq. */
  private encode(ring: SlotTarget, slot: number, kernel: RingKernel, method: MethodDef, key: number | string, payload: unknown, corr: number): void {
    if (typeof key === 'number') {
      this.writer.write(ring, slot, { method: method.id, flags: corr ? SlotFlag.ASK : 0, corr, keyLo: splitKeyLo(key), keyHi: splitKeyHi(key), sender: HOST_SENDER, grain: kernel.grainId }, method.request, payload, kernel.def.name, method.name);
    } else {
      this.writer.write(ring, slot, { method: method.id, flags: corr ? SlotFlag.ASK : 0, corr, keyLo: this.internKey(kernel.def, key), keyHi: 0, sender: HOST_SENDER, grain: kernel.grainId }, method.request, payload, kernel.def.name, method.name, key);
    }
    ring.dv.setFloat64(slot + SLOT.time, this.sendTime(), true);
  }

  /**
   * tellMany's rows split for column images, where every lane of the kernel takes them (LaneMemory.images)
   * and the request is all scalars: per lane its rows' indices in call order. Undefined: rows apply.
   */
  private imageRows(kernel: RingKernel, method: MethodDef, cols: Record<string, ArrayLike<unknown>>, n: number): ImageRows | undefined {
    const lanes = kernel.lanes;
    if (!lanes.every((l) => l.images !== undefined)) return undefined;
    const fields = columnImageFields(method, kernel.grainId);
    if (!fields) return undefined;
    const key = cols['key'] as ArrayLike<number>;
    const L = lanes.length;
    let lists: Int32Array[];
    if (L === 1) {
      const all = new Int32Array(n);
      for (let i = 0; i < n; i++) all[i] = i;
      lists = [all];
    } else {
      const counts = new Int32Array(L);
      const laneOfRow = new Uint16Array(n);
      for (let i = 0; i < n; i++) counts[(laneOfRow[i] = laneOfKey(key[i]!, L))]!++;
      lists = Array.from(counts, (c) => new Int32Array(c));
      const fill = new Int32Array(L);
      for (let i = 0; i < n; i++) {
        const l = laneOfRow[i]!;
        lists[l]![fill[l]!++] = i;
      }
    }
    const perImage = imageRowsFitting(fields, lanes[0]!.images!.buffers[0]!.byteLength);
    if (perImage < 1) return undefined;
    return { fields, key, cols: fields.map((f) => cols[f.name]!), method, lists, at: new Int32Array(L), perImage };
  }

  /**
   * Sends waiting image rows: per lane, while it has a free buffer and a free slot, its next rows packed
   * into the buffer and announced by ONE slot (SlotFlag.IMAGE) at their place in the ring; the lane runs
   * them as tells. Lanes go on independently (FIFO is per lane). Returns the rows sent (counted as sent).
   */
  private pushImages(kernel: RingKernel, img: ImageRows): number {
    const lanes = kernel.lanes;
    const time = this.clock();
    let sent = 0;
    for (let l = 0; l < lanes.length; l++) {
      const list = img.lists[l]!;
      const area = lanes[l]!.images!;
      const producer = lanes[l]!.producer;
      let at = img.at[l]!;
      while (at < list.length) {
        let b = 0;
        while (b < area.busy.length && Atomics.load(area.busy, b) !== 0) b++;
        if (b === area.busy.length) break;
        const slot = producer.claim();
        if (slot < 0) break;
        const to = Math.min(list.length, at + img.perImage);
        packColumnImageRows(img.fields, area.buffers[b]!, { grainId: kernel.grainId, method: img.method.id, key: img.key, cols: img.cols, idx: list, from: at, to });
        Atomics.store(area.busy, b, 1);
        const dv = producer.ring.dv;
        dv.setUint32(slot + SLOT.length, 0, true);
        dv.setUint32(slot + SLOT.method, img.method.id, true);
        dv.setUint32(slot + SLOT.flags, SlotFlag.IMAGE, true);
        dv.setUint32(slot + SLOT.corr, 0, true);
        dv.setUint32(slot + SLOT.keyLo, b, true);
        dv.setUint32(slot + SLOT.keyHi, to - at, true);
        dv.setUint32(slot + SLOT.sender, HOST_SENDER, true);
        dv.setUint32(slot + SLOT.grain, kernel.grainId, true);
        dv.setFloat64(slot + SLOT.time, time, true);
        producer.publish(slot);
        sent += to - at;
        at = to;
      }
      img.at[l] = at;
    }
    kernel.sent += sent;
    if (sent) kernel.wakeAll();
    return sent;
  }

  /** Writes tellMany rows from `rows.next` while the ring has room; returns whether any was written. */
  private writeRows(kernel: RingKernel, method: MethodDef, rows: BulkRows): boolean {
    const start = rows.next;
    if (rows.images) {
      rows.next += this.pushImages(kernel, rows.images);
      return rows.next !== start;
    }
    const lanes = kernel.lanes;
    if (rows.loop === undefined) {
      // tellMany's rows (askMany's come with their loop): the generated loop, where the request is all scalars.
      const run = kernel.def.keyKind !== 'string' ? compileRowLoop(method, kernel.grainId, rows.key, rows.cols, lanes[0]!.inbound.payloadCapacity, false) : undefined;
      rows.loop = run ? { run, cols: rows.names.map((f) => rows.cols[f]!) } : null;
    }
    if (rows.loop) {
      rows.next = rows.loop.run(kernel.producers, rows.key as ArrayLike<number>, rows.loop.cols, rows.next, rows.end, this.clock(), rows.corrBase ?? 0);
      kernel.sent += rows.next - start;
      if (rows.next !== start) kernel.wakeAll();
      return rows.next !== start;
    }
    const payload: Record<string, unknown> = {};
    while (rows.next < rows.end) {
      const i = rows.next;
      for (const f of rows.names) payload[f] = rows.cols[f]![i];
      let wrote: boolean;
      const key = rows.key[i] as number | string;
      try {
        wrote = this.tryWrite(kernel, kernel.laneOf(key), method, key, payload, 0);
      } catch (e) {
        if (e && typeof e === 'object') (e as { row?: number }).row = i;
        throw e;
      }
      if (!wrote) break;
      kernel.sent++;
      rows.next++;
    }
    if (rows.next !== start) kernel.wakeAll();
    return rows.next !== start;
  }

  private internKey(def: GrainDef, key: string): number {
    let table = this.stringKeys.get(def);
    if (!table) this.stringKeys.set(def, (table = new Map()));
    let id = table.get(key);
    if (id === undefined) table.set(key, (id = table.size));
    return id;
  }

  private nextCorr(): number {
    do {
      this.corr = (this.corr + 1) >>> 0;
      if (this.corr === 0) this.corrWrapped = true;
    } while (this.corr === 0 || this.pending.has(this.corr));
    return this.corr;
  }

  private awaitReply(corr: number, kernel: RingKernel, lane: number, method: MethodDef, into?: Readonly<Record<string, unknown>>): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.pending.set(corr, into === undefined ? { resolve, reject, kernel, lane, method, deadline: performance.now() + this.askTimeoutMs } : { resolve, reject, kernel, lane, method, deadline: performance.now() + this.askTimeoutMs, into });
      this.schedulePump();
    });
  }

  /** Whether sends are in a synchronous burst: its end (a microtask, endBurst) publishes what is held. */
  private burst = false;

  private startBurst(): void {
    this.burst = true;
    queueMicrotask(this.endBurst);
  }
  /** Whether `clock` was injected (then every send reads it: tests move it between sends). */
  private readonly clockInjected: boolean;
  /** The default clock's last reading (sendTime) and how many more sends of this burst may carry it. */
  private timeCached = 0;
  private timeUses = 0;

  /**
   * The time a message carries (`ctx.now()`, the sender's clock). An injected clock is read at every send.
   * The default clock (Date.now, 50 ns a call on some VMs, half of a tell's host cost) is read once per
   * SEND_TIME_REUSE sends of a synchronous burst and again after it: within its millisecond resolution.
   */
  private sendTime(): number {
    if (this.clockInjected) return this.clock();
    if (this.timeUses > 0) {
      this.timeUses--;
      return this.timeCached;
    }
    this.timeUses = SEND_TIME_REUSE - 1;
    this.timeCached = Date.now();
    if (!this.burst) this.startBurst(); // its end invalidates the reading
    return this.timeCached;
  }

  /** The burst's end: every lane's held sends published (one wake each), head moved for observers, the clock reading dropped. */
  private readonly endBurst = (): void => {
    this.burst = false;
    this.timeUses = 0; // the burst ended: the next send reads the clock
    for (const r of this.regs) {
      const k = r.kernel;
      if (!k) continue;
      for (let i = 0; i < k.lanes.length; i++) {
        const p = k.lanes[i]!.producer;
        const held = p.held;
        p.flushHead();
        if (held !== 0) k.wake(i);
      }
    }
  };

  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    // After the current synchronous burst of sends: a loop of asks is written before anyone waits.
    queueMicrotask(() => this.pump());
  }

  /** Drains reply rings and the backlog; spins briefly while asks wait, then sleeps. */
  private pump(): void {
    this.pumpScheduled = false;
    const spinUntil = performance.now() + this.replySpinMicros / 1000;
    for (;;) {
      const got = this.drainReplies();
      if (this.waiting.size) this.drainSpills();
      if (this.pending.size === 0 && this.waiting.size === 0) return;
      if (got === 0 && performance.now() > spinUntil) break;
    }
    this.sleepUntilReplies();
  }

  private sleepUntilReplies(): void {
    if (this.sleeping) return;
    this.sleeping = true;
    const wakeup = () => {
      this.sleeping = false;
      if (this.pending.size || this.waiting.size) this.schedulePump();
    };
    // CPU backends notify a shared word after publishing replies; otherwise poll on the next turn.
    const signals = new Set(this.kernels().map((k) => k.backend.replySignal));
    if (signals.size === 1 && !signals.has(undefined) && this.waiting.size === 0) {
      const s = [...signals][0]!;
      const seen = Atomics.load(s.words, s.index);
      if (this.drainReplies() > 0 || this.pending.size === 0) {
        this.sleeping = false;
        if (this.pending.size) this.schedulePump();
        return;
      }
      const w = Atomics.waitAsync(s.words, s.index, seen, 20);
      if (w.async) w.value.then(wakeup);
      else wakeup();
    } else {
      setImmediate(wakeup);
    }
  }

  private drainReplies(): number {
    let n = 0;
    for (const reg of this.regs) {
      const k = reg.kernel;
      if (!k) continue;
      for (const { ring, consumer } of k.replies) {
        // The tail is published every 64 replies and at the end, not per reply: each store is a write
        // the producer (a GPU across PCIe) reads, and a long drain still frees room as it goes.
        let since = 0;
        for (let slot = consumer.peek(); slot >= 0; slot = consumer.peek()) {
          try {
            this.onReply(ring, slot);
          } finally {
            consumer.skip();
          }
          n++;
          if (++since === 64) {
            consumer.publishTail();
            since = 0;
          }
        }
        if (since) consumer.publishTail();
      }
    }
    return n;
  }

  private onReply(ring: import('./ring.ts').Ring, slot: number): void {
    const dv = ring.dv;
    const corr = dv.getUint32(slot + SLOT.corr, true);
    const flags = dv.getUint32(slot + SLOT.flags, true);
    const grainId = dv.getUint32(slot + SLOT.grain, true);
    const methodId = dv.getUint32(slot + SLOT.method, true);
    const replier = this.regs[grainId]?.def;
    const method = replier?.methods[methodId] ?? (methodId === HOOK_METHOD.onActivate ? HOOK_DEF.onActivate : methodId === HOOK_METHOD.onDeactivate ? HOOK_DEF.onDeactivate : undefined);
    if (corr === 0 && methodId === KERNEL_RECORD.reminder && !(flags & (SlotFlag.ERROR | SlotFlag.REJECTED))) {
      this.onReminderRecord(replier, this.reader.text(ring, slot));
      return;
    }
    if (corr === 0) {
      // A tell failed: nobody awaits it, so it becomes an event and a log line, never silence.
      const error = errorOfReply(ring, slot, flags, replier?.name ?? '?', method?.name ?? '?', this.loadLookups);
      // The application that listens for tellError handles it: a debug line then. Otherwise one warn line
      // with the message (a stack from the reply pump says nothing about the sender).
      if (this.listenerCount('tellError') > 0) this.logger.debug({ grain: replier?.name, method: method?.name, code: error.code }, `tell failed: ${error.message}`);
      else this.logger.warn({ grain: replier?.name, method: method?.name, code: error.code }, `tell failed: ${error.message}`);
      this.emit('tellError', { grain: replier?.name ?? '?', method: method?.name ?? '?', error });
      return;
    }
    const p = this.pending.get(corr);
    if (!p) {
      this.lateReplies++;
      return;
    }
    this.pending.delete(corr);
    if (flags & (SlotFlag.ERROR | SlotFlag.REJECTED)) {
      rejectAsk(corr, p, errorOfReply(ring, slot, flags, replier?.name ?? '?', method?.name ?? '?', this.loadLookups));
      return;
    }
    if (!method) {
      rejectAsk(corr, p, new DecodeError(`reply names unknown grain ${grainId} / method ${methodId}`));
      return;
    }
    if (!method.reply) {
      resolveAsk(corr, p, undefined);
      return;
    }
    try {
      const b = p.batch;
      if (b?.columns && b.okInPlace && method.reply.kind === 'struct') {
        this.reader.payloadInto(ring, slot, method.reply, corr - b.corrBase, b.columns);
        b.okInPlace(corr - b.corrBase);
      } else resolveAsk(corr, p, this.reader.payload(ring, slot, method.reply, p.into));
    } catch (e) {
      rejectAsk(corr, p, e as Error);
    }
  }

  /** drainSpills' record of where each lane's producer stood (reused: the pump calls it on every spin). */
  private readonly lanePositions: number[] = [];

  /** Moves waiting sends into every kernel's ring as far as each has room; fails those stuck too long. */
  private drainSpills(): void {
    const now = performance.now();
    for (const kernel of this.waiting) {
      const spill = this.spills.get(kernel)!;
      if (!kernel.accepting && !kernel.draining) {
        try {
          kernel.assertAccepting();
        } catch (e) {
          this.cancelSpill(kernel, e as Error);
        }
        continue;
      }
      const lanes = kernel.lanes;
      const before = this.lanePositions;
      before.length = lanes.length;
      for (let i = 0; i < lanes.length; i++) before[i] = lanes[i]!.producer.position();
      const images = spill.drain(kernel.producers, (seg) => this.drainRows(kernel, seg as RowsWaiting), now);
      kernel.sent += images;
      if (spill.size === 0) this.waiting.delete(kernel);
      else if (now - spill.since > this.queueFullTimeoutMs) this.cancelSpill(kernel, new QueueFullError(kernel.def.name, Math.round(now - spill.since)));
      // Only the lanes this drain wrote to: waking an idle lane's thread (it spins before it sleeps again)
      // on every retry put three busy threads on two cores, and the host lost its core for milliseconds.
      for (let i = 0; i < lanes.length; i++) if (lanes[i]!.producer.position() !== before[i]) kernel.wake(i);
    }
  }

  /** Writes a waiting tellMany segment's rows while the ring has room; returns rows consumed (written or failed). */
  private drainRows(kernel: RingKernel, seg: RowsWaiting): number {
    const start = seg.rows.next;
    for (;;) {
      try {
        this.writeRows(kernel, seg.def, seg.rows);
        return seg.rows.next - start;
      } catch (e) {
        // A row that cannot be encoded: report it, skip it, keep the rest in order.
        seg.rows.next++;
        this.emit('tellError', { grain: kernel.def.name, method: seg.method, error: e as Error, row: seg.rows.next - 1 });
      }
    }
  }

  /** Fails everything waiting for `kernel`'s ring: asks reject, tells become tellError events; all counted. */
  private cancelSpill(kernel: RingKernel, error: Error): void {
    const spill = this.spills.get(kernel);
    this.waiting.delete(kernel);
    if (!spill || spill.size === 0) return;
    const grain = kernel.def.name;
    const n = spill.cancel(
      error,
      (m) => {
        const p = m.corr ? this.pending.get(m.corr) : undefined;
        if (p) {
          this.pending.delete(m.corr);
          rejectAsk(m.corr, p, error);
        } else if (!m.corr) this.emit('tellError', { grain, method: kernel.def.methods[m.method]?.name ?? String(m.method), error });
      },
      (seg) => {
        const base = (seg as RowsWaiting).rows.corrBase;
        if (base === undefined) {
          this.emit('tellError', { grain, method: seg.method, error, row: firstUnsent(seg as RowsWaiting) });
          return;
        }
        for (let i = seg.rows.next; i < seg.rows.end; i++) {
          const p = this.pending.get(base + i);
          if (!p) continue;
          this.pending.delete(base + i);
          rejectAsk(base + i, p, error);
        }
      },
    );
    kernel.cancelled += n;
    this.logger.warn({ grain, cancelled: n, code: (error as { code?: string }).code }, `${n} sends to ${grain} that waited for ring space were cancelled: ${error.message.split('\n')[0]}`);
  }

  pendingAsksOf(kernel: RingKernel): number {
    return this.pending.countOf(kernel);
  }

  waitingSendsOf(kernel: RingKernel): number {
    return this.spills.get(kernel)?.size ?? 0;
  }

  /** Fails the asks waiting on one lane of a kernel (its consumer died); returns how many. */
  private rejectAsksOfLane(kernel: RingKernel, lane: number, error: Error): number {
    let n = 0;
    for (const [corr, p] of this.pending) {
      if (p.kernel !== kernel || laneOfAsk(corr, p) !== lane) continue;
      this.pending.delete(corr);
      rejectAsk(corr, p, error);
      n++;
    }
    return n;
  }

  /** Lanes the backend restarted since the last sweep: their waiting asks fail, an event says so. */
  private checkLaneRestarts(k: RingKernel): void {
    const restarts = k.laneRestarts();
    if (!restarts) return;
    let seen = this.laneRestartsSeen.get(k);
    if (!seen) this.laneRestartsSeen.set(k, (seen = []));
    for (const [lane, r] of restarts.entries()) {
      const before = seen[lane] ?? 0;
      seen[lane] = r.restarts;
      // Fewer than before: a relaunched kernel counts from 0 again.
      if (r.restarts <= before) continue;
      const error = r.error ?? new KernelFaultError(k.def.name, `the consumer of lane ${lane} died and was restarted`);
      const failedAsks = this.rejectAsksOfLane(k, lane, error);
      this.logger.warn({ grain: k.def.name, lane, failedAsks, err: error }, `${k.def.name}: lane ${lane} restarted after its consumer died (${failedAsks} asks failed)`);
      this.emit('laneRestart', { grain: k.def.name, lane, error, failedAsks });
    }
  }

  rejectAsksOf(kernel: RingKernel, error: Error): void {
    for (const [corr, p] of this.pending) {
      if (p.kernel !== kernel) continue;
      this.pending.delete(corr);
      rejectAsk(corr, p, error);
    }
    this.cancelSpill(kernel, error);
  }

  /** Timeouts, faults and stalled heartbeats: every 50 ms, off the hot path. */
  /** Since when nothing but this system has kept the process alive (0: something else does), and whether it was said. */
  private aloneSince = 0;
  private aloneWarned = false;

  /**
   * A program that is done but never called shutdown() does not exit: the CPU backend's threads keep the
   * process alive. Said once, as a warning, after 5 s in which no ask waited and nothing else kept the
   * process alive (process.getActiveResourcesInfo() lists no timer, socket or file request, only stdio and
   * message ports; the sweep's own interval is unref'd), unless a class has timers or reminders, which run
   * on their own.
   */
  private checkForgottenShutdown(): void {
    if (this.aloneWarned || this.stopping) return;
    const alone = this.pending.size === 0 && this.waiting.size === 0 && !process.getActiveResourcesInfo().some((r) => !QUIET_RESOURCES.has(r)) && !this.regs.some((r) => r.def.timers.length || r.def.reminders.length);
    if (!alone) {
      this.aloneSince = 0;
      return;
    }
    const now = performance.now();
    if (this.aloneSince === 0) this.aloneSince = now;
    else if (now - this.aloneSince >= 5_000) {
      this.aloneWarned = true;
      this.logger.warn("nothing but this GrainSystem has kept the process alive for 5 s (no ask waiting, nothing else scheduled): if the program is done, it must call `await system.shutdown()` (which also writes stored states); until then the system's worker threads keep the process running");
    }
  }

  private sweep(): void {
    // Tell errors arrive with nobody awaiting them: drain on every sweep so reply rings never fill.
    this.drainReplies();
    const now = performance.now();
    for (const k of this.kernels()) {
      if (!k.accepting) continue;
      const fault = k.health();
      if (fault) {
        k.markFaulted(fault);
        continue;
      }
      this.checkLaneRestarts(k);
      // Per lane: a lane whose heartbeat stands still while asks wait on it (the others may beat on).
      const pending = this.pending.perLaneOf(k, k.lanes.length);
      const beats = k.heartbeats();
      let seen = this.heartbeats.get(k);
      if (!seen || seen.length !== beats.length) this.heartbeats.set(k, (seen = beats.map((beat) => ({ beat, at: now }))));
      for (const [i, beat] of beats.entries()) {
        const hb = seen[i]!;
        const waiting = pending[i] ?? 0;
        if (hb.beat !== beat || waiting === 0 || k.state !== 'active') {
          hb.beat = beat;
          hb.at = now;
        } else if (now - hb.at > this.heartbeatTimeoutMs) {
          const where = beats.length > 1 ? ` on lane ${i} of ${beats.length}` : '';
          k.markFaulted(new KernelFaultError(k.def.name, `heartbeat stood still for ${Math.round(now - hb.at)} ms${where} with ${waiting} asks waiting (a handler that never returns?)`));
          break;
        }
      }
    }
    this.collectIdleAll();
    this.runTimers();
    this.checkForgottenShutdown();
    for (const [corr, p] of this.pending.expired(now)) {
      this.pending.delete(corr);
      rejectAsk(corr, p, new AskTimeoutError(p.kernel.def.name, p.method.name, this.askTimeoutMs));
    }
    if (this.pending.size || this.waiting.size) this.schedulePump();
  }

  // ---- persistent state (register(Grain, { storage, flushIntervalMs, idleMs })) --------------------

  private async openStorage(reg: Registration): Promise<void> {
    const store = reg.storage.storage;
    if (!store || reg.writeBehind) return;
    await store.open();
    const table = await store.table(stateTableSpec(reg.def, 'layout'));
    reg.writeBehind = new WriteBehind(reg.def, store, table, () => reg.kernel?.backendKernel, (e) => this.reportStorageError(e), this.logger);
    if (reg.def.reminders.length === 0) return;
    if (!store.reminders) throw new ReminderStorageError(reg.def.name, `its ${store.kind} store does not keep reminders`);
    const reminders = await store.reminders(stateTableSpec(reg.def, 'layout'));
    reg.reminders = new ReminderService(reg.def, store, reminders, (method, key) => this.sendReminder(reg, method, key), (e) => this.reportStorageError(e));
    await reg.reminders.load();
  }

  /** A reminder's fire: a host tell of its method (a failure is a tellError event, as for any tell). */
  private sendReminder(reg: Registration, method: MethodDef, key: ActorKey): void {
    try {
      const sent = this.sendRoute({ reg, method }, key, {}, false);
      sent?.catch(() => undefined); // a cancelled wait is already a tellError event
    } catch (e) {
      this.emit('tellError', { grain: reg.def.name, method: method.name, error: e as Error });
    }
  }

  /**
   * Fires the reminders due by the clock and, with an injected clock, publishes its time to every active
   * kernel with timers (one word per kernel, never a message per tick).
   */
  private runTimers(): number {
    const now = this.clock();
    let fired = 0;
    for (const reg of this.regs) {
      fired += reg.reminders?.fireDue(now) ?? 0;
      const k = reg.kernel;
      if (this.timerClock === 'host' && reg.def.timers.length && k?.state === 'active') k.backendKernel?.publishTime?.(now);
    }
    return fired;
  }

  /**
   * Runs the timers and reminders due by the system's clock now: fires the due reminders (tells) and,
   * with an injected clock, publishes its time to the kernels and resolves once every active kernel has
   * run the ticks due by it (as turns: a later ask sees their effects). Tests step time with it:
   * `clock.now += 100; await system.advanceTimers()`. Resolves to the reminders fired.
   */
  async advanceTimers(opts: { timeoutMs?: number } = {}): Promise<number> {
    const fired = this.runTimers();
    const kernels = this.regs.flatMap((r) => (r.def.timers.length && r.kernel?.state === 'active' && r.kernel.backendKernel?.timersCaughtUp ? [r.kernel.backendKernel] : []));
    if (this.timerClock === 'host' && !(await waitUntil(() => kernels.every((k) => k.timersCaughtUp!()), opts.timeoutMs ?? this.askTimeoutMs))) {
      throw new IdleTimeoutError(opts.timeoutMs ?? this.askTimeoutMs, ['a kernel did not run its due timer ticks']);
    }
    return fired;
  }

  /**
   * The reminders of a grain class (registered with storage and declaring `reminders`): set, clear and
   * list them from outside a handler. Set and clear resolve once the store committed the row.
   */
  reminders<C extends AnyGrainClass>(cls: C): {
    set(key: TypesOf<C>['key'], name: string, opts: TimerStart & { periodMs: number }): Promise<void>;
    clear(key: TypesOf<C>['key'], name: string): Promise<boolean>;
    list(key?: TypesOf<C>['key']): ReminderInfo[];
  } {
    const reg = this.registration(cls);
    const svc = () => {
      if (!reg.reminders) throw new ReminderStorageError(reg.def.name, reg.def.reminders.length ? 'its reminders are not loaded yet: call system.start() first' : 'it declares no reminders');
      return reg.reminders;
    };
    return {
      set: async (key, name, opts) => {
        checkKey(reg.def, key, reg.storage.storage !== undefined);
        await svc().setFrom(key, name, opts, this.clock());
      },
      clear: async (key, name) => svc().clear(key, name),
      list: (key) => svc().list(key),
    };
  }

  /** Failed loads a failed turn's reply names: by StateLoadError.failureId (CPU, inline) or by its text (CUDA). */
  private readonly loadLookups: LoadFailures = {
    byId: (id) => {
      for (const e of this.loadFailures.values()) if (e.failureId === id) return e;
      return undefined;
    },
    byText: (text) => this.loadFailure(text),
  };

  /** The StateLoadError whose text a CUDA kernel sent back for a message that waited for a failed load. */
  private loadFailure(text: string): StateLoadError | undefined {
    if (this.loadFailures.size === 0) return undefined;
    const exact = this.loadFailures.get(text);
    if (exact || !text.endsWith(TEXT_CUT_MARK)) return exact;
    // A long message was cut to fit the reply slot (slot.ts writeText): match what is left of it.
    const head = text.slice(0, -TEXT_CUT_MARK.length);
    let found: StateLoadError | undefined;
    for (const [message, e] of this.loadFailures) if (message.startsWith(head)) found = e;
    return found;
  }

  /** A kernel's record of a reminder set or cleared by a handler (dispatcher: ctx.setReminder). */
  private onReminderRecord(def: GrainDef | undefined, text: string): void {
    const reg = def && this.byDef.get(def);
    const r = JSON.parse(text) as { op: 'set' | 'clear'; key: ActorKey; name: string; periodMs?: number; dueAt?: number };
    const svc = reg?.reminders;
    if (!svc) {
      this.emit('tellError', { grain: def?.name ?? '?', method: `${r.op}Reminder`, error: new ReminderStorageError(def?.name ?? '?', 'a handler set a reminder, but the class has no reminder storage') });
      return;
    }
    const done = r.op === 'set' ? svc.set(r.key, r.name, r.periodMs!, r.dueAt!) : svc.clear(r.key, r.name);
    done.catch(() => undefined); // reported by the service as a storageError event
  }

  private persistencePlan(reg: Registration): PersistencePlan | undefined {
    const wb = reg.writeBehind;
    const idleMs = reg.storage.idleMs;
    if (!wb && idleMs === undefined) return undefined;
    return {
      load: wb !== undefined,
      idleMs,
      host: {
        load: (keys) => wb?.load(keys),
        evicted: (batch) => {
          if (wb) wb.evicted(batch);
          else reg.dropped += batch.keys.length;
        },
        laneLoaded: (keys, versions) => wb?.laneLoaded(keys, versions),
      },
      ...(wb?.laneLoad ? { laneLoad: wb.laneLoad } : {}),
    };
  }

  private reportStorageError(e: StorageErrorEvent): void {
    if (e.error instanceof StateLoadError) {
      this.loadFailures.delete(e.error.message);
      this.loadFailures.set(e.error.message, e.error);
      if (this.loadFailures.size > LOAD_FAILURES) this.loadFailures.delete(this.loadFailures.keys().next().value!);
    }
    const line = `${e.grain}: state store ${e.op} failed: ${e.error.message.split('\n')[0]}`;
    const fields = { grain: e.grain, op: e.op, code: (e.error as { code?: string }).code, keys: e.keys.length };
    if (this.listenerCount('storageError') > 0) this.logger.debug(fields, line);
    else this.logger.warn(fields, line);
    this.emit('storageError', e);
  }

  /** KernelHost: a kernel acknowledged STOP at terminate: deactivate every actor (onDeactivate), write the states. */
  async stopped(kernel: RingKernel): Promise<void> {
    const reg = this.regs.find((r) => r.kernel === kernel);
    const impl = kernel.backendKernel;
    if (!reg || !impl?.deactivateIdle || (!reg.writeBehind && reg.storage.idleMs === undefined)) return;
    try {
      await impl.deactivateIdle(Number.POSITIVE_INFINITY, this.clock());
    } catch (e) {
      this.logger.warn({ err: e, grain: reg.def.name }, `${reg.def.name}: deactivating the actors at terminate failed: ${(e as Error).message}`);
    }
    if (reg.writeBehind) await reg.writeBehind.flush();
  }

  /**
   * Writes every dirty actor's state now (all grain classes with storage, or one), in one bulk write per
   * class. Resolves once written; rows that could not be (a version conflict, a store failure) are
   * reported as `storageError` events and stay dirty: `kept` counts them.
   */
  async flush(cls?: AnyGrainClass): Promise<FlushResult> {
    const regs = cls ? [this.registration(cls)] : this.regs;
    let written = 0;
    let kept = 0;
    for (const reg of regs) {
      if (!reg.writeBehind) continue;
      // Actors an idle collection under way deactivates are written by this flush, not the next one.
      while (reg.collecting) await reg.collecting;
      const r = await reg.writeBehind.flush();
      written += r.written;
      kept += r.kept;
      await reg.reminders?.settled();
    }
    return { written, kept };
  }

  /**
   * Loads stored states into the kernel before messages ask for them: the keys given, or every stored
   * actor of the class (a scan in key order). Actors the kernel holds already keep their state; actors
   * that find no room are left to load on their first message. Resolves to how many were uploaded.
   */
  async preload<C extends AnyGrainClass>(cls: C, keys?: ReadonlyArray<TypesOf<C>['key']>): Promise<number> {
    const reg = this.registration(cls);
    if (!reg.writeBehind) throw new PlacementError(`grain "${reg.def.name}" has no storage to preload from`, { hint: 'register it with { storage }' });
    if (!reg.kernel?.backendKernel) throw new KernelNotRunningError(reg.def.name, 'not launched');
    return reg.writeBehind.preload(keys as readonly ActorKey[] | undefined);
  }

  /**
   * Deactivates now the actors of a class registered with `idleMs` (or all such classes) whose last turn
   * is older than `idleMs` by the system's clock; the sweep does this on its own every `idleMs / 2`.
   * Resolves to how many were deactivated, counting those of a collection already under way (which it
   * waits for): once it resolves, every such actor is deactivated and its state handed to the write-behind.
   */
  async collectIdle(cls?: AnyGrainClass): Promise<number> {
    let n = 0;
    for (const reg of cls ? [this.registration(cls)] : this.regs) {
      // A collection the sweep started is joined, its deactivations counted: the actors it took were idle
      // too, and its rows must reach the write-behind before this resolves (so flush() after it writes them).
      const running = reg.collecting;
      if (running) n += await running;
      n += await this.collectIdleOf(reg);
    }
    return n;
  }

  private collectIdleAll(): void {
    const now = this.clock();
    for (const reg of this.regs) {
      const idleMs = reg.storage.idleMs;
      if (idleMs === undefined || reg.collecting || now - reg.lastCollect < idleMs / 2) continue;
      void this.collectIdleOf(reg);
    }
  }

  /** One collection of a class at a time: a call while one runs waits for it, then collects as of its own clock. */
  private async collectIdleOf(reg: Registration): Promise<number> {
    while (reg.collecting) await reg.collecting;
    const idleMs = reg.storage.idleMs;
    const k = reg.kernel;
    const impl: BackendKernel | undefined = k?.backendKernel;
    if (idleMs === undefined || !k || k.state !== 'active' || !impl?.deactivateIdle) return 0;
    const now = this.clock();
    reg.lastCollect = now;
    const run = impl.deactivateIdle(now - idleMs, now).catch((e: unknown) => {
      this.logger.debug({ err: e, grain: reg.def.name }, `${reg.def.name}: idle collection failed`);
      return 0;
    });
    reg.collecting = run;
    try {
      return await run;
    } finally {
      if (reg.collecting === run) reg.collecting = undefined;
    }
  }

  private registration(cls: AnyGrainClass): Registration {
    const reg = this.byDef.get(cls.grain as GrainDef);
    if (!reg) throw new UnknownGrainError(cls.grain?.name ?? String(cls));
    return reg;
  }

  counters(cls: AnyGrainClass): KernelCounters {
    return this.kernel(cls).counters();
  }

  metrics(): Record<string, ClassMetrics> {
    const out: Record<string, ClassMetrics> = {};
    for (const reg of this.regs) {
      const k = reg.kernel;
      if (!k) continue;
      const overflow = k.overflow();
      const storage = reg.writeBehind?.metrics();
      const timers = k.backendKernel?.timerStats?.();
      const reminders = reg.reminders?.metrics();
      out[k.def.name] = { ...k.counters(), state: k.state, backend: k.backend.name, ...(overflow ? { overflow } : {}), ...(storage ? { storage } : {}), ...(timers ? { timers } : {}), ...(reminders ? { reminders } : {}) };
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
  async idle(opts: { timeoutMs?: number; holdMs?: number } = {}): Promise<void> {
    const timeoutMs = opts.timeoutMs ?? 60_000;
    const holdMs = opts.holdMs ?? 0.25;
    const t0 = performance.now();
    let wave: { done: number; at: number; asked: Array<[RingKernel, number]> } | undefined;
    for (;;) {
      this.drainReplies();
      const { busy, processed, queued } = this.balance();
      const now = performance.now();
      if (busy.length !== 0) wave = undefined;
      else if (wave && wave.asked.every(([k, r]) => !k.accepting || k.publicationAnswered(r))) {
        if (processed === wave.done && queued === 0) {
          if (now - wave.at >= holdMs) return;
        } else wave = undefined;
      }
      if (busy.length === 0 && !wave) {
        const asked = this.kernels()
          .filter((k) => k.accepting)
          .map((k): [RingKernel, number] => [k, k.requestPublication()]);
        wave = { done: processed, at: now, asked };
      }
      if (now - t0 > timeoutMs) {
        const why = busy.length ? busy : wave ? [`counts still moving, or a kernel did not answer a counter publication request (processed ${processed}, queued ${queued})`] : [`counts still moving (processed ${processed})`];
        throw new IdleTimeoutError(timeoutMs, why);
      }
      await new Promise((r) => (now - t0 < 20 ? setImmediate(r) : setTimeout(r, 1)));
    }
  }

  /** What keeps the system from being idle (`busy`, empty when idle), every message processed so far, and the kernels' `queued`. */
  private balance(): { busy: string[]; processed: number; queued: number } {
    const out: string[] = [];
    let processed = 0;
    let queued = 0;
    let spilled = 0;
    for (const k of this.waiting) spilled += this.spills.get(k)?.size ?? 0;
    if (spilled) out.push(`${spilled} sends wait for ring space`);
    let k2kSent = 0;
    let k2kReceived = 0;
    // Two whole reads of every kernel that agree: no publication changed while the reading went on.
    const live = this.kernels().filter((k) => k.state !== 'created');
    const first = live.map((k) => k.counters());
    const second = live.map((k) => k.counters());
    if (!first.every((c, i) => sameCounts(c, second[i]!))) out.push('counters moved between two reads');
    for (const [i, k] of live.entries()) {
      const c = second[i]!;
      k2kSent += c.k2kSent;
      k2kReceived += c.k2kReceived;
      const inn = c.sent + c.k2kReceived;
      const done = c.processed + c.rejected + c.hostRejected;
      processed += done;
      if (k.accepting) queued += k.queued();
      if (inn !== done || c.inboundDepth !== 0) out.push(`${k.def.name} (${k.state}): ${inn - done} of ${inn} messages not yet processed`);
    }
    if (k2kSent !== k2kReceived) out.push(`${k2kSent - k2kReceived} K2K messages in flight`);
    return { busy: out, processed, queued };
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

  private stopping: Promise<void> | undefined;

  private async shutdownOnce(opts: TerminateOptions): Promise<void> {
    this.removeSignalHandlers();
    // Leave the cluster first: partitions move to the others while this silo still forwards and serves.
    await this.router?.close();
    this.router = undefined;
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    // Every kernel stops before any kernel's memory is freed (kernel.ts terminate: keepMemory).
    for (const reg of this.regs) {
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
    for (const reg of this.regs) if (reg.writeBehind) await reg.writeBehind.flush();
    for (const reg of this.regs) await reg.reminders?.settled();
    for (const b of new Set(this.kernels().map((k) => k.backend))) await b.dispose();
    this.started = false;
    this.starting = undefined;
  }
}

/** Failed loads remembered for turning kernel replies back into StateLoadError (system.loadFailures). */
const LOAD_FAILURES = 64;

/** Activation hooks as methods for error reports (their failures arrive as tell errors). */
const HOOK_DEF = {
  onActivate: { id: HOOK_METHOD.onActivate, name: 'onActivate', request: undefined as never, reply: undefined },
  onDeactivate: { id: HOOK_METHOD.onDeactivate, name: 'onDeactivate', request: undefined as never, reply: undefined },
} satisfies Record<string, MethodDef>;

/** An ask's `into`: each entry names a numeric array field of the reply and is that kind's typed array. */
function checkInto(method: MethodDef, into: Readonly<Record<string, unknown>>): void {
  const reply = method.reply;
  for (const [field, arr] of Object.entries(into)) {
    if (arr === undefined) continue;
    const f = reply?.kind === 'struct' ? (reply.fields[field] as Schema | undefined) : undefined;
    const kind = f && (f.kind === 'vec' || f.kind === 'array') && isNumericScalar(f.element) ? f.element.scalar : undefined;
    if (kind === undefined) throw new ReplyTargetError(field, `${method.name}'s reply has no numeric array field "${field}"`);
    const Ctor = KINDS[kind].array;
    if (!(arr instanceof Ctor)) throw new ReplyTargetError(field, `into.${field} must be a ${Ctor.name} (the field is ${kind})`);
  }
}

function checkKey(def: GrainDef, key: unknown, stored: boolean): void {
  if (def.keyKind === 'string') {
    if (typeof key !== 'string') throw new InvalidKeyError(def.name, key, 'a string');
    // A state store holds no empty key (an LMDB key cannot be empty): with storage, '' used to reach the
    // kernel and then fail every load (StateLoadError) and flush of that actor. Refused at the call.
    if (stored && key.length === 0) throw new InvalidKeyError(def.name, key, 'a non-empty string (the class has storage, and a state store holds no empty key)');
    // A lone surrogate travels as UTF-8's U+FFFD: the turn would run as another key's actor, in a lane
    // the host picked for this key (two activations of that key on two threads).
    if (!key.isWellFormed()) throw new InvalidKeyError(def.name, key, 'a well-formed string (no lone surrogate)');
  } else if (typeof key !== 'number' || !Number.isSafeInteger(key)) {
    throw new InvalidKeyError(def.name, key, 'a safe integer');
  }
}

export { RinggrainError };

/** Two reads of a kernel's counters agree on every count (the heartbeat aside). */
function sameCounts(a: KernelCounters, b: KernelCounters): boolean {
  return a.sent === b.sent && a.hostRejected === b.hostRejected && a.inboundDepth === b.inboundDepth && COUNTERS.every((n) => a[n] === b[n]);
}
