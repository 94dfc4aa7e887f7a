export type * from './types.ts';
export * from './errors.ts';
export {
  MAX_STRING_KEY_BYTES,
  StateReadBuilder,
  checkDelete,
  checkKeys,
  checkPut,
  checkScanLimit,
  keyOrder,
  stateAt,
  stateBytes,
} from './batch.ts';
export { scanPages, stateTableSpec } from './scan.ts';
export { FENCE_TABLE, checkFence, fenceColumns } from './fence.ts';
export {
  CHUNK,
  ChunkWriter,
  chunkOf,
  copyBytes,
  epochAt,
  forEachChunk,
  mergeDelete,
  mergePut,
  parseChunk,
  rowOf,
  slotAt,
  spans,
  stateEnd,
  stateStart,
  versionAt,
  versionIn,
  type Chunk,
  type ChunkConflict,
  type ChunkRows,
  type RowCheck,
  type Spans,
} from './chunk.ts';
