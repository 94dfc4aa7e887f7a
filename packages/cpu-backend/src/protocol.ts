import type { KernelOptions } from '@ringgrain/core';
import type { PeerInfo } from './memory.ts';

/** Control-plane messages between a CPU kernel's host side and its worker (never per data message). */
export interface WorkerInit {
  readonly grainId: number;
  /** Grain classes on this backend by id (null where a class lives on another backend). */
  readonly grains: ReadonlyArray<{ readonly name: string; readonly module: string } | null>;
  readonly options: KernelOptions;
  readonly sab: SharedArrayBuffer;
  readonly controlOffset: number;
  readonly inboundOffset: number;
  readonly replyOffset: number;
  readonly k2kOffset: number;
  readonly replySignal: SharedArrayBuffer;
  readonly peers: readonly PeerInfo[];
}

export type ToWorker = { type: 'peers'; peers: PeerInfo[] } | { type: 'inspect'; id: number; key: number | string };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'inspect'; id: number; value: unknown }
  | { type: 'fatal'; message: string; code?: string };
