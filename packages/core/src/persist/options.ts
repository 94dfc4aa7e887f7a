import { PlacementError } from '../errors.ts';
import type { StateStore } from '../store/types.ts';

/** The persistence part of `register(Grain, opts)`. */
export interface StorageOptions {
  /**
   * Where the class's actor states are kept (write-behind): the system opens the class's table (the state
   * layout's size per row), loads an actor's stored state before its first turn in this process, and
   * writes changed states in bulk every `flushIntervalMs`, at deactivation and at terminate/shutdown.
   * The application owns the store: the system never closes it.
   */
  storage?: StateStore | undefined;
  /**
   * How often dirty actors are written (ms, default 1000). A crash loses the updates since the last completed flush.
   */
  flushIntervalMs?: number | undefined;
  /**
   * Actors whose last turn is older than this (by the system's clock, ms) are deactivated: onDeactivate
   * runs, a changed state is written, the slot is freed. Also when the state table is full and a new
   * actor arrives. Without storage, a deactivated actor's state is dropped.
   */
  idleMs?: number | undefined;
}

export interface ResolvedStorageOptions {
  readonly storage?: StateStore;
  readonly flushIntervalMs: number;
  readonly idleMs?: number;
}

export const DEFAULT_FLUSH_INTERVAL_MS = 1000;

export function storageOptions(grain: string, o: StorageOptions): ResolvedStorageOptions {
  const flushIntervalMs = o.flushIntervalMs ?? DEFAULT_FLUSH_INTERVAL_MS;
  if (!(flushIntervalMs > 0) || !Number.isFinite(flushIntervalMs)) {
    throw new PlacementError(
      `grain "${grain}": flushIntervalMs must be a positive number of ms, got ${flushIntervalMs}`,
      { hint: 'leave it out for 1000 ms' },
    );
  }
  if (o.idleMs !== undefined && !(o.idleMs > 0)) {
    throw new PlacementError(`grain "${grain}": idleMs must be a positive number of ms, got ${o.idleMs}`, {
      hint: 'leave it out to keep actors until terminate',
    });
  }
  if (o.flushIntervalMs !== undefined && !o.storage) {
    throw new PlacementError(`grain "${grain}": flushIntervalMs without storage`, {
      hint: 'give storage: a StateStore (e.g. new LmdbStore(...))',
    });
  }
  return {
    flushIntervalMs,
    ...(o.storage ? { storage: o.storage } : {}),
    ...(o.idleMs !== undefined ? { idleMs: o.idleMs } : {}),
  };
}
