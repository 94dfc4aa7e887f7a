/**
 * The CUDA backend's options: what a user may set, their defaults and their checks (one place, so the
 * backend, the isolated GPU host and the tests read the same rules).
 */
import { MAX_HOST_LANES, scaledDefault } from '@ringgrain/core/backend';
import { CudaBackendOptionsError } from './errors.ts';
import type { HostMemorySource } from './host-memory.ts';
import { DEFAULT_PARTITIONS, DEFAULT_QUEUE_CAPACITY } from './sizing.ts';

export interface CudaBackendOptions {
  /** CUDA device ordinal (default 0). The same as `devices: [device]`; give one of the two. */
  readonly device?: number;
  /**
   * The GPUs a grain class placed here runs on (default: `[device]`, i.e. device 0). With several, each
   * class gets a lane group on every listed GPU: its own partitions, queues, overflow pool, states and
   * host rings there, and a key's messages go to the group of its host lane (core `laneOfKey` over all the
   * groups' lanes, as the CPU pool spreads keys over threads). K2K sends to a key of another GPU are written
   * into that GPU's queues through peer access. `'all'`: every GPU the driver lists. An ordinal may repeat
   * (`[0, 0]`: two lane groups on device 0, apart in memory: every path but peer access, on one GPU).
   */
  readonly devices?: 'all' | readonly number[];
  /**
   * Worker warps (= device partition queues) per ring kernel. Default: 32, and for a grain class of more
   * than 262,144 actors (`maxActors`) one per 2,048 actors, up to 512 (1,000,000 actors: 512), because a
   * big class's bursts need the warps (`partitionsFor`; the README's GPU section has the measurements);
   * scaled partitions halve (down to 32) where the kernels already resident leave too little room.
   */
  readonly partitions?: number;
  /**
   * Slots per device partition queue, a power of two. Default: 256, and for big grain classes enough for
   * half of `maxActors` over all partitions, up to 16,384 a queue (`queueCapacityFor`): a burst larger
   * than the queues waits in the overflow pool, which costs more per message. Either default is capped
   * at 64 MiB of slots a queue (at least 16 slots): vector-add's 8 MB slots took 256 × 8 MB a queue.
   */
  readonly queueCapacity?: number;
  /**
   * Host lanes per ring kernel, 1 to 32 (default 4): each is an inbound ring (ringCapacity slots) with
   * its own ingress warp, and the host sends a key's messages into lane laneOfKey(key, hostLanes), so
   * host → GPU throughput scales with lanes while FIFO per sender → actor holds. One warp moves about
   * 3 M small messages/s (measured on the H100), so more lanes help `tellMany` and many tells.
   * With several devices, every lane group has this many.
   */
  readonly hostLanes?: number;
  /**
   * SMs left free for other launches (default max(4, SMs / 8)); the README says why the CUDA backend keeps SMs free.
   */
  readonly reserveSMs?: number;
  /**
   * Keep each actor's dirty mark and last-turn clock in every kernel, also of classes without storage
   * (default false: only classes with storage keep them, since a writing turn's marks cost two fences on
   * its K2K path). For tests and benchmarks of the dirty gather (`@ringgrain/cuda-backend/testing`).
   */
  readonly stateMarks?: boolean;
  /**
   * Run the class's onActivate at every activation, also of classes without persistence (default false:
   * as on the CPU backend, hooks run only for classes with storage or idleMs). For tests of the
   * translated hooks on the GPU (test/hooks/activation-hooks.test.ts).
   */
  readonly activationHooks?: boolean;
  /**
   * Actor residency on the device (issue 30; docs/gpu-residency.md): a class with storage or idleMs gets
   * writeStates (load on first message, preload) and deactivateIdle (onDeactivate, idle collection, a full
   * table making room) from its kernel. Default true. It costs nothing for a class without storage or
   * idleMs (no residency area is made for it); for one with them it costs its residency area (device
   * memory: the install board, staging batch and parking FIFOs, sized by maxActors and the state) and 1.1 MB
   * of pinned host memory per kernel. false: such a class is refused at start with
   * StorageUnsupportedError, as before residency existed.
   */
  readonly residency?: boolean;
  /**
   * Most ms to wait for a kernel to exit after STOP before declaring its context poisoned (default 2000, times
   * RINGGRAIN_TIMEOUT_SCALE).
   */
  readonly stopTimeoutMs?: number;
  /**
   * Retries (≈256 ns apart) of a K2K send into a full queue before the turn fails QUEUE_FULL; only with overflowBytes 0
   * (default 65536).
   */
  readonly sendBudget?: number;
  /**
   * Device memory per kernel for K2K messages that find their target queue full (default: 1 GiB or a
   * sixteenth of the device's free memory at launch, whichever is less): they
   * wait there, in order, instead of failing the sending turn. A send fails (POOL_EXHAUSTED) only when
   * the pool is full. 0: no pool (a full queue is retried sendBudget times, then the turn fails QUEUE_FULL).
   */
  readonly overflowBytes?: number;
  /** Stream queries (driver calls) at most this often per kernel; health() is off the hot path (default 50). */
  readonly healthIntervalMs?: number;
  /** Compile cache directory (default: $RINGGRAIN_CACHE_DIR or ~/.cache/ringgrain/cubin). */
  readonly cacheDir?: string;
  /**
   * NVRTC compiles run at once, each on a worker thread of its own (default $RINGGRAIN_COMPILE_THREADS, else one per
   * core); 0: on libuv's threadpool through koffi (4 threads unless UV_THREADPOOL_SIZE says more). Only units the
   * kernel cache lacks are compiled; the workers end when idle.
   */
  readonly compileThreads?: number;
  /**
   * Where rings live on the host (default: pinned buffers of this process; the GPU host process passes a shared
   * mapping).
   */
  readonly hostMemory?: HostMemorySource;
}

export type ResolvedCudaOptions = Required<
  Omit<CudaBackendOptions, 'reserveSMs' | 'cacheDir' | 'hostMemory' | 'devices' | 'compileThreads'>
> & {
  readonly reserveSMs: number | undefined;
  readonly cacheDir: string | undefined;
  /** undefined: $RINGGRAIN_COMPILE_THREADS or one per core, read at each compile. */
  readonly compileThreads: number | undefined;
  /** The lane groups' device ordinals as given ('all': resolved at the first launch, from the driver's count). */
  readonly devices: 'all' | readonly number[];
};

/** Lane groups a backend may have (each a ring kernel per class; their routes are per group). */
export const MAX_LANE_GROUPS = 16;

/** Defaults filled in and every option checked (CudaBackendOptionsError says which and why). */
export function resolveOptions(opts: CudaBackendOptions): ResolvedCudaOptions {
  const devices = opts.devices ?? [opts.device ?? 0];
  if (opts.devices !== undefined && opts.device !== undefined)
    throw new CudaBackendOptionsError(
      `give device or devices, not both (device ${opts.device}, devices ${JSON.stringify(opts.devices)})`,
    );
  if (devices !== 'all') {
    if (
      !Array.isArray(devices) ||
      devices.length < 1 ||
      devices.length > MAX_LANE_GROUPS ||
      !devices.every((d) => Number.isInteger(d) && d >= 0)
    ) {
      throw new CudaBackendOptionsError(
        `devices must be 'all' or a list of 1 to ${MAX_LANE_GROUPS} device ordinals (integers ≥ 0), got ` +
          `${JSON.stringify(devices)}`,
      );
    }
  } else if (opts.devices !== 'all') {
    throw new CudaBackendOptionsError(
      `devices must be 'all' or a list of device ordinals, got ${JSON.stringify(opts.devices)}`,
    );
  }
  const options: ResolvedCudaOptions = {
    device: devices === 'all' ? 0 : devices[0]!,
    devices,
    partitions: opts.partitions ?? DEFAULT_PARTITIONS,
    queueCapacity: opts.queueCapacity ?? DEFAULT_QUEUE_CAPACITY,
    hostLanes: opts.hostLanes ?? 4,
    stopTimeoutMs: opts.stopTimeoutMs ?? scaledDefault(2_000),
    sendBudget: opts.sendBudget ?? 1 << 16,
    overflowBytes: opts.overflowBytes ?? -1,
    healthIntervalMs: opts.healthIntervalMs ?? 50,
    stateMarks: opts.stateMarks ?? false,
    activationHooks: opts.activationHooks ?? false,
    residency: opts.residency ?? true,
    reserveSMs: opts.reserveSMs,
    cacheDir: opts.cacheDir,
    compileThreads: opts.compileThreads,
  };
  const ct = opts.compileThreads;
  if (ct !== undefined && (!Number.isInteger(ct) || ct < 0))
    throw new CudaBackendOptionsError(`compileThreads must be a whole number ≥ 0 (0: no worker threads), got ${ct}`);
  const q = options.queueCapacity;
  if (!Number.isInteger(q) || q < 2 || (q & (q - 1)) !== 0)
    throw new CudaBackendOptionsError(`queueCapacity must be a power of two ≥ 2, got ${q}`);
  if (!Number.isInteger(options.partitions) || options.partitions < 1)
    throw new CudaBackendOptionsError(`partitions must be a positive integer, got ${options.partitions}`);
  const h = options.hostLanes;
  if (!Number.isInteger(h) || h < 1 || h > MAX_HOST_LANES)
    throw new CudaBackendOptionsError(`hostLanes must be an integer from 1 to ${MAX_HOST_LANES}, got ${h}`);
  if (opts.overflowBytes !== undefined && (!Number.isInteger(opts.overflowBytes) || opts.overflowBytes < 0))
    throw new CudaBackendOptionsError(`overflowBytes must be a non-negative integer, got ${options.overflowBytes}`);
  return options;
}
