export { generateKernel, type GenerateOptions, type GeneratedKernel } from './kernel.ts';
export { CodegenError, type CodegenErrorCode, type SourceSite } from './errors.ts';
export { AST_VERSION, type Expr, type Stmt, type FunctionAst, type Loc } from './ast.ts';
export {
  KERNEL_PARAMS, CONTROL_STRIDE, MAX_HOST_LANES, RouteEntry, DeviceGlobals, DirEntry, OverflowHeader, OVERFLOW_NODE_HEADER, overflowLayout, DIR_STATE, isReadyDirState, COUNTER_ROW_BYTES, THREADS_PER_BLOCK, TURN_ERRORS, makeAbi,
  type Abi, type AbiOptions, type KernelParam, type ParamKind,
} from './abi.ts';
export { CTypes, C_SCALAR } from './ctypes.ts';
export { loadModule, parseHandler } from './source.ts';
