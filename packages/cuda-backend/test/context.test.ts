/**
 * CudaContext without a GPU: the facade and its parts (context-core, -streams, -memory, -modules) driven
 * against a stand-in driver that records every driver call and returns scripted results. What it checks is
 * the context's own logic — handle tracking and ownership, argument checks, the order of dispose — which
 * the GPU lane of driver.test.ts covers only where a device is present.
 */
import koffi from 'koffi';
import { describe, expect, it } from 'vitest';
import { arg, CudaContext, CudaUsageError } from '../src/driver/index.ts';
import type { CudaDriver } from '../src/driver/index.ts';

const NOT_READY = 600;
const ALREADY_ENABLED = 704;

class StandInError extends Error {
  constructor(
    readonly call: string,
    readonly result: number,
  ) {
    super(`${call} failed with ${result}`);
  }
}

/** Handles the stand-ins hand out, unique over the file (the context current on this thread is per process). */
let next = 0x1000n;

/** A driver whose every call is logged by name; `fail` scripts the results of the next calls of a name. */
function standIn() {
  const calls: string[] = [];
  const fail = new Map<string, number[]>();
  const api = new Proxy(
    {},
    {
      get: (_t, name: string) =>
        (...args: unknown[]) => {
          calls.push(name);
          const r = fail.get(name)?.shift() ?? 0;
          const out = args[0];
          if (out instanceof BigUint64Array) {
            // Pinned host memory must be real: the context zero-fills it through a view.
            out[0] = name === 'cuMemHostAlloc' ? BigInt(koffi.address(koffi.alloc('uint8_t', Number(args[1])))) : next;
            next += 0x100n;
          }
          if (out instanceof Int32Array) out[0] = 1;
          return r;
        },
    },
  );
  const driver = {
    api,
    deviceInfo: (ordinal: number) => ({ ordinal }),
    device: (ordinal: number) => ordinal,
    check(call: string, r: number) {
      if (r !== 0) throw new StandInError(call, r);
    },
    error: (call: string, r: number) => new StandInError(call, r),
  };
  // The constructor is private (contexts come from CudaContext.create, which loads the real driver).
  const open = (ordinal = 0): CudaContext =>
    new (CudaContext as unknown as new (d: CudaDriver, o: number) => CudaContext)(
      driver as unknown as CudaDriver,
      ordinal,
    );
  return { calls, fail, open };
}

const code = (f: () => unknown): string | undefined => {
  try {
    f();
  } catch (e) {
    return e instanceof CudaUsageError ? e.code : e instanceof StandInError ? `${e.call}:${e.result}` : String(e);
  }
  return undefined;
};

describe('CudaContext against a stand-in driver (no GPU needed)', () => {
  it('tracks what it creates, refuses foreign or freed handles and bad arguments', () => {
    const { open } = standIn();
    const ctx = open(0);
    const other = open(1);
    const s = ctx.createStream();
    const host = ctx.allocHost(256);
    expect(new Uint8Array(host.buffer).every((b) => b === 0)).toBe(true);
    const d = ctx.allocDevice(1024);
    const a = ctx.allocDeviceAsync(512, s);
    const m = ctx.loadModule(new Uint8Array([1]));
    const fn = ctx.getFunction(m, 'k');
    expect(ctx.stats()).toEqual({
      pinnedBytes: 256,
      pinnedAllocations: 1,
      deviceBytes: 1536,
      deviceAllocations: 2,
      streams: 1,
      modules: 1,
    });
    expect(code(() => other.streamQuery(s))).toBe('RG_CUDA_FOREIGN_HANDLE');
    expect(code(() => ctx.allocHost(0))).toBe('RG_CUDA_BAD_SIZE');
    expect(code(() => ctx.copyFromDevice(new Uint8Array(16), d, 1020))).toBe('RG_CUDA_OUT_OF_BOUNDS');
    expect(code(() => ctx.memsetDeviceAsync(d, 0, { handle: 5n }))).toBe('RG_CUDA_FOREIGN_HANDLE');
    expect(code(() => ctx.loadModule(new Uint8Array(0)))).toBe('RG_CUDA_EMPTY_IMAGE');
    expect(code(() => ctx.launch(fn, { grid: 0, block: 32, stream: s }, []))).toBe('RG_CUDA_BAD_LAUNCH');
    expect(code(() => ctx.launch(fn, { grid: 1, block: 32, sharedMemBytes: -1, stream: s }, []))).toBe(
      'RG_CUDA_BAD_LAUNCH',
    );
    expect(code(() => ctx.launch(fn, { grid: 1, block: 32, stream: s }, [arg.u32(1)]))).toBeUndefined();
    ctx.freeDeviceAsync(a, s);
    ctx.freeDevice(d);
    expect(code(() => ctx.freeDevice(d))).toBe('RG_CUDA_FOREIGN_HANDLE');
    ctx.unloadModule(m);
    expect(code(() => ctx.getFunction(m, 'k'))).toBe('RG_CUDA_FOREIGN_HANDLE');
    expect(ctx.stats()).toMatchObject({ deviceAllocations: 0, modules: 0, pinnedAllocations: 1, streams: 1 });
    ctx.dispose();
    other.dispose();
  });

  it('peer access: already enabled is success, another failure is thrown', () => {
    const { fail, open } = standIn();
    const a = open(0);
    const b = open(1);
    expect(a.canAccessPeer(b)).toBe(true);
    fail.set('cuCtxEnablePeerAccess', [ALREADY_ENABLED, 999]);
    expect(code(() => a.enablePeerAccess(b))).toBeUndefined();
    expect(code(() => a.enablePeerAccess(b))).toBe('cuCtxEnablePeerAccess:999');
    a.dispose();
    b.dispose();
  });

  it('dispose refuses while a stream has work, frees nothing then; later frees all, in order', () => {
    const { calls, fail, open } = standIn();
    const ctx = open();
    const s = ctx.createStream();
    ctx.allocDevice(64);
    ctx.allocHost(64);
    ctx.loadModule(new Uint8Array([1]));
    fail.set('cuStreamQuery', [NOT_READY]);
    expect(code(() => ctx.dispose())).toBe('RG_CUDA_BUSY');
    expect(ctx.disposed).toBe(false);
    expect(ctx.stats()).toMatchObject({ deviceAllocations: 1, pinnedAllocations: 1, modules: 1, streams: 1 });
    expect(ctx.streamQuery(s)).toBe('complete');
    calls.length = 0;
    ctx.dispose();
    expect(calls).toEqual([
      'cuStreamQuery',
      'cuModuleUnload',
      'cuMemFree_v2',
      'cuMemFreeHost',
      'cuStreamDestroy_v2',
      'cuDevicePrimaryCtxRelease_v2',
    ]);
    expect(ctx.disposed).toBe(true);
    expect(code(() => ctx.createStream())).toBe('RG_CUDA_DISPOSED');
    expect(code(() => ctx.dispose())).toBeUndefined();
  });

  it('after a sticky fault, dispose still frees everything, resets if asked, and throws the first error', () => {
    const { calls, fail, open } = standIn();
    const ctx = open();
    ctx.createStream();
    ctx.allocDevice(64);
    fail.set('cuStreamQuery', [719]);
    fail.set('cuMemFree_v2', [719]);
    calls.length = 0;
    expect(code(() => ctx.dispose({ reset: true }))).toBe('cuStreamQuery:719');
    expect(calls).toEqual([
      'cuStreamQuery',
      'cuMemFree_v2',
      'cuStreamDestroy_v2',
      'cuDevicePrimaryCtxReset_v2',
      'cuDevicePrimaryCtxRelease_v2',
    ]);
    expect(ctx.disposed).toBe(true);
  });

  it('a context that cannot be made current releases the primary context it retained', () => {
    const { calls, fail, open } = standIn();
    fail.set('cuCtxSetCurrent', [201]);
    expect(code(() => open(7))).toBe('cuCtxSetCurrent:201');
    expect(calls).toEqual(['cuDevicePrimaryCtxRetain', 'cuCtxSetCurrent', 'cuDevicePrimaryCtxRelease_v2']);
  });
});
