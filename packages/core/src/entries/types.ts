/**
 * @ringgrain/core/types: the types an application may name beyond the root entry's (types only; nothing
 * here exists at run time): options and metrics in detail, the kernel handle `system.kernel(G)` returns,
 * grain and schema types for generic code, bulk columns, and the `Backend` and `StateStore` an option takes.
 */
export type { Placement, SystemReminders } from '../system.ts';
export type { Backend, KernelOptions } from '../backend.ts';
export type { StateStore } from '../store/types.ts';
export type { StorageOptions } from '../persist/options.ts';
export type { FlushResult, StorageMetrics } from '../persist/write-behind.ts';
export type { ReminderInfo, ReminderMetrics } from '../reminders/service.ts';
export type { TimerStart } from '../timers/spec.ts';
export type { KernelCounters, RingKernel, TerminateOptions } from '../kernel.ts';
export type { LifecycleState } from '../lifecycle.ts';
export type { AnyGrainClass, Forwarded, GrainDef, GrainSpec } from '../grain.ts';
export type { Input, Schema, StructSchema } from '../schema/types.ts';
export type { StateView } from '../schema/view.ts';
export type { ReplyArrays } from '../ref.ts';
export type { Columns, NumberColumn, ReplyColumns } from '../bulk.ts';
