/**
 * @ringgrain/core/backend: what a backend or a code generator builds on. The backend contract
 * (backend.ts), the shared memory layouts and their readers and writers (protocol.ts, rings, slots, turn
 * errors, column images), schemas below `t` (layouts, kinds, msgpack codecs, state views), grain
 * definitions as a backend sees them (GrainDef, hooks, timers, loading grain modules in a worker), and the
 * core errors a backend throws. A backend that keeps state also uses `@ringgrain/core/store`.
 */
export type * from '../backend.ts';
export * from '../errors.ts';
export * from '../schema/index.ts';
export * from '../grain.ts';
export * from '../protocol.ts';
export * from '../ring.ts';
export * from '../slot.ts';
export {
  TURN_ERROR,
  decodeTurnError,
  encodeTurnError,
  type TurnErrorData,
  type TurnErrorValue,
} from '../turn-error.ts';
export * from '../column-image.ts';
export { fixedReader, type FixedRead } from '../image-decode.ts';
export { rowTemplate, compileRowWriter, type Template as RowTemplate, type RowWrite } from '../row-writer.ts';
export { laneOfKey } from '../lanes.ts';
export { fixedWriter, type FixedWrite } from '../tell-image.ts';
export type {
  KernelCounters,
  KernelHost,
  KernelLane,
  TerminateOptions,
  TransitionEvent,
  RingKernel,
} from '../kernel.ts';
export { DEFAULT_KERNEL_OPTIONS } from '../system/options.ts';
export { GrainModuleError, inGrainImport, loadGrainClasses } from '../grain-import.ts';
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
export { LANE_GUARD } from '../persist/write-behind.ts';
export { Deque } from '../deque.ts';
export { scaledDefault, timeoutScale } from '../timeouts.ts';
export { SIGNAL_EXIT_CODE } from '../signals.ts';
