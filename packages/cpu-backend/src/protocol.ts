import type { KernelOptions } from '@ringgrain/core';
import type { PeerInfo } from './memory.ts';

/** What a pool thread needs to consume one lane of a kernel. */
export interface LaneInit {
  /** The pool's id of the kernel (one per createKernel; a relaunched grain class gets a new one). */
  readonly kernelId: number;
  readonly grainId: number;
  /** Grain classes on this backend by id (null where a class lives on another backend). */
  readonly grains: ReadonlyArray<{ readonly name: string; readonly module: string } | null>;
  readonly options: KernelOptions;
  readonly sab: SharedArrayBuffer;
  readonly controlOffset: number;
  readonly inboundOffset: number;
  readonly replyOffset: number;
  readonly k2kOffset: number;
  /** The kernel's overflow region, the lane (= the pool thread's index) and the kernel's lane count. */
  readonly overflowOffset: number;
  readonly lane: number;
  readonly lanes: number;
  /** The lane's previous thread died: take over its rings and counters mid-run (Dispatcher.begin). */
  readonly resume?: boolean;
}

/** Given once, when the thread starts. */
export interface ThreadInit {
  readonly index: number;
  /** The thread's doorbell: words[index] of this buffer (memory.ts Doorbell). */
  readonly doorbell: { readonly buffer: SharedArrayBuffer; readonly index: number };
  readonly replySignal: SharedArrayBuffer;
}

/** Control-plane messages between the host and a pool thread (never per data message). */
export type ToThread =
  | { type: 'add'; lane: LaneInit; peers: PeerInfo[] }
  | { type: 'remove'; kernelId: number }
  | { type: 'peers'; peers: PeerInfo[] }
  | { type: 'inspect'; id: number; kernelId: number; key: number | string };

export type FromThread =
  | { type: 'ready' }
  | { type: 'added'; kernelId: number }
  | { type: 'removed'; kernelId: number }
  | { type: 'inspect'; id: number; value: unknown }
  | { type: 'fatal'; kernelId: number; message: string; code?: string };
