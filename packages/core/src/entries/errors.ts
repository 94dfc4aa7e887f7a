/**
 * @ringgrain/core/errors: every error class core defines, each with a `code`, a `hint` and, where there is
 * one, a `cause` — what an application catches or tells apart with `instanceof`. The root entry also
 * holds the ones a send or an ask fails with; backends, stores and cluster engines export their own
 * (`CpuBackendOptionsError` from `@ringgrain/cpu-backend`, ...).
 */
export {
  type ErrorOptions,
  RinggrainError,
  // Schemas, payloads, keys and refs
  SchemaDefinitionError,
  SchemaValidationError,
  PayloadTooLargeError,
  DecodeError,
  InvalidKeyError,
  ReplyTargetError,
  UnknownGrainError,
  UnknownMethodError,
  // Turns and asks
  HandlerError,
  AskTimeoutError,
  AskManyError,
  StateTableFullError,
  // Kernels, queues and the system
  KernelFaultError,
  KernelTerminatedError,
  KernelNotRunningError,
  InvalidTransitionError,
  IdleTimeoutError,
  QueueFullError,
  QueueLimitError,
  RingError,
  SystemOptionsError,
  BackendUnavailableError,
  PlacementError,
} from '../errors.ts';
export * from '../store/errors.ts';
export {
  ReminderNotOwnedError,
  ReminderStorageError,
  TimerArgumentError,
  TimerSpecError,
  TimersUnsupportedError,
  type TimerProblem,
} from '../timers/errors.ts';
export * from '../cluster/errors.ts';
export { GrainModuleError } from '../grain-import.ts';
export { ColumnImageError } from '../column-image.ts';
