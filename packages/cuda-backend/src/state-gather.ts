import { gatherLayout, type ActorKey, type StateBatch } from '@ringgrain/core/backend';
import { GATHER_PARAMS, gatherLaunch } from '@ringgrain/codegen';
import { performance } from 'node:perf_hooks';
import { arg, type KernelArg } from './driver/index.ts';
import { GpuStateError } from './errors.ts';

/** What the gather needs of its ring kernel. */
export interface GatherTarget {
  readonly grain: string;
  /** layoutOf(grain.state).size: the stride of the states region and of the rows read out. */
  readonly stateSize: number;
  readonly maxActors: number;
  /** String keys are interned ids on the device: they cannot be read back. */
  readonly stringKeys: boolean;
  /** Device addresses of the kernel's states region (states, then StateMeta) and of its DeviceGlobals. */
  readonly states: bigint;
  readonly globals: bigint;
}

/**
 * The driver calls of one gather, on one non-blocking stream of its own: `staging` is the device
 * staging buffer's address (gatherLayout bytes), `copyOut` queues a device → host copy from it into
 * `dst` (pinned host memory), `sync` waits for the stream. The backend implements it with its context;
 * unit tests with a stand-in.
 */
export interface GatherDevice {
  readonly staging: bigint;
  zero(offset: number, bytes: number): void;
  launch(blocks: number, threadsPerBlock: number, args: readonly KernelArg[]): void;
  copyOut(dst: Uint8Array, offset: number): void;
  sync(): void;
}

/** One readDirty's rows and what each step took (bench/gpu-state.ts prints them). */
export interface Gathered {
  readonly batch: StateBatch;
  readonly rows: number;
  /** Rows the kernel dropped because a turn overlapped their copy (those actors stay dirty). */
  readonly dropped: number;
  /** Zeroing the count, the gather kernel, and the count's copy back (ms, host wall clock). */
  readonly gatherMs: number;
  /** The device → host copy of the rows' keys and states (ms, host wall clock): the issue's measure. */
  readonly copyMs: number;
  /** Keys decoded and states copied out of the pinned buffer into the batch (ms). */
  readonly decodeMs: number;
}

/** Keys of `count` rows: int64 little-endian (lo, hi) words as written by the gather kernel. */
export function decodeKeys(words: Uint32Array, count: number): ActorKey[] {
  const hiSigned = new Int32Array(words.buffer, words.byteOffset, count * 2);
  const keys = new Array<ActorKey>(count);
  for (let i = 0; i < count; i++) keys[i] = hiSigned[2 * i + 1]! * 4294967296 + words[2 * i]!;
  return keys;
}

/**
 * readDirty of a CUDA kernel: the gather kernel (codegen state-meta.ts) clears the dirty marks and
 * compacts the keys and states into the staging buffer on the device; the host reads the row count, then
 * copies exactly that many keys and states into pinned memory (two copies, one wait) and hands out a
 * batch of its own (the pinned buffer is reused by the next gather). Rows the kernel dropped (a turn
 * overlapped their copy; their actors stay dirty) are left out using the per-row flags, copied only then.
 */
export class DirtyGather {
  private readonly layout: ReturnType<typeof gatherLayout>;
  /** Calls run one at a time: they share the staging buffers. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly target: GatherTarget,
    private readonly device: GatherDevice,
    /** Pinned host memory of gatherLayout(stateSize, maxActors).bytes, mapped as the staging buffer is laid out. */
    private readonly host: Uint8Array,
  ) {
    this.layout = gatherLayout(target.stateSize, target.maxActors);
    if (host.byteLength < this.layout.bytes)
      throw new RangeError(`state gather: host buffer of ${host.byteLength} bytes, ${this.layout.bytes} needed`);
  }

  run(): Promise<Gathered> {
    const next = this.queue.then(() => this.once());
    this.queue = next.catch(() => undefined);
    return next;
  }

  private once(): Gathered {
    const t = this.target;
    if (t.stringKeys)
      throw new GpuStateError(
        t.grain,
        'GPU_STATE_STRING_KEYS',
        'its actors have string keys, which the GPU holds as interned ids: readDirty cannot name them',
      );
    const { keysAt, statesAt, flagsAt } = this.layout;
    const values: Record<string, bigint | number> = {
      states: t.states,
      globals: t.globals,
      maxActors: t.maxActors,
      out: this.device.staging,
    };
    const args = GATHER_PARAMS.map((p) => {
      const v = values[p.name];
      if (v === undefined)
        throw new Error(`cuda-backend: no value for gather parameter ${p.name} (codegen state-meta.ts changed?)`);
      return p.kind === 'ptr' ? arg.ptr(BigInt(v)) : arg.u32(Number(v));
    });
    const launch = gatherLaunch(t.maxActors);
    const t0 = performance.now();
    let count: number;
    let dropped: number;
    try {
      this.device.zero(0, 16);
      this.device.launch(launch.blocks, launch.threadsPerBlock, args);
      this.device.copyOut(this.host.subarray(0, 16), 0);
      this.device.sync();
      const head = new Uint32Array(this.host.buffer, this.host.byteOffset, 2);
      count = head[0]!;
      dropped = head[1]!;
    } catch (e) {
      throw new GpuStateError(
        t.grain,
        'GPU_STATE_GATHER',
        `the dirty gather failed: ${(e as Error).message.split('\n')[0]}`,
        { cause: e },
      );
    }
    // The kernel clears a mark before it reserves the row: more rows than slots is a broken kernel, and
    // the cleared marks are lost with it, so this is an error, never a truncated batch.
    if (count > t.maxActors || dropped > count)
      throw new GpuStateError(
        t.grain,
        'GPU_STATE_GATHER',
        `the gather kernel reported ${count} dirty rows (${dropped} dropped) for ${t.maxActors} slots`,
      );
    const t1 = performance.now();
    const keyBytes = this.host.subarray(keysAt, keysAt + count * 8);
    const stateBytes = this.host.subarray(statesAt, statesAt + count * t.stateSize);
    const flags = this.host.subarray(flagsAt, flagsAt + count);
    try {
      if (count > 0) {
        this.device.copyOut(keyBytes, keysAt);
        if (t.stateSize > 0) this.device.copyOut(stateBytes, statesAt);
        if (dropped > 0) this.device.copyOut(flags, flagsAt);
        this.device.sync();
      }
    } catch (e) {
      throw new GpuStateError(
        t.grain,
        'GPU_STATE_GATHER',
        `copying ${count} dirty rows to the host failed (their marks were cleared: those states are not written ` +
          `this time)`,
        { cause: e },
      );
    }
    const t2 = performance.now();
    const all = decodeKeys(new Uint32Array(keyBytes.buffer, keyBytes.byteOffset, count * 2), count);
    const batch =
      dropped === 0
        ? { keys: all, bytes: stateBytes.slice(), stride: t.stateSize }
        : keptRows(all, stateBytes, flags, t.stateSize, count - dropped, t.grain);
    const t3 = performance.now();
    return { batch, rows: batch.keys.length, dropped, gatherMs: t1 - t0, copyMs: t2 - t1, decodeMs: t3 - t2 };
  }
}

/** The rows flagged 1, packed (a gather that dropped some). Their number must be what the kernel counted. */
function keptRows(
  keys: readonly ActorKey[],
  states: Uint8Array,
  flags: Uint8Array,
  stride: number,
  kept: number,
  grain: string,
): StateBatch {
  const out: ActorKey[] = [];
  const bytes = new Uint8Array(kept * stride);
  for (let i = 0; i < keys.length; i++) {
    if (flags[i] !== 1) continue;
    if (out.length === kept) break;
    bytes.set(states.subarray(i * stride, (i + 1) * stride), out.length * stride);
    out.push(keys[i]!);
  }
  if (out.length !== kept)
    throw new GpuStateError(
      grain,
      'GPU_STATE_GATHER',
      `the gather kernel flagged ${out.length} rows kept where it counted ${kept}`,
    );
  return { keys: out, bytes, stride };
}
