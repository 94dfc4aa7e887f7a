import { GatherHeader, StateMeta, gatherEntry, stateRegion } from './state-meta.ts';
import {
  ColumnDesc,
  ColumnImageHeader,
  COUNTERS,
  ControlBlock,
  MAX_TIMERS,
  SlotFlag,
  layoutOf,
  ringBytes,
  type StructSchema,
} from '@ringgrain/core/backend';

/**
 * The machine-readable contract between a generated unit and the CUDA backend: the kernel parameters
 * as ONE list from which the C signature is generated, the sizes and launch shape of a kernel, its turn
 * errors and scratch. The device-side structures the backend allocates or writes are core's schemas
 * (core cuda-layouts.ts, defined once beside protocol.ts; laid out by `layoutOf`, emitted into the unit
 * with static_asserts); they are re-exported here for the generator's own modules and its callers.
 */
export {
  RouteEntry,
  OverflowHeader,
  OverflowNode,
  OVERFLOW_NODE_HEADER,
  overflowLayout,
  BULK_BOARDS,
  BULK_JOB_BYTES,
  BulkBoard,
  DeviceGlobals,
  DirEntry,
  DIR_STATE,
  isReadyDirState,
  COUNTER_ROW_BYTES,
  MAX_HOST_LANES,
  TimerEntry,
  TimerRowHeader,
  TimerGlobals,
  TimerLaneStats,
  TimerHostBlock,
  TICK_FLAG,
  TICK_TIMER_SHIFT,
  timerLayout,
  TIMER_HOST_BYTES,
} from '@ringgrain/core/backend';
import {
  BulkBoard,
  COUNTER_ROW_BYTES,
  DeviceGlobals,
  DirEntry,
  OverflowHeader,
  OverflowNode,
  RouteEntry,
  TICK_FLAG,
  TICK_TIMER_SHIFT,
} from '@ringgrain/core/backend';

if (COUNTERS.length * 4 !== COUNTER_ROW_BYTES) throw new Error('codegen: counter row must hold every core counter');

export type ParamKind = 'ptr' | 'u32' | 'u64';
export interface KernelParam {
  readonly name: string;
  readonly ctype: string;
  readonly kind: ParamKind;
  readonly doc: string;
}

/** Kernel parameters in order. The C signature is generated from this list. */
export const KERNEL_PARAMS: readonly KernelParam[] = [
  {
    name: 'control',
    ctype: 'rg_ControlBlock*',
    kind: 'ptr',
    doc: 'pinned mapped host memory: one ControlBlock (core protocol.ts) per host lane, CONTROL_STRIDE apart',
  },
  {
    name: 'inbound',
    ctype: 'unsigned char*',
    kind: 'ptr',
    doc:
      'pinned mapped host memory: per host lane, a host → kernel ring formatted by core ' +
      'Ring.format(ringCapacity, slotSize), laneBytes apart',
  },
  {
    name: 'replies',
    ctype: 'unsigned char*',
    kind: 'ptr',
    doc: 'pinned mapped host memory: kernel → host ring formatted by core Ring.format(replyCapacity, slotSize)',
  },
  {
    name: 'queues',
    ctype: 'unsigned char*',
    kind: 'ptr',
    doc:
      'device memory, zero-filled: `partitions` rings of queueCapacity slots of slotSize bytes, each ' +
      'queueBytes long',
  },
  { name: 'states', ctype: 'unsigned char*', kind: 'ptr', doc: 'device memory, zero-filled: maxActors state structs' },
  { name: 'directory', ctype: 'rg_DirEntry*', kind: 'ptr', doc: 'device memory, zero-filled: dirCapacity DirEntry' },
  {
    name: 'globals',
    ctype: 'unsigned char*',
    kind: 'ptr',
    doc:
      'device memory, zero-filled: DeviceGlobals (with the bulk job boards), (partitions + 1) counter rows, ' +
      'then one laneSeen word per host lane',
  },
  {
    name: 'routes',
    ctype: 'const rg_RouteEntry*',
    kind: 'ptr',
    doc: 'device memory, host-written: RouteEntry per grain id (routeCount entries)',
  },
  {
    name: 'scratch',
    ctype: 'unsigned char*',
    kind: 'ptr',
    doc:
      "device memory: partitions × scratch lanes × scratchBytes, each worker lane's decoded request and reply " +
      '(off the stack: arrays and vectors count at their bound)',
  },
  {
    name: 'overflow',
    ctype: 'unsigned char*',
    kind: 'ptr',
    doc: "device memory, zero-filled: this kernel's K2K overflow pool (overflowLayout)",
  },
  {
    name: 'overflowNodes',
    ctype: 'unsigned int',
    kind: 'u32',
    doc: "nodes in the overflow pool, the first `partitions` being the lists' initial stubs",
  },
  { name: 'routeCount', ctype: 'unsigned int', kind: 'u32', doc: 'entries in routes' },
  { name: 'partitions', ctype: 'unsigned int', kind: 'u32', doc: 'worker warps = partition queues' },
  { name: 'queueCapacity', ctype: 'unsigned int', kind: 'u32', doc: 'slots per partition queue (power of two)' },
  { name: 'ringCapacity', ctype: 'unsigned int', kind: 'u32', doc: 'slots of the inbound ring (power of two)' },
  { name: 'replyCapacity', ctype: 'unsigned int', kind: 'u32', doc: 'slots of the reply ring (power of two)' },
  {
    name: 'slotSize',
    ctype: 'unsigned int',
    kind: 'u32',
    doc: 'bytes per slot, header included, in every ring and queue',
  },
  { name: 'maxActors', ctype: 'unsigned int', kind: 'u32', doc: 'state slots' },
  { name: 'dirCapacity', ctype: 'unsigned int', kind: 'u32', doc: 'directory entries (power of two ≥ 2 × maxActors)' },
  {
    name: 'turnBudget',
    ctype: 'unsigned int',
    kind: 'u32',
    doc: 'loop iterations a turn may run before failing with TURN_BUDGET',
  },
  {
    name: 'sendBudget',
    ctype: 'unsigned int',
    kind: 'u32',
    doc: 'retries (≈256 ns apart) of a K2K send to a full queue before failing with QUEUE_FULL',
  },
  {
    name: 'lanes',
    ctype: 'unsigned int',
    kind: 'u32',
    doc:
      'host lanes (1..32): control blocks CONTROL_STRIDE apart from `control`, inbound rings laneBytes apart ' +
      'from `inbound`, one ingress warp each',
  },
  {
    name: 'laneBytes',
    ctype: 'unsigned long long',
    kind: 'u64',
    doc: "bytes from one host lane's inbound ring to the next (sizes().inboundStride)",
  },
  {
    name: 'timers',
    ctype: 'unsigned char*',
    kind: 'ptr',
    doc:
      'device memory, zero-filled: the timer area (timerLayout: TimerGlobals, per-worker TimerLaneStats, a ' +
      'timer row per actor slot); 0 for a class without timers',
  },
  {
    name: 'timerHost',
    ctype: 'unsigned char*',
    kind: 'ptr',
    doc:
      'pinned mapped host memory: one TimerHostBlock (published time, caught-up epoch, figures); 0 for a ' +
      'class without timers',
  },
];

/** Bytes between two host lanes' control blocks (a control block rounded up to 128). */
export const CONTROL_STRIDE = Math.ceil(layoutOf(ControlBlock).size / 128) * 128;

export interface AbiOptions {
  readonly maxActors: number;
  readonly ringCapacity: number;
  readonly replyCapacity: number;
  readonly slotSize: number;
  readonly partitions: number;
  readonly queueCapacity: number;
  /** Host lanes (default 1). */
  readonly lanes?: number;
}

export const THREADS_PER_BLOCK = 128;

function pow2AtLeast(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

export interface Abi {
  readonly version: 1;
  readonly grain: string;
  readonly grainId: number;
  readonly entry: string;
  /** The dirty gather kernel of write-behind (state-meta.ts). */
  readonly gatherEntry: string;
  /**
   * Whether the unit's kernel services residency requests (residency.ts: deactivation through
   * DeviceGlobals.residencyLo/Hi). A backend gives a class with persistence `deactivateIdle` only then.
   */
  readonly residency: boolean;
  readonly params: readonly KernelParam[];
  readonly stateSize: number;
  readonly stateAlign: number;
  /** Bytes of one worker's scratch: the request union at 0, the reply union at `replyAt` (unit.ts: RG_SCRATCH_*). */
  readonly scratch: ScratchLayout;
  readonly schemas: {
    readonly RouteEntry: StructSchema;
    readonly DeviceGlobals: StructSchema;
    readonly BulkBoard: StructSchema;
    readonly DirEntry: StructSchema;
    readonly OverflowHeader: StructSchema;
    readonly OverflowNode: StructSchema;
    readonly StateMeta: StructSchema;
    readonly GatherHeader: StructSchema;
  };
  /** Turn error codes as they appear in the unit (messages are the reply texts). */
  readonly errors: Readonly<Record<string, number>>;
  readonly dirCapacity: (o: Pick<AbiOptions, 'maxActors'>) => number;
  readonly sizes: (o: AbiOptions) => {
    /** One control block, and the bytes from one host lane's block to the next. */
    readonly control: number;
    readonly controlStride: number;
    /** One inbound ring, and the bytes from one host lane's ring to the next (the laneBytes parameter). */
    readonly inbound: number;
    readonly inboundStride: number;
    readonly replies: number;
    readonly queueBytes: number;
    readonly queues: number;
    readonly states: number;
    readonly directory: number;
    readonly globals: number;
    readonly routesPerGrain: number;
    readonly scratch: number;
  };
  /**
   * Warp 0 of block 0 is the control warp and lane 0's ingress; warps 1..partitions are workers; then one ingress warp
   * per further host lane.
   */
  readonly launch: (o: Pick<AbiOptions, 'partitions' | 'lanes'>) => {
    readonly blocks: number;
    readonly threadsPerBlock: number;
    readonly sharedBytes: number;
  };
}

export const TURN_ERRORS = {
  TURN_BUDGET: 2,
  INDEX_RANGE: 3,
  QUEUE_FULL: 4,
  NO_ROUTE: 5,
  INVALID_KEY: 6,
  PAYLOAD_TOO_LARGE: 7,
  REPLY_MISMATCH: 8,
  NO_REPLY: 9,
  /** The handler threw new Error('constant'); the error reply's text is that message. */
  THROW: 10,
  /** A K2K send found its target queue full and every node of the target's overflow pool taken. */
  POOL_EXHAUSTED: 11,
} as const;

const up16 = (n: number) => Math.ceil(n / 16) * 16;

/**
 * A worker's scratch for one turn: the largest request at 0 and the largest reply after it, each
 * rounded up to 16 (a union's size rounds its largest member up to its alignment, at most 16). The
 * unit checks with static_assert that its unions fit.
 */
export function scratchLayout(
  requests: readonly StructSchema[],
  replies: readonly (StructSchema | undefined)[],
): ScratchLayout {
  const req = up16(Math.max(16, ...requests.map((s) => layoutOf(s).size)));
  const rep = up16(Math.max(16, ...replies.map((s) => (s ? layoutOf(s).size : 1))));
  const bytes = req + rep;
  return { bytes, replyAt: req, lanes: bytes <= LANE_TURN_SCRATCH_LIMIT ? 32 : 1 };
}

/**
 * Largest scratch for which a worker keeps one per lane and runs up to 32 turns at once (device.ts
 * rg_*_lane_turns); a class with larger requests or replies (big arrays) runs one turn at a time.
 */
export const LANE_TURN_SCRATCH_LIMIT = 4096;

/**
 * Bytes of captured values (pointers and scalar locals, 8 bytes each) an element-parallel loop hands to
 * the lanes of its warp in shared memory (device.ts rg_coop.env); a loop capturing more stays sequential.
 */
export const COOP_ENV_BYTES = 256;

/** One worker lane's scratch (the request union at 0, the reply union at `replyAt`), and how many lanes have one. */
export interface ScratchLayout {
  readonly bytes: number;
  readonly replyAt: number;
  readonly lanes: 1 | 32;
}

/** The units include residency.cuh (the worker and control warp service residency requests). */
const RESIDENCY_IN_UNIT = true;

export function makeAbi(grain: string, grainId: number, state: StructSchema, scratch: ScratchLayout): Abi {
  const dirCapacity = (o: Pick<AbiOptions, 'maxActors'>): number => pow2AtLeast(Math.max(2, o.maxActors * 2));
  return {
    version: 1,
    grain,
    grainId,
    entry: `rg_${grain}_main`,
    gatherEntry: gatherEntry(grain),
    residency: RESIDENCY_IN_UNIT,
    params: KERNEL_PARAMS,
    stateSize: layoutOf(state).size,
    stateAlign: layoutOf(state).align,
    scratch,
    schemas: { RouteEntry, DeviceGlobals, BulkBoard, DirEntry, OverflowHeader, OverflowNode, StateMeta, GatherHeader },
    errors: TURN_ERRORS,
    dirCapacity,
    sizes: (o) => {
      const queueBytes = ringBytes(o.queueCapacity, o.slotSize);
      const inbound = ringBytes(o.ringCapacity, o.slotSize);
      return {
        control: controlSize(),
        controlStride: CONTROL_STRIDE,
        inbound,
        inboundStride: Math.ceil(inbound / 128) * 128,
        replies: ringBytes(o.replyCapacity, o.slotSize),
        queueBytes,
        queues: queueBytes * o.partitions,
        // The states, then each slot's StateMeta (state-meta.ts stateRegion).
        states: stateRegion(layoutOf(state).size, o.maxActors).bytes,
        directory: layoutOf(DirEntry).size * dirCapacity(o),
        globals: layoutOf(DeviceGlobals).size + (o.partitions + 1) * COUNTER_ROW_BYTES + 4 * (o.lanes ?? 1),
        routesPerGrain: layoutOf(RouteEntry).size,
        scratch: scratch.bytes * scratch.lanes * o.partitions,
      };
    },
    launch: (o) => ({
      blocks: Math.ceil(((o.partitions + (o.lanes ?? 1)) * 32) / THREADS_PER_BLOCK),
      threadsPerBlock: THREADS_PER_BLOCK,
      sharedBytes: 0,
    }),
  };
}

function controlSize(): number {
  return layoutOf(ControlBlock).size;
}


if (Object.values(SlotFlag).some((f) => f >= TICK_FLAG) || (1 << (32 - TICK_TIMER_SHIFT)) < MAX_TIMERS) {
  throw new Error('codegen: TICK_FLAG must lie above core SlotFlag bits, and the corr word must hold every timer id');
}

/**
 * tellMany column images: the layout is core's (column-image.ts packs it on the host); every unit emits
 * these structs with static_asserts and reads rows with column-image.ts's readers.
 */
export { ColumnDesc, ColumnImageHeader };
if (layoutOf(ColumnImageHeader).size % 8 !== 0 || layoutOf(ColumnDesc).size % 8 !== 0)
  throw new Error('codegen: column image header and descriptors must keep the columns 8-aligned');
