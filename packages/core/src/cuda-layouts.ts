/**
 * The device-side memory layouts of the CUDA runtime (the generated units and @ringgrain/cuda-backend), defined
 * once here beside protocol.ts (whose host-shared structs they sit with): routes, the K2K overflow pool, bulk
 * boards, a kernel's globals, the directory, the counter rows and the timers. The code generator emits each as
 * a C struct with static_asserts of its size, alignment and offsets (and the #defines it needs) from these
 * schemas; the CUDA backend sizes, writes and reads device memory with the same ones. A layout change is made
 * here. The dirty marks and the gather's staging buffer are here too (write-behind); actor residency's layouts
 * are in cuda-residency-layouts.ts.
 *
 * This file imports nothing from protocol.ts, which re-exports it (no import cycle at load).
 */
import { t } from './schema/index.ts';
import { layoutOf } from './schema/layout.ts';
import type { StructSchema } from './schema/types.ts';

/** A 128-byte line in u32 words. */
const LINE = 32;

/** Byte offset of a field (as protocol.ts offsetOf, which this file may not import). */
function fieldOffset(schema: StructSchema, field: string): number {
  const f = layoutOf(schema).fields?.find((x) => x.name === field);
  if (!f) throw new Error(`no field ${field}`);
  return f.offset;
}

/** Routing table entry, one per grain id and lane group (device memory, host-written): where K2K messages go. */
export const RouteEntry = t.struct({
  /** Device address of the grain's partition queues (0: not on this device). */
  queuesLo: t.u32,
  queuesHi: t.u32,
  partitions: t.u32,
  /** Slots per partition queue (power of two). */
  queueCapacity: t.u32,
  slotSize: t.u32,
  /** Device address of the grain's K2K overflow pool (OverflowHeader, then per-partition words, then nodes). */
  poolLo: t.u32,
  poolHi: t.u32,
  /** Nodes in that pool (0: no pool; a full queue then fails the send after sendBudget retries). */
  poolNodes: t.u32,
  /**
   * Lane groups of the grain (cuda-backend `devices`; 0 or 1: one). With several, the table holds one
   * block of routeCount entries per group, group g's at g × routeCount, and a send takes the block of its
   * key's group (runtime/lanes.cuh rg_group_of_key, the host's laneOfKey over every group's lanes).
   */
  groups: t.u32,
  /** Host lanes per group (the groups' lanes are laid end to end in core's lane numbering). */
  groupLanes: t.u32,
});

/**
 * Head of a kernel's K2K overflow pool (device memory, zero-filled). A K2K send that finds its target
 * partition queue full, or that partition's overflow non-empty, takes a node (a slot) from this pool and
 * appends it to the partition's overflow list (device.ts says why FIFO holds and nothing deadlocks).
 */
export const OverflowHeader = t.struct({
  /** Unused (the free-node stack of earlier versions; a lone CAS word every sender fought over). */
  _unused0: t.u32,
  _unused1: t.u32,
  /**
   * The allocation cursor: a sender takes ticket `bump` (atomicAdd, no retry loop) and tries node
   * `partitions + 1 + ticket % (nodes - partitions)`; the nodes after the stubs are used as a ring.
   */
  bump: t.u32,
  /** Messages waiting in overflow lists now, and the most there ever were. */
  inUse: t.u32,
  highWater: t.u32,
  /** Sends refused because every node was taken (POOL_EXHAUSTED). */
  exhausted: t.u32,
  /** Sends that went to overflow. */
  overflowed: t.u32,
  _pad: t.array(t.u32, LINE - 7),
});

/**
 * A pool node's header, before its slot. `taken` is 1 from the allocation (an acquiring exchange that
 * found 0) until the consumer has run the node's turn and the node is no list's head (a releasing store
 * of 0): nodes are free or taken one by one, so no sender waits on a shared free list.
 */
export const OverflowNode = t.struct({
  /** The next node of its partition's list (a ref: index + 1; 0 = none yet). */
  link: t.u32,
  taken: t.u32,
  _pad: t.array(t.u32, 2),
});

/** Bytes before a pool node's slot. */
export const OVERFLOW_NODE_HEADER = layoutOf(OverflowNode).size;

export function overflowLayout(o: { partitions: number; slotSize: number; nodes: number }): {
  tails: number;
  counts: number;
  nodesAt: number;
  nodeBytes: number;
  bytes: number;
} {
  const header = layoutOf(OverflowHeader).size;
  const tails = header;
  const counts = tails + 4 * o.partitions;
  const nodesAt = Math.ceil((counts + 4 * o.partitions) / 16) * 16;
  const nodeBytes = OVERFLOW_NODE_HEADER + o.slotSize;
  return { tails, counts, nodesAt, nodeBytes, bytes: nodesAt + nodeBytes * o.nodes };
}

/**
 * Bulk job boards a kernel has (device.ts rg_bulk_*): a warp with a large copy or element-parallel loop
 * posts it on a free board and idle worker warps of the same kernel run chunks of it beside the poster.
 * A poster that finds every board taken runs its job alone, as without boards: 8 cover the default four
 * host lanes' ingress warps and four one-lane turns posting at once (vector-add with asks in flight).
 */
export const BULK_BOARDS = 8;
/** Bytes of a board's job: an image of the poster's rg_coop (the C asserts that it fits). */
export const BULK_JOB_BYTES = 512;

/**
 * One bulk job board (device memory, zero-filled). `next` and `limit` are 64-bit words (low half first)
 * that carry the job's generation in their high half: next = gen << 32 | next chunk to take,
 * limit = gen << 32 | chunks. A taker runs chunk i only when its fetch-and-add on next returned gen g
 * and chunk i and the limit it then reads has gen g and more than i chunks, so an add that raced a
 * re-post, or came after the job ended, takes nothing.
 */
export const BulkBoard = t.struct({
  nextLo: t.u32,
  nextHi: t.u32,
  limitLo: t.u32,
  limitHi: t.u32,
  /** Chunks finished (each taker adds 1 after its stores and a fence). */
  done: t.u32,
  /** 0: free; else the poster's warp + 1 (claimed by CAS). */
  owner: t.u32,
  _pad: t.array(t.u32, LINE - 6),
  job: t.array(t.u32, BULK_JOB_BYTES / 4),
});

/** Device-memory words of one kernel, zero-filled by the host before launch. */
export const DeviceGlobals = t.struct({
  /** Reply ring reservations (atomicAdd by workers). */
  replyReserve: t.u32,
  _pad0: t.array(t.u32, LINE - 1),
  /** Next free state slot (atomicAdd at activation). */
  stateNext: t.u32,
  /**
   * 1 when the class has persistent state (written by the host before launch): turns keep each actor's
   * dirty mark and last-turn clock (state-meta.ts). 0: they skip it, fences included.
   */
  metaOn: t.u32,
  /**
   * 1 when the class's activation hooks run (written by the host before launch): with persistence, as the
   * CPU backend runs them (only classes with storage or idleMs activate and deactivate with hooks).
   */
  hooksOn: t.u32,
  /** Free-slot ring tickets (device.ts rg_slot_free / rg_slot_take): freed slots, reused before stateNext grows. */
  freeHead: t.u32,
  freeTail: t.u32,
  /** Device address of the kernel's residency area (residency.ts ResidencyGlobals; 0: none), host-written
   * before launch. */
  residencyLo: t.u32,
  residencyHi: t.u32,
  /** 1 when the class loads its actors' stored states (written by the host before launch): a missing actor's
   * messages wait for it. */
  loadOn: t.u32,
  _pad1: t.array(t.u32, LINE - 8),
  /** Dispatch mode, written only by the control thread (warp 0). */
  mode: t.u32,
  _pad2: t.array(t.u32, LINE - 1),
  /** Bumped by warp 0 with every mode change; each host lane's ingress warp reports the one it saw (laneSeen
   * words after the counter rows). */
  modeGen: t.u32,
  _pad3: t.array(t.u32, LINE - 1),
  /** Boards with a job posted: idle workers look at the boards only while this is not 0. */
  bulkLive: t.u32,
  _pad4: t.array(t.u32, LINE - 1),
  boards: t.array(BulkBoard, BULK_BOARDS),
});

// The C side uses next and limit as 64-bit atomics and the job as an 8-byte-aligned rg_coop image; the
// globals region starts 256-aligned (the backend's device allocations), so offsets from it suffice.
if (
  fieldOffset(BulkBoard, 'nextLo') % 8 !== 0 ||
  fieldOffset(BulkBoard, 'limitLo') % 8 !== 0 ||
  fieldOffset(BulkBoard, 'job') % 16 !== 0 ||
  layoutOf(BulkBoard).size % 16 !== 0 ||
  fieldOffset(DeviceGlobals, 'boards') % 16 !== 0
) {
  throw new Error(
    'core cuda-layouts: BulkBoard words must be 8-aligned and its job 16-aligned within the globals region',
  );
}

/** Directory entry: key (int64 halves) → state slot; `state` per DIR_STATE. */
export const DirEntry = t.struct({ keyLo: t.u32, keyHi: t.u32, slot: t.u32, state: t.u32 });

/**
 * DirEntry.state: empty, being written, dead (a tombstone: the state table was full, or the actor was
 * deactivated; reused by a later insert, device.ts insert), or ready (LOADING set: waiting for its state).
 * A ready entry also
 * names its owner partition, `READY | (partition + 1) << OWNER_SHIFT`, so a worker decides an entry
 * with one load (device.ts activate). `isReady` is the host's test.
 */
export const DIR_STATE = {
  EMPTY: 0,
  WRITING: 1,
  READY: 2,
  DEAD: 3,
  KIND_MASK: 3,
  OWNER_SHIFT: 2,
  LOADING: 0x80000000,
} as const;
/** A READY entry whose actor waits for its stored state (residency.cuh): LOADING set on its READY word. */
export const isReadyDirState = (state: number): boolean =>
  (state & DIR_STATE.KIND_MASK) === DIR_STATE.READY && (state & DIR_STATE.LOADING) === 0;

/** One row of per-warp counters, in core's COUNTERS order (one writer per row). */
export const COUNTER_ROW_BYTES = 32;

/** Host lanes a kernel may have (each an ingress warp; warp 0 answers every lane's control block with one lane
 * each). */
export const MAX_HOST_LANES = 32;

// ---- timers (timers.ts) -------------------------------------------------------------------------------

/**
 * One timer of one actor (device memory, zero-filled): a row per actor slot holds one per declared timer
 * (column = the timer's id). Only the worker that owns the actor (its partition) writes due, period,
 * method, active and arm; only the warp whose scan range holds the slot sets `pending` (0 → arm + 1,
 * just before it publishes the tick into the owner's queue) and only the owner clears it (after the
 * tick's turn). `arm` is bumped, last and with release, at every start and stop, so a scanner that sees
 * an arm sees that arm's due and period, and a tick carrying an older arm is dropped by its owner.
 */
export const TimerEntry = t.struct({
  /** Next due time (ms, the timer clock's epoch). */
  due: t.f64,
  /** Period (ms) while active. */
  period: t.f64,
  arm: t.u32,
  /** arm + 1 of the tick in flight for this timer (0: none). */
  pending: t.u32,
  /** Method id of the tick (the declared timer's method: a constant column). */
  method: t.u32,
  /** 1 while the timer runs. */
  active: t.u32,
});

/** Head of an actor slot's timer row (its TimerEntry columns follow). */
export const TimerRowHeader = t.struct({
  keyLo: t.u32,
  keyHi: t.u32,
  /** 1 from the actor's activation until its deactivation (the scanner sends ticks only for live rows). */
  live: t.u32,
  _pad: t.u32,
});

/** Kernel-wide timer words (device memory, zero-filled): the clock as every worker reads it. */
export const TimerGlobals = t.struct({
  /** %globaltimer (ns) when the control warp started, and the host's Date.now() at launch: the kernel clock's
   * origin. */
  originNsLo: t.u32,
  originNsHi: t.u32,
  originMs: t.f64,
  /** 'host' clock: the time last published by the host, copied here by the control warp, and its epoch. */
  time: t.f64,
  epoch: t.u32,
  /** 1: the time is the host's (TimerHostBlock.clock); 0: the kernel's own. */
  hostClock: t.u32,
  /** Set (release) by the control warp once the words above are written; workers scan only after it. */
  ready: t.u32,
  /** Bumped at every timer start (any actor): scanners rescan at once instead of waiting for the earliest due. */
  armGen: t.u32,
  _pad: t.array(t.u32, LINE - 10),
});

/**
 * Per worker (partition) timer figures (device memory, zero-filled). ticks, tickErrors, handled and armed
 * are added to by the owner's lanes (atomics: lane-parallel turns); enqueued and scannedEpoch are written
 * only by the warp that scans (lane 0).
 */
export const TimerLaneStats = t.struct({
  ticks: t.u32,
  tickErrors: t.u32,
  /** Timers running (a sum over rows may go below 0 in one row: a timer started on one partition never moves). */
  armed: t.i32,
  /** Ticks taken from the queue (run, or dropped as stale): caught up when the sum equals enqueued's. */
  handled: t.u32,
  enqueued: t.u32,
  /** The host clock epoch of the last scan that sent every tick due by it. */
  scannedEpoch: t.u32,
  _pad: t.array(t.u32, 2),
});

/**
 * The words a kernel's timers share with the host (pinned mapped host memory, 128-byte lines): line 0 is
 * host-written (the published time under a sequence word, odd while written: its epoch is seq / 2), line
 * 1 is written by the kernel's control warp when it publishes its counters. No word moves per tick.
 */
export const TimerHostBlock = t.struct({
  seq: t.u32,
  /** 1: the timers read the published time ('host'); 0: the kernel's clock, from originMs. */
  clock: t.u32,
  time: t.f64,
  /** Date.now() written just before the launch (the kernel clock's origin). */
  originMs: t.f64,
  _pad0: t.array(t.u32, 32 - 6),
  /** The last epoch whose due ticks every worker has run (TimerBackend.timersCaughtUp). */
  caughtEpoch: t.u32,
  ticks: t.u32,
  tickErrors: t.u32,
  armed: t.i32,
  /** Publications of this line (bumped last). */
  publishes: t.u32,
  _pad1: t.array(t.u32, 32 - 5),
});

/** Slot header flag of a tick in a partition queue (never on a host ring; core's SlotFlag bits lie below it). */
export const TICK_FLAG = 256;
/** A tick's corr word: the timer id in the top bits, the arm's low bits below (abi: both the C and TS read it so). */
export const TICK_TIMER_SHIFT = 27;

/** Where a kernel's timer area (the `timers` kernel parameter) keeps what: globals, per-worker stats, then one
 * row per actor slot. */
export function timerLayout(o: { partitions: number; maxActors: number; timers: number }): {
  statsAt: number;
  rowsAt: number;
  rowBytes: number;
  bytes: number;
} {
  const statsAt = layoutOf(TimerGlobals).size;
  const rowsAt = Math.ceil((statsAt + layoutOf(TimerLaneStats).size * o.partitions) / 128) * 128;
  const rowBytes = layoutOf(TimerRowHeader).size + layoutOf(TimerEntry).size * o.timers;
  return { statsAt, rowsAt, rowBytes, bytes: o.timers === 0 ? 0 : rowsAt + rowBytes * o.maxActors };
}

/** Bytes of the host block (0 for a class without timers). */
export const TIMER_HOST_BYTES = layoutOf(TimerHostBlock).size;

// ---- dirty marks and the gather's staging buffer (write-behind) -----------------------------------------

/**
 * Per-actor bookkeeping of a CUDA kernel for write-behind (core persist/): the dirty mark and the clock
 * of the actor's last turn, beside its key, one entry per state slot in an array after the states.
 * A turn that may store into the state sets `busy` before its handler and ends with one 16-byte store of
 * {lastActive, dirty = 1, busy = 0} (stores only: no read-modify-write, no host traffic). The gather
 * kernel (rg_<G>_gather_dirty) clears a mark with an exchange, copies the state, and keeps the row only
 * if no turn ran on the actor meanwhile (busy clear before and after, no new mark): a row is never a
 * state torn by a turn in flight, and an actor whose row was dropped keeps its mark for the next gather,
 * so the gather is ordered with the turns as core's readDirty requires.
 */
export const StateMeta = t.struct({
  /** ctx.now() of the actor's last turn (the slot header's time): idle collection compares it. */
  lastActive: t.f64,
  /** 1 when the state may have changed since the gather last read it out. */
  dirty: t.u32,
  /** 1 while a turn that may store into the state runs (set before its handler, cleared with the mark). */
  busy: t.u32,
  /** The actor's key (int64 halves; a string key's interned id), written at activation. */
  keyLo: t.u32,
  keyHi: t.u32,
  _pad: t.array(t.u32, 2),
});

/** Bytes of one StateMeta (the C asserts the same, and that the turn's 16-byte store covers lastActive..busy). */
export const STATE_META_BYTES = layoutOf(StateMeta).size;
/** The meta array starts this far aligned after the states (and the gather's parts in its staging buffer). */
export const STATE_REGION_ALIGN = 256;

if (
  STATE_META_BYTES !== 32 ||
  fieldOffset(StateMeta, 'lastActive') !== 0 ||
  fieldOffset(StateMeta, 'dirty') !== 8 ||
  fieldOffset(StateMeta, 'busy') !== 12
) {
  throw new Error(
    'core cuda-layouts: StateMeta must be 32 bytes with lastActive, dirty, busy in its first 16 (one ' +
      'vector store per turn)',
  );
}

const roundUp = (n: number, a: number) => Math.ceil(n / a) * a;

/** Entries of the free-slot ring: a power of two ≥ maxActors, so a ticket's index survives u32 wrap. */
export function freeRingCapacity(maxActors: number): number {
  let c = 1;
  while (c < maxActors) c *= 2;
  return c;
}

/**
 * The kernel's `states` region: maxActors states, then (STATE_REGION_ALIGN-aligned) maxActors StateMeta,
 * then the free-slot ring (freeRingCapacity u32 words: slot + 1, 0 = empty; device.ts rg_slot_free).
 */
export function stateRegion(
  stateSize: number,
  maxActors: number,
): { readonly metaAt: number; readonly freeAt: number; readonly bytes: number } {
  const metaAt = roundUp(stateSize * maxActors, STATE_REGION_ALIGN);
  const freeAt = metaAt + STATE_META_BYTES * maxActors;
  return { metaAt, freeAt, bytes: freeAt + 4 * freeRingCapacity(maxActors) };
}

/**
 * Head of the gather's staging buffer (device memory): how many rows the last gather wrote, and how
 * many of them it dropped afterwards (a turn overlapped the copy: flag 0, the actor stays dirty).
 */
export const GatherHeader = t.struct({ count: t.u32, dropped: t.u32, _pad: t.array(t.u32, 2) });

/**
 * The gather's staging buffer: GatherHeader, the keys (int64, one per row) at `keysAt`, the states
 * (packed, stateSize apart) at `statesAt`, a byte per row at `flagsAt` (1: kept, 0: dropped). Keys and
 * states are copied to the host as two runs of `count` rows each; the flags only when rows were dropped.
 */
export function gatherLayout(
  stateSize: number,
  maxActors: number,
): { readonly keysAt: number; readonly statesAt: number; readonly flagsAt: number; readonly bytes: number } {
  const keysAt = STATE_REGION_ALIGN;
  const statesAt = roundUp(keysAt + 8 * maxActors, STATE_REGION_ALIGN);
  const flagsAt = roundUp(statesAt + stateSize * maxActors, STATE_REGION_ALIGN);
  return { keysAt, statesAt, flagsAt, bytes: flagsAt + Math.max(1, maxActors) };
}
