/**
 * @ringgrain/core for applications: what a program that defines grains and runs a system writes. 26 names,
 * pinned by packages/core/test/entries.test.ts: a new one is a decision (docs/api.md). The other error
 * classes a caller may catch are in `@ringgrain/core/errors`, the other types an application may name in
 * `@ringgrain/core/types`; backends, stores and cluster engines have `/backend`, `/store`, `/cluster`.
 */
export { GrainSystem } from './system.ts';
export type { ClassMetrics, RegisterOptions, SystemEvents, SystemOptions } from './system.ts';
export type { TransitionEvent } from './kernel.ts';
export type { StorageErrorEvent } from './persist/write-behind.ts';
export { Grain, defineGrain } from './grain.ts';
export type { GrainContext, TypesOf } from './grain.ts';
export { t } from './schema/index.ts';
export type { Infer } from './schema/types.ts';
export type { AskOptions, GrainRef } from './ref.ts';
/** Sizing a slot (`slotSize`): a payload's msgpack bytes plus the slot header. */
export { SLOT_HEADER_SIZE } from './protocol.ts';
export { encodedSize } from './schema/msgpack-encode.ts';
/** The errors a send or an ask fails with; every other one is in `@ringgrain/core/errors`. */
export {
  AskManyError,
  AskTimeoutError,
  HandlerError,
  InvalidKeyError,
  KernelTerminatedError,
  PayloadTooLargeError,
  QueueFullError,
  RinggrainError,
  SchemaValidationError,
} from './errors.ts';
