export { generateKernel, type GenerateOptions, type GeneratedKernel } from './cuda/kernel.ts';
export { RUNTIME_DIR, RUNTIME_FILES, runtimeFile, inlineRuntime, type RuntimeFile } from './cuda/runtime.ts';
export { CodegenError, type CodegenErrorCode, type SourceSite } from './front/errors.ts';
export { AST_VERSION, type Expr, type Stmt, type FunctionAst, type Loc } from './front/ast.ts';
export {
  KERNEL_PARAMS, CONTROL_STRIDE, MAX_HOST_LANES, RouteEntry, DeviceGlobals, BulkBoard, BULK_BOARDS, BULK_JOB_BYTES, DirEntry, OverflowHeader, OverflowNode, OVERFLOW_NODE_HEADER, overflowLayout, DIR_STATE, isReadyDirState, COUNTER_ROW_BYTES, THREADS_PER_BLOCK, TURN_ERRORS, makeAbi,
  TimerEntry, TimerRowHeader, TimerGlobals, TimerLaneStats, TimerHostBlock, TICK_FLAG, TICK_TIMER_SHIFT, timerLayout, TIMER_HOST_BYTES,
  ColumnImageHeader, ColumnDesc,
  type Abi, type AbiOptions, type KernelParam, type ParamKind,
} from './cuda/abi.ts';
export { CTypes, C_SCALAR } from './cuda/ctypes.ts';
export { loadModule, parseHandler } from './front/source.ts';
export { StateMeta, STATE_META_BYTES, STATE_REGION_ALIGN, GatherHeader, GATHER_PARAMS, gatherLaunch, gatherLayout, gatherEntry, stateRegion, freeRingCapacity, type GatherParam } from './cuda/state-meta.ts';
export {
  RES_OP, RES_MODE, RES_ROW, ResidencyHostBlock, ResidencyGlobals, LoadRequest, LOAD_RING_CAPACITY, EvictRow, EVICT_RING_BYTES, EVICT_RING_MAX_ROWS, evictRing, INSTALL_ROWS, INSTALL_ERROR_BYTES, INSTALL_BOARD_MAX_BYTES,
  installLayout, installRows, residencyLayout, residencyHostBytes, type ResidencyOptions,
} from './cuda/residency.ts';
