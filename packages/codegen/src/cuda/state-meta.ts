import { layoutOf, offsetOf, t } from '@ringgrain/core';

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

if (STATE_META_BYTES !== 32 || offsetOf(StateMeta, 'lastActive') !== 0 || offsetOf(StateMeta, 'dirty') !== 8 || offsetOf(StateMeta, 'busy') !== 12) {
  throw new Error('codegen: StateMeta must be 32 bytes with lastActive, dirty, busy in its first 16 (one vector store per turn)');
}

const up = (n: number, a: number) => Math.ceil(n / a) * a;

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
export function stateRegion(stateSize: number, maxActors: number): { readonly metaAt: number; readonly freeAt: number; readonly bytes: number } {
  const metaAt = up(stateSize * maxActors, STATE_REGION_ALIGN);
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
export function gatherLayout(stateSize: number, maxActors: number): { readonly keysAt: number; readonly statesAt: number; readonly flagsAt: number; readonly bytes: number } {
  const keysAt = STATE_REGION_ALIGN;
  const statesAt = up(keysAt + 8 * maxActors, STATE_REGION_ALIGN);
  const flagsAt = up(statesAt + stateSize * maxActors, STATE_REGION_ALIGN);
  return { keysAt, statesAt, flagsAt, bytes: flagsAt + Math.max(1, maxActors) };
}

export interface GatherParam {
  readonly name: string;
  readonly ctype: string;
  readonly kind: 'ptr' | 'u32';
  readonly doc: string;
}

/** The gather kernel's parameters in order (its C signature is generated from this list; the host builds its arguments from it). */
export const GATHER_PARAMS: readonly GatherParam[] = [
  { name: 'states', ctype: 'unsigned char*', kind: 'ptr', doc: "the ring kernel's states region (states, then StateMeta per slot: stateRegion)" },
  { name: 'globals', ctype: 'const unsigned char*', kind: 'ptr', doc: "the ring kernel's DeviceGlobals (stateNext bounds the slots in use)" },
  { name: 'maxActors', ctype: 'unsigned int', kind: 'u32', doc: 'state slots' },
  { name: 'out', ctype: 'unsigned char*', kind: 'ptr', doc: 'device memory: the staging buffer (gatherLayout), its count zeroed before the launch' },
];

/** Threads per block of the gather kernel, and the most blocks it is launched with (it strides over the slots). */
export const GATHER_THREADS = 256;
export const GATHER_MAX_BLOCKS = 2048;

export function gatherLaunch(maxActors: number): { readonly blocks: number; readonly threadsPerBlock: number } {
  return { blocks: Math.max(1, Math.min(GATHER_MAX_BLOCKS, Math.ceil(maxActors / GATHER_THREADS))), threadsPerBlock: GATHER_THREADS };
}

export const gatherEntry = (grain: string): string => `rg_${grain}_gather_dirty`;
