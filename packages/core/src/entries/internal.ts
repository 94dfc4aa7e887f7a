/**
 * Everything core defines, for tests, benchmarks and probes that reach below the public entries. Nothing
 * here is a stable API: applications use `@ringgrain/core`, backends `/backend`, stores `/store`, cluster
 * engines `/cluster` (docs/api.md).
 */
export * from '../errors.ts';
export * from '../schema/index.ts';
export * from '../grain.ts';
export * from '../protocol.ts';
export * from '../ring.ts';
export type * from '../backend.ts';
export * from '../slot.ts';
export {
  TURN_ERROR,
  decodeTurnError,
  encodeTurnError,
  type TurnErrorData,
  type TurnErrorValue,
} from '../turn-error.ts';
export * from '../lifecycle.ts';
export * from '../kernel.ts';
export * from '../system.ts';
export type { AskOptions, GrainRef, ReplyArrays } from '../ref.ts';
export { waitUntil } from '../wait.ts';
export { Deque } from '../deque.ts';
export { SIGNAL_EXIT_CODE } from '../signals.ts';
export { GrainModuleError, inGrainImport, loadGrainClasses } from '../grain-import.ts';
export type { Columns, NumberColumn, ReplyColumns } from '../bulk.ts';
export { formatLogLine } from '../log.ts';
export { scaledDefault, timeoutScale } from '../timeouts.ts';
export { laneOfKey } from '../lanes.ts';
export * from '../store/index.ts';
export {
  LANE_GUARD,
  WriteBehind,
  type FlushResult,
  type StorageErrorEvent,
  type StorageMetrics,
  type StorageOp,
} from '../persist/write-behind.ts';
export { DEFAULT_FLUSH_INTERVAL_MS, type StorageOptions } from '../persist/options.ts';
export * from '../timers/errors.ts';
export {
  nextDue,
  startArgs,
  byName,
  validDue,
  validPeriod,
  type ReminderDef,
  type ReminderSpec,
  type TimerDef,
  type TimerSpec,
  type TimerStart,
} from '../timers/spec.ts';
export type { ReminderInfo, ReminderMetrics } from '../reminders/service.ts';
export { fixedReader, type FixedRead } from '../image-decode.ts';
export { fixedWriter, type FixedWrite } from '../tell-image.ts';
export * from '../column-image.ts';
export { rowTemplate, compileRowWriter, type Template as RowTemplate, type RowWrite } from '../row-writer.ts';
export * from '../cluster/index.ts';
