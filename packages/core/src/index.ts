/**
 * @ringgrain/core for applications: the system, grain classes and schemas, typed refs, and the errors a
 * caller catches. Backends, stores and cluster engines have their own entries (`@ringgrain/core/backend`,
 * `/store`, `/cluster`); docs/api.md lists them.
 */
export { GrainSystem } from './system.ts';
export type { ClassMetrics, Placement, RegisterOptions, SystemEvents, SystemOptions, SystemReminders } from './system.ts';
export { Grain, defineGrain } from './grain.ts';
export type { AnyGrainClass, Forwarded, GrainContext, GrainDef, GrainSpec, TypesOf } from './grain.ts';
export { t } from './schema/index.ts';
export type { Infer, Input, Schema, StructSchema } from './schema/types.ts';
export type { StateView } from './schema/view.ts';
export type { AskOptions, GrainRef, ReplyArrays } from './ref.ts';
export type { Columns, NumberColumn, ReplyColumns } from './bulk.ts';
export type { KernelCounters, RingKernel, TerminateOptions, TransitionEvent } from './kernel.ts';
export type { LifecycleState } from './lifecycle.ts';
export type { Backend, KernelOptions } from './backend.ts';
export type { StateStore } from './store/types.ts';
export type { StorageOptions } from './persist/options.ts';
export type { FlushResult, StorageErrorEvent, StorageMetrics } from './persist/write-behind.ts';
export type { ReminderInfo, ReminderMetrics } from './reminders/service.ts';
export type { TimerStart } from './timers/spec.ts';
/** Sizing a slot (`slotSize`): a payload's msgpack bytes plus the slot header. */
export { SLOT_HEADER_SIZE } from './protocol.ts';
export { encodedSize } from './schema/msgpack-encode.ts';
export {
  AskManyError,
  type ErrorOptions,
  AskTimeoutError,
  BackendUnavailableError,
  DecodeError,
  HandlerError,
  IdleTimeoutError,
  InvalidKeyError,
  InvalidTransitionError,
  KernelFaultError,
  KernelNotRunningError,
  KernelTerminatedError,
  PayloadTooLargeError,
  PlacementError,
  QueueFullError,
  QueueLimitError,
  ReplyTargetError,
  RinggrainError,
  SchemaDefinitionError,
  SchemaValidationError,
  StateTableFullError,
  SystemOptionsError,
  UnknownGrainError,
  UnknownMethodError,
} from './errors.ts';
export { StateLoadError, StateStoreError, StateVersionConflictError, StorageUnsupportedError } from './store/errors.ts';
export { ReminderStorageError, TimerArgumentError, TimerSpecError, TimersUnsupportedError } from './timers/errors.ts';
export { ClusterK2KUnsupportedError, NoSiloError, RemoteGrainError, SiloUnavailableError } from './cluster/errors.ts';
