import { pino, type Logger } from 'pino';
import type { Backend, KernelOptions } from '../backend.ts';
import { PlacementError, SystemOptionsError } from '../errors.ts';
import type { AnyGrainClass, GrainDef, MethodName, SpecOf } from '../grain.ts';
import { readableStderr } from '../log.ts';
import type { StorageOptions } from '../persist/options.ts';
import { DEFAULT_MAX_QUEUED_BYTES } from '../spill.ts';
import { scaledDefault } from '../timeouts.ts';
import type { Cluster } from '../cluster/types.ts';

/** A class whose instances have a method for each of its spec's methods (any class when its spec is not known). */
export type WithHandlers<C extends AnyGrainClass> =
  string extends MethodName<SpecOf<C>>
    ? unknown
    : { new (): { readonly [M in MethodName<SpecOf<C>>]: (...args: never[]) => unknown } };

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

export const DEFAULT_KERNEL_OPTIONS: KernelOptions = {
  slotSize: 256,
  ringCapacity: 4096,
  replyCapacity: 4096,
  maxActors: 1 << 17,
  turnBudget: 1 << 20,
};

/** The largest reply ring that follows a larger inbound ring by default (kernelOptionsOf says why). */
const REPLY_RING_FOLLOWS_UP_TO = 16_384;

/** SystemOptions with every default filled in and every value checked. */
export interface SystemConfig {
  readonly backends: Readonly<Record<string, Backend>>;
  readonly autoOrder: readonly string[];
  readonly logger: Logger;
  readonly clock: () => number;
  /** Whether `clock` was injected (then every send reads it: tests move it between sends). */
  readonly clockInjected: boolean;
  /** Where kernels' timers read the time: the injected clock (published by the host) or their own. */
  readonly timerClock: 'kernel' | 'host';
  readonly defaults: KernelOptions;
  readonly userDefaults: Partial<KernelOptions>;
  readonly askTimeoutMs: number;
  readonly queueFullTimeoutMs: number;
  readonly maxQueuedBytes: number;
  readonly handshakeTimeoutMs: number;
  readonly heartbeatTimeoutMs: number;
  readonly replySpinMicros: number;
  readonly handleSignals: boolean;
  readonly signalExitMs: number;
  readonly cluster: Cluster | undefined;
}

/** Checks the options and fills in defaults (a bad value throws SystemOptionsError or PlacementError). */
export function systemConfig(opts: SystemOptions): SystemConfig {
  const given = Object.keys(opts.backends);
  for (const n of opts.autoOrder ?? []) {
    if (!given.includes(n))
      throw new PlacementError(
        `autoOrder names "${n}", which is not one of the backends given (${given.join(', ') || 'none'})`,
        { hint: 'list only names that are keys of `backends`' },
      );
  }
  const autoOrder =
    opts.autoOrder ??
    given
      .map((n, i) => ({ n, i, rank: opts.backends[n]!.autoRank ?? 0 }))
      .sort((a, b) => b.rank - a.rank || a.i - b.i)
      .map((x) => x.n);
  // On a terminal, lines a person reads; piped or redirected, JSON lines (for log tools).
  const logger =
    opts.logger ??
    pino(
      { name: 'ringgrain', level: opts.logLevel ?? process.env['RINGGRAIN_LOG'] ?? 'info' },
      process.stderr.isTTY ? readableStderr() : pino.destination(2),
    );
  const c: SystemConfig = {
    backends: opts.backends,
    autoOrder,
    logger,
    clock: opts.clock ?? Date.now,
    clockInjected: opts.clock !== undefined,
    timerClock: opts.clock ? 'host' : 'kernel',
    defaults: { ...DEFAULT_KERNEL_OPTIONS, ...opts.defaults },
    userDefaults: opts.defaults ?? {},
    askTimeoutMs: opts.askTimeoutMs ?? scaledDefault(30_000),
    queueFullTimeoutMs: opts.queueFullTimeoutMs ?? scaledDefault(5_000),
    maxQueuedBytes: opts.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES,
    handshakeTimeoutMs: opts.handshakeTimeoutMs ?? scaledDefault(10_000),
    heartbeatTimeoutMs: opts.heartbeatTimeoutMs ?? scaledDefault(5_000),
    replySpinMicros: opts.replySpinMicros ?? 200,
    handleSignals: opts.handleSignals ?? true,
    signalExitMs: opts.signalExitMs ?? 5_000,
    cluster: opts.cluster,
  };
  if (typeof c.maxQueuedBytes !== 'number' || !(c.maxQueuedBytes > 0))
    throw new SystemOptionsError(`maxQueuedBytes must be a number of bytes > 0, got ${opts.maxQueuedBytes}`);
  // Timeouts must be > 0 (NaN and negatives fired at once); replySpinMicros may be 0 (no spin).
  for (const [name, v] of [
    ['askTimeoutMs', c.askTimeoutMs],
    ['queueFullTimeoutMs', c.queueFullTimeoutMs],
    ['handshakeTimeoutMs', c.handshakeTimeoutMs],
    ['heartbeatTimeoutMs', c.heartbeatTimeoutMs],
    ['signalExitMs', c.signalExitMs],
  ] as const) {
    if (typeof v !== 'number' || !(v > 0))
      throw new SystemOptionsError(`${name} must be a number of milliseconds > 0, got ${String(v)}`);
  }
  if (typeof c.replySpinMicros !== 'number' || !(c.replySpinMicros >= 0))
    throw new SystemOptionsError(`replySpinMicros must be a number ≥ 0, got ${String(c.replySpinMicros)}`);
  return c;
}

/** A class's kernel options: the system's defaults under the ones given at register (checked here). */
export function kernelOptionsOf(def: GrainDef, given: Partial<KernelOptions>, config: SystemConfig): KernelOptions {
  const options: { -readonly [K in keyof KernelOptions]: KernelOptions[K] } = { ...config.defaults, ...given };
  // A reply ring follows a larger inbound ring unless set (up to 16,384 slots): a batch of asks as large
  // as the inbound ring otherwise waits on reply space (askMany of 10,000 rows on the H100: 1.8 M rows/s
  // with 16,384 reply slots, 0.9 M with 4,096).
  if (
    given.replyCapacity === undefined &&
    config.userDefaults.replyCapacity === undefined &&
    options.ringCapacity > options.replyCapacity
  ) {
    options.replyCapacity = Math.min(options.ringCapacity, Math.max(options.replyCapacity, REPLY_RING_FOLLOWS_UP_TO));
  }
  // Checked here, not by the first message: maxActors 0 (or 1.5, NaN) used to start, then fail every turn
  // with 'all 0 actor slots are taken'.
  if (!Number.isSafeInteger(options.maxActors) || options.maxActors < 1) {
    throw new PlacementError(
      `grain "${def.name}": maxActors must be a positive integer (actor slots a lane holds), got ${options.maxActors}`,
      { hint: 'leave it out for 131,072' },
    );
  }
  return options;
}
