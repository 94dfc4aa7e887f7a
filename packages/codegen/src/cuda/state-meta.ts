/*
 * The dirty-mark layouts (StateMeta, the states region, the gather's staging buffer) are core's (cuda-layouts.ts);
 * re-exported here beside the gather kernel's contract (its parameters, launch shape and entry name).
 */
export {
  StateMeta,
  STATE_META_BYTES,
  STATE_REGION_ALIGN,
  freeRingCapacity,
  stateRegion,
  GatherHeader,
  gatherLayout,
} from '@ringgrain/core/backend';

export interface GatherParam {
  readonly name: string;
  readonly ctype: string;
  readonly kind: 'ptr' | 'u32';
  readonly doc: string;
}

/**
 * The gather kernel's parameters in order (its C signature is generated from this list; the host builds its arguments
 * from it).
 */
export const GATHER_PARAMS: readonly GatherParam[] = [
  {
    name: 'states',
    ctype: 'unsigned char*',
    kind: 'ptr',
    doc: "the ring kernel's states region (states, then StateMeta per slot: stateRegion)",
  },
  {
    name: 'globals',
    ctype: 'const unsigned char*',
    kind: 'ptr',
    doc: "the ring kernel's DeviceGlobals (stateNext bounds the slots in use)",
  },
  { name: 'maxActors', ctype: 'unsigned int', kind: 'u32', doc: 'state slots' },
  {
    name: 'out',
    ctype: 'unsigned char*',
    kind: 'ptr',
    doc: 'device memory: the staging buffer (gatherLayout), its count zeroed before the launch',
  },
];

/** Threads per block of the gather kernel, and the most blocks it is launched with (it strides over the slots). */
export const GATHER_THREADS = 256;
export const GATHER_MAX_BLOCKS = 2048;

export function gatherLaunch(maxActors: number): { readonly blocks: number; readonly threadsPerBlock: number } {
  return {
    blocks: Math.max(1, Math.min(GATHER_MAX_BLOCKS, Math.ceil(maxActors / GATHER_THREADS))),
    threadsPerBlock: GATHER_THREADS,
  };
}

export const gatherEntry = (grain: string): string => `rg_${grain}_gather_dirty`;
