import type { DeviceMemoryStats, OverflowStats, TimerStats } from '../backend.ts';
import type { KernelCounters, TransitionEvent } from '../kernel.ts';
import type { StorageErrorEvent, StorageMetrics } from '../persist/write-behind.ts';
import type { ReminderMetrics } from '../reminders/service.ts';

export interface SystemEvents {
  transition: (e: TransitionEvent) => void;
  /** A tell (no asker to reject) failed in its handler or was refused by the kernel. */
  tellError: (e: { grain: string; method: string; error: Error; row?: number }) => void;
  fault: (e: { grain: string; error: Error }) => void;
  /**
   * A state store operation failed (write-behind, load on first activation, preload): a version
   * conflict (StateVersionConflictError: the actor stays dirty and is tried again), an unreachable or
   * full store, a row that does not decode (StateLoadError: the actor's waiting messages were rejected).
   */
  storageError: (e: StorageErrorEvent) => void;
  /**
   * A lane's consumer died and the backend restarted it (the CPU pool's threads): the asks that waited on
   * that lane failed with `error`; the kernel keeps serving.
   */
  laneRestart: (e: { grain: string; lane: number; error: Error; failedAsks: number }) => void;
}

/** One grain class's figures in `system.metrics()`. */
export type ClassMetrics = KernelCounters & {
  state: string;
  backend: string;
  overflow?: OverflowStats;
  storage?: StorageMetrics;
  /** Timer ticks the kernel ran (not messages: they are outside sent/processed), when the class has timers. */
  timers?: TimerStats;
  reminders?: ReminderMetrics;
  /** Device memory per GPU (and lane group), where the backend reports it (CUDA). */
  devices?: readonly DeviceMemoryStats[];
};
