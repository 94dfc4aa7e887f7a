import {
  DIR_STATE,
  EvictRow,
  INSTALL_ERROR_BYTES,
  RES_MODE,
  RES_OP,
  RES_ROW,
  ResidencyGlobals,
  ResidencyHostBlock,
  layoutOf,
} from '@ringgrain/core/backend';

/*
 * The residency layouts (requests, the install board, the load-request and evict rings, ResidencyGlobals) are
 * core's (cuda-residency-layouts.ts); re-exported here beside the C constants the unit gets from them.
 */
export {
  RES_OP,
  RES_MODE,
  RES_ROW,
  ResidencyHostBlock,
  LoadRequest,
  LOAD_RING_CAPACITY,
  EvictRow,
  EVICT_RING_BYTES,
  EVICT_RING_MAX_ROWS,
  evictRing,
  INSTALL_ROWS,
  INSTALL_ERROR_BYTES,
  ResidencyGlobals,
  installLayout,
  INSTALL_BOARD_MAX_BYTES,
  installRows,
  residencyLayout,
  residencyHostBytes,
  type ResidencyOptions,
} from '@ringgrain/core/backend';

/** The C constants of residency.cuh, from the values above (emitted into the unit after the protocol structs). */
export function residencyConstants(): string {
  const defs = [
    ...Object.entries(RES_OP).map(([k, v]) => `#define RG_RES_OP_${k} ${v}u`),
    ...Object.entries(RES_MODE).map(([k, v]) => `#define RG_RES_MODE_${k} ${v}u`),
    ...Object.entries(RES_ROW).map(([k, v]) => `#define RG_RES_ROW_${k} ${v}u`),
    `#define RG_RES_INSTALL_ERROR_BYTES ${INSTALL_ERROR_BYTES}u`,
    `#define RG_DIR_LOADING ${DIR_STATE.LOADING >>> 0}u`,
    '/* DeviceGlobals.mode after STOP was acknowledged in a kernel with residency: workers only service requests. */',
    '#define RG_MODE_RESIDENT 102u',
    '/* RG_<G>_res_wait: the message was parked (no text: a turn compares the pointer). */',
    '#define RG_RES_PARKED ((const char*)1)',
    '/* RG_<G>_res_wait: no slot for the actor (the turn replies RG_TE_STATE_TABLE_FULL). */',
    '#define RG_RES_FULL ((const char*)2)',
    '#ifndef RG_RES_WAIT',
    '#define RG_RES_WAIT() __nanosleep(1000)',
    '#endif',
    '#ifndef RG_RES_ROOM_WAIT',
    '#define RG_RES_ROOM_WAIT(k, ctr, part, co, alone) __nanosleep(1000)',
    '#endif',
    `static_assert(sizeof(rg_ResidencyHostBlock) == ${layoutOf(ResidencyHostBlock).size}u && ` +
      `sizeof(rg_ResidencyGlobals) == ${layoutOf(ResidencyGlobals).size}u && sizeof(rg_EvictRow) == ` +
      `${layoutOf(EvictRow).size}u, "residency structs: their sizes in residency.ts");`,
  ];
  return `/* ---- actor residency constants (residency.ts) ---- */\n${defs.join('\n')}`;
}
