import {
  COUNTERS,
  HOST_SENDER,
  KernelState,
  RING_HEADER_SIZE,
  SLOT,
  SLOT_HEADER_SIZE,
  SlotFlag,
  TURN_ERROR,
  layoutOf,
  offsetOf,
} from '@ringgrain/core/backend';
import { MAX_REDUCTIONS } from '../front/parallel.ts';
import {
  BULK_BOARDS,
  BULK_JOB_BYTES,
  CONTROL_STRIDE,
  COOP_ENV_BYTES,
  DIR_STATE,
  DirEntry,
  KERNEL_PARAMS,
  OVERFLOW_NODE_HEADER,
  OverflowHeader,
  THREADS_PER_BLOCK,
  TURN_ERRORS,
} from './abi.ts';
import { GATHER_PARAMS, GATHER_THREADS, STATE_META_BYTES, STATE_REGION_ALIGN, gatherLayout } from './state-meta.ts';

/*
 * The generated C around the CUDA runtime files (runtime/*.cuh): the constants the runtime shares with
 * TypeScript, each generated from its one definition (core protocol.ts, abi.ts, state-meta.ts) and checked
 * by static_asserts in the runtime files, and the unit's own settings of the persistent loop.
 */

/** A multi-line macro (one line per item; empty where there are none). */
const macro = (name: string, lines: readonly string[]): string =>
  lines.length ? `#define ${name} \\\n${lines.join(' \\\n')}` : `#define ${name}`;

/** Grain-independent constants: every unit has them first (before runtime/prelude.cuh). */
export function constantsSection(): string {
  const counters = COUNTERS.map((c, i) => `#define RG_C_${c.replace(/[A-Z]/g, (m) => `_${m}`).toUpperCase()} ${i}`);
  const backoff = Object.entries(BACKOFF).map(([k, v]) => `#ifndef ${k}\n#define ${k} ${v}u\n#endif`);
  return [
    '/* ---- constants (generated: core protocol.ts, codegen abi.ts and state-meta.ts) ------------------------ */',
    '/* Ring protocol (core protocol.ts). */',
    `#define RG_HDR ${SLOT_HEADER_SIZE}u`,
    `#define RG_RING_HDR ${RING_HEADER_SIZE}u`,
    `#define RG_ASK ${SlotFlag.ASK}u`,
    `#define RG_REPLY ${SlotFlag.REPLY}u`,
    `#define RG_ERROR ${SlotFlag.ERROR}u`,
    `#define RG_REJECTED ${SlotFlag.REJECTED}u`,
    `#define RG_STRING_KEY ${SlotFlag.STRING_KEY}u`,
    `#define RG_SKIP ${SlotFlag.SKIP}u`,
    `#define RG_HOST_SENDER ${HOST_SENDER}u`,
    `#define RG_KS_IDLE ${KernelState.IDLE}u`,
    `#define RG_KS_ACTIVE ${KernelState.ACTIVE}u`,
    `#define RG_KS_PAUSED ${KernelState.PAUSED}u`,
    `#define RG_KS_STOP ${KernelState.STOP}u`,
    `#define RG_KS_STOPPED ${KernelState.STOPPED}u`,
    '/* Dispatch modes in DeviceGlobals.mode: the KernelState values, plus draining and exit. */',
    '#define RG_MODE_DRAIN 100u',
    '#define RG_MODE_EXIT 101u',
    ...counters,
    `#define RG_NCOUNTERS ${COUNTERS.length}u`,
    '/* Slot header word offsets (core protocol.ts): the ingress warp reads headers out of registers. */',
    `#define RG_AT_SEQ ${SLOT.seq}u`,
    `#define RG_AT_LENGTH ${SLOT.length}u`,
    `#define RG_AT_METHOD ${SLOT.method}u`,
    `#define RG_AT_FLAGS ${SLOT.flags}u`,
    `#define RG_AT_CORR ${SLOT.corr}u`,
    `#define RG_AT_KEYLO ${SLOT.keyLo}u`,
    `#define RG_AT_KEYHI ${SLOT.keyHi}u`,
    '/* Error replies as a code and fields (core turn-error.ts TURN_ERROR): the host builds the typed error. */',
    ...Object.entries(TURN_ERROR).map(([name, code]) => `#define RG_TE_${name} ${code}u`),
    '/* Turn errors (abi.ts TURN_ERRORS); RG_E_THROW: the text is in rg_turn.msg. */',
    ...Object.entries(TURN_ERRORS).map(([name, code]) => `#define RG_E_${name} ${code}`),
    '/* Profiling stamps (STAMPS below); runtime/ring.cuh makes RG_STAMP a no-op unless the including file ' +
      'defines it. */',
    ...STAMPS.map((s, i) => `#define RG_S_${s} ${i}`),
    `#define RG_NSTAMPS ${STAMPS.length}`,
    "/* The kernel (abi.ts): threads a block, bytes between two host lanes' control blocks, " +
      "the register cap's default. */",
    `#define RG_THREADS_PER_BLOCK ${THREADS_PER_BLOCK}`,
    `#define RG_WARPS_PER_BLOCK ${THREADS_PER_BLOCK / 32}u`,
    `#define RG_CONTROL_STRIDE ${CONTROL_STRIDE}ull`,
    `#define RG_DEFAULT_MIN_BLOCKS_PER_SM ${MIN_BLOCKS_PER_SM}`,
    "/* The kernel's parameters (abi.ts KERNEL_PARAMS, the one list the host launches with). */",
    macro(
      'RG_KERNEL_PARAMS',
      KERNEL_PARAMS.map((p, i) => `    ${p.ctype} ${p.name}${i + 1 < KERNEL_PARAMS.length ? ',' : ''}`),
    ),
    '/* K2K overflow pool (abi.ts OverflowHeader, OVERFLOW_NODE_HEADER). */',
    `#define RG_OV_HDR ${layoutOf(OverflowHeader).size}u`,
    `#define RG_OV_NODE_HDR ${OVERFLOW_NODE_HEADER}u`,
    '/* Warp cooperation: captured-values bytes and reductions of an element-parallel loop (parallel.ts); ' +
      'bulk job boards (abi.ts). */',
    `#define RG_COOP_ENV_BYTES ${COOP_ENV_BYTES}u`,
    `#define RG_MAX_REDUCTIONS ${MAX_REDUCTIONS}`,
    `#define RG_BULK_BOARDS ${BULK_BOARDS}u`,
    `#define RG_BULK_JOB_BYTES ${BULK_JOB_BYTES}u`,
    '/* DirEntry.state (abi.ts DIR_STATE). */',
    `#define RG_DIR_EMPTY ${DIR_STATE.EMPTY}u`,
    `#define RG_DIR_WRITING ${DIR_STATE.WRITING}u`,
    `#define RG_DIR_READY ${DIR_STATE.READY}u`,
    `#define RG_DIR_DEAD ${DIR_STATE.DEAD}u`,
    `#define RG_DIR_OWNER_SHIFT ${DIR_STATE.OWNER_SHIFT}u`,
    `#define RG_AT_DIR_STATE ${offsetOf(DirEntry, 'state')}u`,
    '/* Actor meta and the dirty gather (state-meta.ts). */',
    `#define RG_STATE_META_BYTES ${STATE_META_BYTES}u`,
    `#define RG_STATE_REGION_ALIGN ${STATE_REGION_ALIGN}ull`,
    `#define RG_GATHER_KEYS_AT ${gatherLayout(0, 0).keysAt}ull`,
    `#define RG_GATHER_THREADS ${GATHER_THREADS}`,
    macro(
      'RG_GATHER_PARAMS',
      GATHER_PARAMS.map((p, i) => `    ${p.ctype} ${p.name}${i + 1 < GATHER_PARAMS.length ? ',' : ''}`),
    ),
    '/* Idle back-off of the persistent loop (BACKOFF below): NVRTC defines may override each. */',
    ...backoff,
  ].join('\n');
}

/** The grain class of the unit: its name (RG_G(name) is rg_<grain>_<name>), id, methods and key kind. */
export function grainSection(grain: string, selfId: number, methodCount: number, stringKeys: boolean): string {
  return [
    `#define RG_GRAIN ${grain}`,
    `#define RG_SELF_ID ${selfId}u`,
    `#define RG_METHOD_COUNT ${methodCount}u`,
    `#define RG_STRING_KEYS ${stringKeys ? 1 : 0}`,
  ].join('\n');
}

/**
 * The unit's own settings of the persistent loop (before runtime/host-coop.cuh): one worker's scratch
 * (abi.ts scratchLayout: the decoded request at 0, the reply at RG_SCRATCH_REPLY_AT, and how many turns a
 * warp runs at once), and its element-parallel loops by id for rg_coop_run, rg_coop_chunk and rg_coop_bulk_ok.
 */
export function loopSection(
  scratch: { bytes: number; replyAt: number; lanes: number },
  loops: readonly ParallelLoopFn[] = [],
): string {
  const bulk = loops.filter((l) => l.bulk);
  return [
    '/* ---- the unit\'s scratch and element-parallel loops (device.ts loopSection) --------------------------- */',
    `#define RG_SCRATCH_BYTES ${scratch.bytes}ull`,
    `#define RG_SCRATCH_REPLY_AT ${scratch.replyAt}ull`,
    `#define RG_SCRATCH_LANES ${scratch.lanes}u`,
    `#define RG_BULK_TURNS_DEFAULT ${scratch.lanes === 1 ? 1 : 0}`,
    macro('RG_LOOP_CASES', loops.map((l) => `    case ${l.id}u: ${l.runner}(co, lane); break;`)),
    macro('RG_CHUNK_CASES', bulk.map((l) => `    case ${l.id}u: ${l.chunk}(co, lane, from, to); break;`)),
    macro('RG_BULK_OK_CASES', bulk.map((l) => `    case ${l.id}u: return true;`)),
  ].join('\n');
}

/**
 * Points on the message path where a profiling build takes a timestamp (`RG_STAMP(id)`; a no-op
 * unless the unit is compiled with a definition, as test/gpu/ask-probe.cu does). Ids in path order.
 */
export const STAMPS = [
  'IN_SEEN', // ingress: the host slot's seq is visible
  'IN_LOADED', // ingress: the slot's first 512 bytes are in registers
  'IN_CLAIMED', // ingress: a partition-queue slot is reserved
  'IN_PUBLISHED', // ingress: the queue slot's seq is released
  'W_SEEN', // worker: the queue slot's seq is visible
  'W_DECODED', // worker: request validated and decoded
  'W_ACTIVATED', // worker: the actor's state found (or created)
  'W_HANDLED', // worker: the handler returned
  'W_ENCODED', // worker: reply encoded into the staging slot
  'W_REPLY_CLAIMED', // worker: a reply-ring slot is reserved
  'W_REPLIED', // worker: the reply's seq is released to the host
  'W_DONE', // worker: counters stored and the queue tail released
  'K2K_SEND', // K2K: a send starts (route found)
  'K2K_CLAIMED', // K2K: a target-queue slot is reserved
  'K2K_FILLED', // K2K: payload and header written
  'K2K_PUBLISHED', // K2K: the target slot's seq is released
] as const;

/**
 * Blocks of a ring kernel that must fit on one SM at once (the register cap __launch_bounds__ gives the
 * compiler): 3 keep 1024 partitions (257 blocks) co-resident beside the SMs the backend leaves free;
 * measured on the H100, lane-parallel turns took the kernel from 130 to 162+ registers and 2 blocks/SM
 * without a cap, and the K2K benchmark's launch failed with CoResidencyError.
 */
export const MIN_BLOCKS_PER_SM = 3;

/**
 * Idle back-off of the persistent loop (spin, then sleep between polls). Overridable per unit with `-D` (or a
 * `#define` before the unit): polls before a loop starts sleeping, and the sleep then.
 */
export const BACKOFF = {
  /** Inbound polls (each a PCIe round trip, ≈1 µs) before the ingress warp sleeps between polls. */
  RG_INGRESS_SPIN: 4096,
  RG_INGRESS_IDLE_NS: 2000,
  /** Device-queue polls (L2) before a worker sleeps between polls. */
  RG_WORKER_SPIN: 4096,
  RG_WORKER_IDLE_NS: 1000,
  /** Ingress iterations between counter/heartbeat publications while messages flow. */
  RG_PUBLISH_EVERY: 1024,
  /**
   * Ingress iterations between reads of the control block. Each read is a PCIe round trip in series
   * with the inbound poll, so reading it on every idle poll made the poll period three round trips.
   */
  RG_CTRL_EVERY: 64,
} as const;

/** An element-parallel loop's C names (codegen parallel.ts): its body function and its captured-values struct. */
export interface ParallelLoopFn {
  readonly id: number;
  readonly body: string;
  readonly env: string;
  /** Its lane runner: one lane's iterations, then the warp's agreement on errors and reductions. */
  readonly runner: string;
  /**
   * Its range runner (iterations [from, to) on one warp), defined where `bulk`: iterations that cannot fail and reduce
   * nothing.
   */
  readonly chunk: string;
  readonly bulk: boolean;
}

