import { t } from './schema/index.ts';
import { layoutOf } from './schema/layout.ts';
import type { StructSchema } from './schema/types.ts';
import { STATE_REGION_ALIGN, gatherLayout } from './cuda-layouts.ts';

/**
 * Actor residency on a CUDA kernel (codegen README "Persistent state on CUDA"): the host's requests
 * (deactivate idle actors, install stored states), the staging batch deactivated actors are copied to,
 * the install board, and the device → host load-request ring. Every structure here is the one definition
 * the C (static_asserts, codegen kernel.ts and residency.ts) and the host (cuda-backend residency.ts) share,
 * defined here in core beside protocol.ts and cuda-layouts.ts; this file imports nothing from protocol.ts.
 *
 * Flow of one request: the host writes the board (install) into device memory on its state stream,
 * then line 0 of the ResidencyHostBlock (pinned mapped host memory) and bumps `seq` last (release). The
 * control warp copies the request into ResidencyGlobals (device memory: the workers never poll PCIe)
 * and bumps its `seq`; each worker services it between batches for the actors it owns (partition) and
 * stores `seq` into its ack word; once every ack equals `seq` the control warp writes line 1 of the host
 * block (counts, then `doneSeq` with release at system scope). One request is in flight at a time.
 */

const LINE = 32;

/** Byte offset of a field (as protocol.ts offsetOf, which this file may not import: protocol.ts re-exports it). */
function fieldOffset(schema: StructSchema, field: string): number {
  const f = layoutOf(schema).fields?.find((x) => x.name === field);
  if (!f) throw new Error(`no field ${field}`);
  return f.offset;
}

/** ResidencyHostBlock.op / ResidencyGlobals.op. */
export const RES_OP = {
  NONE: 0,
  DEACTIVATE: 1,
  INSTALL: 2,
  /**
   * The kernel stopped (STOP acknowledged) keeps servicing residency requests, so core's final
   * deactivation runs on the device; this request (not answered) lets it exit.
   */
  EXIT: 3,
} as const;
/** ResidencyHostBlock.mode of an install (core StateUpload.mode). */
export const RES_MODE = { LOAD: 0, PRELOAD: 1 } as const;
/** One byte per install-board row. */
export const RES_ROW = {
  /** No stored state: the actor starts from a zeroed state. */
  ABSENT: 0,
  /** The row's state bytes are the stored state. */
  FOUND: 1,
  /** The load failed: the actor's parked messages are rejected with the board's error text; no entry stays. */
  FAILED: 2,
} as const;

/** The host's words of a kernel's residency (pinned mapped host memory, 128-byte lines, one writer per line). */
export const ResidencyHostBlock = t.struct({
  /** Line 0, host-written. Request number: bumped (release) after the words below. */
  seq: t.u32,
  op: t.u32,
  /** Install: rows on the board (≤ installCapacity). */
  rows: t.u32,
  /** Install: RES_MODE. */
  mode: t.u32,
  /** Deactivate: actors whose last turn's clock is before this (Infinity: all, and parked messages rejected). */
  before: t.f64,
  /** Deactivate: ctx.now() of onDeactivate. */
  now: t.f64,
  /** Install: bytes of the failure text on the board (RES_ROW.FAILED rows). */
  errorLength: t.u32,
  /** The load-request ring's consumer: entries the host has read (the kernel's producers wait on it when full). */
  loadTail: t.u32,
  /** The evict ring's consumer: rows the host has taken (a worker making room waits on it when the ring is full). */
  evictTail: t.u32,
  /** Install: StateLoadError.failureId of the FAILED rows (0: none), sent back with the text (turn-error.ts). */
  failureId: t.u32,
  _pad0: t.array(t.u32, LINE - 12),
  /** Line 1, kernel-written (the control warp). The last request every worker finished (written last, release). */
  doneSeq: t.u32,
  /** Rows the finished deactivation staged (also the staging header's count). */
  evicted: t.u32,
  /** Actors the finished install activated (preload skips held keys and a full table). */
  installed: t.u32,
  /** Parked messages the finished request rejected (failed loads; a deactivation with Infinity). */
  rejected: t.u32,
  _pad1: t.array(t.u32, LINE - 4),
});

/**
 * One device → host load request (pinned mapped host memory, after the host block): published by seq = index + 1 last.
 */
export const LoadRequest = t.struct({ seq: t.u32, keyLo: t.u32, keyHi: t.u32, _pad: t.u32 });

/** Entries of the load-request ring (a power of two): a producer whose index laps the host's tail waits. */
export const LOAD_RING_CAPACITY = 4096;

/**
 * One device → host evict-ring row's header (pinned mapped host memory, after the load-request ring): an
 * actor a worker deactivated to make room for a new key (a full table), its final state following the
 * header (evictRing: the row stride). Published by seq = index + 1 last, after the key, mark and state.
 */
export const EvictRow = t.struct({ seq: t.u32, keyLo: t.u32, keyHi: t.u32, dirty: t.u32 });

/** Bytes of the evict ring (pinned host memory per kernel with residency); its rows are a state apart. */
export const EVICT_RING_BYTES = 1024 * 1024;
/** Rows of the evict ring at most (a power of two). */
export const EVICT_RING_MAX_ROWS = 4096;

/**
 * The evict ring for a state size: its row stride (header + state, 16-aligned) and rows (a power of two, ≥ 1, within
 * EVICT_RING_BYTES).
 */
export function evictRing(stateSize: number): { readonly stride: number; readonly capacity: number } {
  const stride = Math.ceil((layoutOf(EvictRow).size + stateSize) / 16) * 16;
  let capacity = 1;
  while (capacity < EVICT_RING_MAX_ROWS && capacity * 2 * stride <= EVICT_RING_BYTES) capacity *= 2;
  return { stride, capacity };
}

/** Rows of the install board (a power of two): the host splits a larger upload into several installs. */
export const INSTALL_ROWS = 65536;

/** Bytes of the failure text an install carries (longer texts are cut at a UTF-8 boundary by the host). */
export const INSTALL_ERROR_BYTES = 1024;

/**
 * The kernel's residency words in device memory (zero-filled, then the host writes line 2 before launch). Line 0: the
 * request as the control warp copied it. Line 1: counters the workers
 * add to. Line 2: written once by the host.
 */
export const ResidencyGlobals = t.struct({
  seq: t.u32,
  op: t.u32,
  rows: t.u32,
  mode: t.u32,
  before: t.f64,
  now: t.f64,
  errorLength: t.u32,
  failureId: t.u32,
  _pad0: t.array(t.u32, LINE - 10),
  /** Load-request ring reservations (atomicAdd by workers), and the host tail as a worker last read it. */
  loadReserve: t.u32,
  loadTailSeen: t.u32,
  /** Per request: rows staged (atomicAdd; the staging header's count is this), actors installed, messages rejected. */
  installed: t.u32,
  rejected: t.u32,
  /** Messages parked now in per-actor FIFOs (received, not yet run), and parks refused (overflow pool full). */
  parked: t.u32,
  parkRefused: t.u32,
  /**
   * Making room (a full table, the class has idleMs): the room request's number (atomicAdd by a worker that
   * found no slot; every worker answers in its room word), and the clock of the newest such request (the
   * f64's bits raised with atomicMax: idle means a last turn before roomNow - idleMs).
   */
  roomEpoch: t.u32,
  /** Evict-ring reservations (atomicAdd by workers), and the host tail as a worker last read it. */
  evictReserve: t.u32,
  roomNow: t.f64,
  evictTailSeen: t.u32,
  /** Actors deactivated to make room (all time). */
  madeRoom: t.u32,
  /**
   * The farthest any entry of this kernel's residency inserts lies from its key's home (atomicMax by the inserting
   * worker, the one that looks the key up later): a lookup stops there, as the directory's tombstones never turn
   * EMPTY again (residency-load.cuh rg_res_placed).
   */
  probeMax: t.u32,
  _pad1: t.array(t.u32, LINE - 13),
  /** Device address of the host block (mapped pinned memory; the load-request ring follows it). */
  hostLo: t.u32,
  hostHi: t.u32,
  /** Device addresses of the parts (residencyLayout): the ack words, the staging batch, the install board. */
  acksLo: t.u32,
  acksHi: t.u32,
  stagingLo: t.u32,
  stagingHi: t.u32,
  boardLo: t.u32,
  boardHi: t.u32,
  /** Per actor slot, the parked-message FIFO's head and tail node refs (0: none): u32 pairs. */
  parksLo: t.u32,
  parksHi: t.u32,
  /** installLayout offsets inside the board (it is at most INSTALL_BOARD_MAX_BYTES), and its capacity in rows. */
  boardKindsAt: t.u32,
  boardStatesAt: t.u32,
  boardErrorAt: t.u32,
  installCapacity: t.u32,
  loadCapacity: t.u32,
  /** The evict ring (after the load-request ring in the host part): rows (a power of two) and their stride. */
  evictCapacity: t.u32,
  evictStride: t.u32,
  /** Device address of the room words: one per worker, the last room request it answered. */
  roomsLo: t.u32,
  roomsHi: t.u32,
  _pad2a: t.u32,
  /**
   * The class's idleMs (Infinity: none, a full table makes no room): a new key with no slot deactivates actors idle
   * longer.
   */
  idleMs: t.f64,
  _pad2: t.array(t.u32, LINE - 22),
});

const up = (n: number, a: number) => Math.ceil(n / a) * a;

/** The install board: keys (int64 halves), then a RES_ROW byte per row, then the states, then the failure text. */
export function installLayout(
  stateSize: number,
  rows: number,
): {
  readonly keysAt: number;
  readonly kindsAt: number;
  readonly statesAt: number;
  readonly errorAt: number;
  readonly bytes: number;
} {
  const keysAt = 0;
  const kindsAt = up(8 * rows, STATE_REGION_ALIGN);
  const statesAt = up(kindsAt + rows, STATE_REGION_ALIGN);
  const errorAt = up(statesAt + stateSize * rows, STATE_REGION_ALIGN);
  return { keysAt, kindsAt, statesAt, errorAt, bytes: errorAt + INSTALL_ERROR_BYTES };
}

export interface ResidencyOptions {
  readonly stateSize: number;
  readonly maxActors: number;
  readonly partitions: number;
  /** Install-board rows wanted (default INSTALL_ROWS; installRows bounds it). */
  readonly installRows?: number;
}

/** The install board's states stay below this (its offsets are u32 words; a larger upload is several installs). */
export const INSTALL_BOARD_MAX_BYTES = 256 * 1024 * 1024;

/**
 * Rows of the install board for a kernel: INSTALL_ROWS, fewer for a small table (a power of two ≥
 * maxActors) or a large state (the states part within INSTALL_BOARD_MAX_BYTES); at least 1.
 */
export function installRows(stateSize: number, maxActors: number, wanted = INSTALL_ROWS): number {
  let p = 1;
  while (p < Math.min(maxActors, wanted)) p *= 2;
  while (p > 1 && p * Math.max(1, stateSize) > INSTALL_BOARD_MAX_BYTES) p /= 2;
  return p;
}

/**
 * The device residency area: ResidencyGlobals, one ack word per worker (the last request it finished),
 * the parked-message FIFOs' head and tail per actor slot, the staging batch of deactivated actors (gatherLayout: keys,
 * states, a byte per row = the dirty mark),
 * then the install board (installLayout). All parts STATE_REGION_ALIGN-aligned.
 */
export function residencyLayout(o: ResidencyOptions): {
  readonly acksAt: number;
  readonly roomsAt: number;
  readonly parksAt: number;
  readonly stagingAt: number;
  readonly staging: ReturnType<typeof gatherLayout>;
  readonly boardAt: number;
  readonly board: ReturnType<typeof installLayout>;
  readonly installCapacity: number;
  readonly bytes: number;
} {
  const acksAt = up(layoutOf(ResidencyGlobals).size, STATE_REGION_ALIGN);
  const roomsAt = up(acksAt + 4 * o.partitions, STATE_REGION_ALIGN);
  const parksAt = up(roomsAt + 4 * o.partitions, STATE_REGION_ALIGN);
  const stagingAt = up(parksAt + 8 * o.maxActors, STATE_REGION_ALIGN);
  const staging = gatherLayout(o.stateSize, o.maxActors);
  const boardAt = up(stagingAt + staging.bytes, STATE_REGION_ALIGN);
  const installCapacity = installRows(o.stateSize, o.maxActors, o.installRows);
  const board = installLayout(o.stateSize, installCapacity);
  return {
    acksAt,
    roomsAt,
    parksAt,
    stagingAt,
    staging,
    boardAt,
    board,
    installCapacity,
    bytes: boardAt + board.bytes,
  };
}

/**
 * Bytes of the pinned host part: the host block, then LOAD_RING_CAPACITY load requests, then the evict ring
 * (EVICT_RING_BYTES).
 */
export function residencyHostBytes(): { readonly ringAt: number; readonly evictAt: number; readonly bytes: number } {
  const ringAt = layoutOf(ResidencyHostBlock).size;
  const evictAt = ringAt + layoutOf(LoadRequest).size * LOAD_RING_CAPACITY;
  return { ringAt, evictAt, bytes: evictAt + EVICT_RING_BYTES };
}

if (
  layoutOf(ResidencyHostBlock).size !== 256 ||
  fieldOffset(ResidencyHostBlock, 'doneSeq') !== 128 ||
  fieldOffset(ResidencyHostBlock, 'before') % 8 !== 0 ||
  layoutOf(ResidencyGlobals).size !== 384 ||
  layoutOf(LoadRequest).size !== 16 ||
  layoutOf(EvictRow).size !== 16 ||
  fieldOffset(ResidencyGlobals, 'roomNow') % 8 !== 0 ||
  fieldOffset(ResidencyGlobals, 'idleMs') % 8 !== 0 ||
  (LOAD_RING_CAPACITY & (LOAD_RING_CAPACITY - 1)) !== 0
) {
  throw new Error(
    'core cuda-residency-layouts: residency layouts must keep one writer per 128-byte line and 16-byte load requests',
  );
}
