/**
 * The CUDA driver layer. Three lanes:
 * - everywhere: discovery rules and argument validation (no driver needed);
 * - without a driver (CI, dev machines): discovery must end in a typed CudaUnavailableError, and
 *   probeCuda in ok:false with the reason — checked for real, not skipped;
 * - on a GPU: real kernels through NVRTC and the driver (skipped elsewhere, with the reason in the name).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RinggrainError } from '@ringgrain/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  arg,
  compileCached,
  CudaContext,
  CudaUnavailableError,
  CudaUsageError,
  isStubPath,
  libcudaCandidates,
  loadCudaDriver,
  loadNvrtc,
  nvrtcCandidates,
  NvrtcError,
  probeCuda,
} from '../src/driver/index.ts';
import { EMPTY_KERNEL_SOURCE, PINGPONG_EXIT, runPingPong } from './selftest.ts';

const probe = probeCuda();
const driverProbe = probeCuda({ requireNvrtc: false });
const gpuLane = probe.ok
  ? `on the GPU (${probe.device.name}, ${probe.device.arch}, driver ${probe.driverVersionString}, NVRTC ` +
    `${probe.nvrtc?.version ?? '?'})`
  : `on the GPU (skipped: no CUDA driver/device — ${probe.reason})`;

const MiB = 1 << 20;

describe('driver discovery rules (no GPU needed)', () => {
  it('never lists a toolkit stub as a libcuda or NVRTC candidate', () => {
    const env = { CUDA_HOME: '/usr/local/cuda', CUDA_PATH: '/opt/cuda' };
    for (const p of [...libcudaCandidates(env), ...nvrtcCandidates(env)]) expect(isStubPath(p), p).toBe(false);
    expect(libcudaCandidates({})).toContain('/usr/local/nvidia/lib64/libcuda.so.1');
    expect(libcudaCandidates({})).toContain('/usr/lib/wsl/lib/libcuda.so.1');
    expect(nvrtcCandidates({ CUDA_HOME: '/opt/cuda-x' })[0]).toBe('/opt/cuda-x/lib64/libnvrtc.so.13');
  });

  it('RINGGRAIN_LIBCUDA pointing at nothing gives CudaUnavailableError naming the path', () => {
    const env = { RINGGRAIN_LIBCUDA: '/nonexistent/libcuda.so.1' };
    expect(libcudaCandidates(env)).toEqual(['/nonexistent/libcuda.so.1']);
    const err = catchError(() => loadCudaDriver({ env }));
    expect(err).toBeInstanceOf(CudaUnavailableError);
    expect(err).toBeInstanceOf(RinggrainError);
    expect((err as CudaUnavailableError).code).toBe('CUDA_UNAVAILABLE');
    expect((err as CudaUnavailableError).reason).toContain('/nonexistent/libcuda.so.1: no such file');
    expect((err as CudaUnavailableError).hint).toMatch(/RINGGRAIN_LIBCUDA/);
  });

  it('refuses a stub libcuda even when asked for it explicitly', () => {
    const stub = '/usr/local/cuda-13.0/targets/x86_64-linux/lib/stubs/libcuda.so';
    const err = catchError(() => loadCudaDriver({ env: { RINGGRAIN_LIBCUDA: stub } }));
    expect(err).toBeInstanceOf(CudaUnavailableError);
    expect((err as CudaUnavailableError).reason).toContain('refused (a toolkit stub');
  });

  it('RINGGRAIN_NVRTC pointing at nothing gives CudaUnavailableError; probeCuda reports it', () => {
    const env = { ...process.env, RINGGRAIN_NVRTC: '/nonexistent/libnvrtc.so.13' };
    expect(catchError(() => loadNvrtc({ env }))).toBeInstanceOf(CudaUnavailableError);
    const p = probeCuda({ env });
    expect(p.ok).toBe(false);
    if (!p.ok) expect(p.reason).toMatch(/libnvrtc|libcuda/);
  });

  it('kernel argument constructors reject values that would be truncated', () => {
    expect(arg.u32(0xffff_ffff)).toEqual({ kind: 'u32', value: 0xffff_ffff });
    expect(arg.u64(5)).toEqual({ kind: 'u64', value: 5n });
    expect(() => arg.u32(-1)).toThrow(CudaUsageError);
    expect(() => arg.u32(2 ** 32)).toThrow(CudaUsageError);
    expect(() => arg.i32(1.5)).toThrow(CudaUsageError);
    expect(() => arg.u64(-1n)).toThrow(CudaUsageError);
    expect(() => arg.ptr(1n << 64n)).toThrow(CudaUsageError);
  });
});

describe.skipIf(driverProbe.ok)('without a CUDA driver (this machine has none)', () => {
  it('probeCuda returns ok:false with a reason instead of throwing', () => {
    expect(probe.ok).toBe(false);
    if (probe.ok) return;
    expect(probe.reason).toMatch(/libcuda|device|driver/);
    expect(probe.error).toBeInstanceOf(CudaUnavailableError);
  });

  it('loadCudaDriver throws CudaUnavailableError listing every place it looked', () => {
    const err = catchError(() => loadCudaDriver());
    expect(err).toBeInstanceOf(CudaUnavailableError);
    const reason = (err as CudaUnavailableError).reason;
    expect(reason).toContain('libcuda.so.1');
    expect(reason).toContain('/usr/local/nvidia/lib64/libcuda.so.1');
    expect(reason).not.toContain('/stubs/');
  });

  it('CudaContext.create throws CudaUnavailableError, never crashes', () => {
    expect(catchError(() => CudaContext.create())).toBeInstanceOf(CudaUnavailableError);
  });
});

describe.skipIf(!probe.ok)(gpuLane, { timeout: 60_000 }, () => {
  let ctx: CudaContext;
  let cacheDir: string;

  beforeAll(() => {
    cacheDir = mkdtempSync(path.join(os.tmpdir(), 'rg-cubin-test-'));
    ctx = CudaContext.create();
  });

  afterAll(() => {
    ctx?.dispose();
    rmSync(cacheDir, { recursive: true, force: true });
  });

  it('initialises: driver version, device name, architecture, mapped host memory', () => {
    expect(ctx.driver.version).toBeGreaterThanOrEqual(11000);
    expect(ctx.device.name.length).toBeGreaterThan(0);
    expect(ctx.device.arch).toMatch(/^sm_\d+$/);
    expect(ctx.device.multiprocessorCount).toBeGreaterThan(0);
    expect(ctx.device.canMapHostMemory).toBe(true);
    const mem = ctx.memInfo();
    expect(mem.totalBytes).toBeGreaterThan(0);
    expect(mem.freeBytes).toBeLessThanOrEqual(mem.totalBytes);
  });

  it('compiles an empty extern "C" kernel with NVRTC to a cubin and launches it', () => {
    const c = compileCached(EMPTY_KERNEL_SOURCE, { arch: ctx.device.arch, name: 'rg_empty.cu', cacheDir });
    expect(c.kind).toBe('cubin');
    expect(Array.from(c.cubin.subarray(0, 4))).toEqual([0x7f, 0x45, 0x4c, 0x46]);
    const mod = ctx.loadModule(c.cubin);
    const fn = ctx.getFunction(mod, 'rg_empty');
    const stream = ctx.createStream();
    ctx.launch(fn, { grid: 1, block: 1, stream }, []);
    ctx.synchronize(stream);
    expect(ctx.streamQuery(stream)).toBe('complete');
    expect(ctx.functionAttributes(fn).maxThreadsPerBlock).toBeGreaterThan(0);
    expect(ctx.maxActiveBlocksPerMultiprocessor(fn, 128)).toBeGreaterThan(0);
    ctx.destroyStream(stream);
    ctx.unloadModule(mod);
  });

  it('passes u32, i32, u64, f32 and pointer arguments through kernelParams intact', () => {
    const src = `
extern "C" { __device__ unsigned long long rg_global[4]; }
extern "C" __global__ void rg_args(unsigned int a, int b, unsigned long long c, float d, unsigned long long* out) {
  union { float f; unsigned int u; } bits; bits.f = d;
  out[0] = a; out[1] = (unsigned long long)(long long)b; out[2] = c; out[3] = bits.u;
  rg_global[0] = c;
}`;
    const c = compileCached(src, { arch: ctx.device.arch, name: 'rg_args.cu', cacheDir });
    const mod = ctx.loadModule(c.cubin);
    const fn = ctx.getFunction(mod, 'rg_args');
    const stream = ctx.createStream();
    const out = ctx.allocHost(4096);
    ctx.launch(fn, { grid: 1, block: 1, stream }, [
      arg.u32(0xdead_beef),
      arg.i32(-7),
      arg.u64(0x1234_5678_9abc_def0n),
      arg.f32(1.5),
      arg.ptr(out.devPtr),
    ]);
    ctx.synchronize(stream);
    const got = new BigUint64Array(out.buffer, 0, 4);
    expect(got[0]).toBe(0xdead_beefn);
    expect(BigInt.asIntN(64, got[1] ?? 0n)).toBe(-7n);
    expect(got[2]).toBe(0x1234_5678_9abc_def0n);
    expect(got[3]).toBe(BigInt(new Uint32Array(new Float32Array([1.5]).buffer)[0] ?? 0));
    const g = ctx.getGlobal(mod, 'rg_global');
    expect(g.bytes).toBe(32);
    const gv = new BigUint64Array(1);
    ctx.copyFromDevice(gv, g);
    expect(gv[0]).toBe(0x1234_5678_9abc_def0n);
    ctx.freeHost(out);
    ctx.destroyStream(stream);
    ctx.unloadModule(mod);
  });

  it('copies host → device → host (setup path)', () => {
    const d = ctx.allocDevice(4096);
    const src = Uint8Array.from({ length: 4096 }, (_, i) => (i * 7) & 0xff);
    ctx.copyToDevice(d, src);
    const back = new Uint8Array(4096);
    ctx.copyFromDevice(back, d);
    expect(back).toEqual(src);
    ctx.memsetDevice(d, 0x5a);
    ctx.copyFromDevice(back, d);
    expect(back.every((b) => b === 0x5a)).toBe(true);
    ctx.freeDevice(d);
  });

  it('turns a compile error into NvrtcError carrying the full log', () => {
    const err = catchError(() =>
      compileCached('#error boom from the test\n', { arch: ctx.device.arch, name: 'bad.cu', cacheDir }),
    );
    expect(err).toBeInstanceOf(NvrtcError);
    const e = err as NvrtcError;
    expect(e.code).toBe('NVRTC_ERROR_COMPILATION');
    expect(e.log).toContain('boom');
    expect(e.hint).toBeTruthy();
  });

  it('serves the second compile of the same source from the on-disk cache', () => {
    const src = `// ${randomUUID()}\nextern "C" __global__ void rg_cached(unsigned int* p) { if (p) *p = 1u; }\n`;
    const first = compileCached(src, { arch: ctx.device.arch, name: 'rg_cached.cu', cacheDir });
    const second = compileCached(src, { arch: ctx.device.arch, name: 'rg_cached.cu', cacheDir });
    expect(first.cached).toBe(false);
    expect(first.compileMs).toBeGreaterThan(0);
    expect(second.cached).toBe(true);
    expect(second.compileMs).toBe(0);
    expect(second.key).toBe(first.key);
    expect(Buffer.from(second.cubin).equals(Buffer.from(first.cubin))).toBe(true);
    const other = compileCached(src, {
      arch: ctx.device.arch,
      name: 'rg_cached.cu',
      cacheDir,
      extraOpts: ['-lineinfo'],
    });
    expect(other.cached).toBe(false);
    const mod = ctx.loadModule(second.cubin);
    expect(ctx.getFunction(mod, 'rg_cached').name).toBe('rg_cached');
    ctx.unloadModule(mod);
  });

  it('ping-pongs 1000 times with a persistent kernel over pinned mapped memory, every answer checked', async () => {
    const r = await runPingPong(ctx, { count: 1000, warmup: 10, cacheDir });
    expect(r.answered).toBe(1010);
    expect(r.exitCode).toBe(PINGPONG_EXIT.stopFlag);
    expect(r.latency.count).toBe(1000);
    expect(r.latency.minUs).toBeGreaterThan(0);
    console.log(
      `[driver] ping-pong x1000: p50 ${r.latency.p50Us.toFixed(2)} µs, p99 ${r.latency.p99Us.toFixed(2)} µs, min ` +
        `${r.latency.minUs.toFixed(2)} µs`,
    );
    expect(ctx.stats()).toMatchObject({ pinnedAllocations: 0, streams: 0, modules: 0 });
  });

  it('refuses to dispose while a persistent kernel runs, and disposes once it stopped', async () => {
    const other = CudaContext.create();
    const c = compileCached(
      `extern "C" __global__ void rg_wait(unsigned int* stop) {
         unsigned int v = 0;
         do { asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(stop) : "memory"); } while (v == 0u);
       }`,
      { arch: other.device.arch, name: 'rg_wait.cu', cacheDir },
    );
    const mod = other.loadModule(c.cubin);
    const stream = other.createStream();
    const flag = other.allocHost(4096);
    other.launch(other.getFunction(mod, 'rg_wait'), { grid: 1, block: 1, stream }, [arg.ptr(flag.devPtr)]);
    expect(other.streamQuery(stream)).toBe('pending');
    const busy = catchError(() => other.dispose());
    expect(busy).toBeInstanceOf(CudaUsageError);
    expect((busy as CudaUsageError).code).toBe('RG_CUDA_BUSY');
    Atomics.store(new Int32Array(flag.buffer), 0, 1);
    expect(await other.waitForStream(stream, { timeoutMs: 5000 })).toBe(true);
    other.dispose();
    expect(other.disposed).toBe(true);
    expect(() => other.allocHost(16)).toThrow(CudaUsageError);
    // ctx shares the primary context and must be unaffected.
    expect(ctx.memInfo().totalBytes).toBeGreaterThan(0);
  });

  it('returns device and pinned memory to baseline after 100 alloc/free cycles', () => {
    const cycle = (): void => {
      const d = ctx.allocDevice(MiB);
      const h = ctx.allocHost(64 * 1024);
      ctx.freeDevice(d);
      ctx.freeHost(h);
    };
    cycle(); // warm-up: the driver sets up its allocator state on first use
    const statsBefore = ctx.stats();
    const before = ctx.memInfo().freeBytes;

    const held = ctx.allocDevice(64 * MiB);
    expect(before - ctx.memInfo().freeBytes).toBeGreaterThanOrEqual(64 * MiB); // memInfo does see allocations
    ctx.freeDevice(held);

    for (let i = 0; i < 100; i++) cycle();
    const after = ctx.memInfo().freeBytes;
    console.log(
      `[driver] free device memory before ${before}, after 100 cycles ${after} (delta ${before - after} bytes)`,
    );
    expect(ctx.stats()).toEqual(statsBefore);
    expect(Math.abs(before - after)).toBeLessThanOrEqual(2 * MiB); // a 1 MiB/cycle leak would show as 100 MiB
  });
});

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected an error, none was thrown');
}
