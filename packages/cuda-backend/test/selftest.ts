/**
 * Driver self-tests that run real kernels: an empty launch and the host ↔ persistent-kernel ping-pong
 * over pinned mapped memory. Used by the GPU test lane and by scripts/device/driver-record.ts, and a
 * quick way to check that a machine's driver, NVRTC and PCIe mapping all work.
 *
 * The ping-pong obeys the ring rules of core protocol.ts: single-writer words on separate 128-byte
 * lines, the kernel reads with ld.acquire.sys and answers with st.release.sys, the host uses Atomics,
 * the kernel exits on a stop flag (and on an idle watchdog, so a vanished host cannot leave it spinning).
 */
import { performance } from 'node:perf_hooks';
import { compileCached } from '../src/driver/compile-cache.ts';
import type { CudaContext, CudaStream, HostBuffer } from '../src/driver/context.ts';
import { CudaUsageError } from '../src/driver/errors.ts';
import { arg } from '../src/driver/kernel-args.ts';

export const EMPTY_KERNEL_SOURCE = `extern "C" __global__ void rg_empty() {}\n`;

/** Int32 word indices of the ping-pong control block; each word on its own 128-byte line. */
export const PINGPONG_LAYOUT = { ping: 0, pong: 32, stop: 64, exit: 96, bytes: 4096 } as const;

/** Exit codes the kernel writes to the `exit` word. */
export const PINGPONG_EXIT = { running: 0, stopFlag: 1, watchdog: 2 } as const;

export const PINGPONG_KERNEL_SOURCE = `
__device__ __forceinline__ unsigned int ld_acquire_sys(const unsigned int* p) {
  unsigned int v;
  asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release_sys(unsigned int* p, unsigned int v) {
  asm volatile("st.release.sys.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One thread answers every new value of *ping with value + 1 in *pong. The stop flag and the idle
// watchdog are checked every 1024 polls only: each poll of host memory is a PCIe round trip.
extern "C" __global__ void rg_pingpong(unsigned int* ctl, unsigned long long idle_timeout_ns) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  unsigned int* ping = ctl + ${PINGPONG_LAYOUT.ping};
  unsigned int* pong = ctl + ${PINGPONG_LAYOUT.pong};
  unsigned int* stop = ctl + ${PINGPONG_LAYOUT.stop};
  unsigned int* exit_code = ctl + ${PINGPONG_LAYOUT.exit};
  // The host zero-fills the block before launch and only then starts pinging, so 0 is the value
  // "already answered". (Reading *ping here instead would race with a host that pings before this
  // kernel is scheduled, and the first ping would never be answered.)
  unsigned int last = 0u;
  unsigned long long idle_since = global_ns();
  unsigned int polls = 0;
  for (;;) {
    unsigned int v = ld_acquire_sys(ping);
    if (v != last) {
      last = v;
      st_release_sys(pong, v + 1u);
      idle_since = global_ns();
      continue;
    }
    if ((++polls & 1023u) == 0u) {
      if (ld_acquire_sys(stop) != 0u) { st_release_sys(exit_code, ${PINGPONG_EXIT.stopFlag}u); return; }
      if (global_ns() - idle_since > idle_timeout_ns) { st_release_sys(exit_code, ${PINGPONG_EXIT.watchdog}u); return; }
    }
  }
}
`;

export interface LatencySummary {
  readonly count: number;
  readonly minUs: number;
  readonly p50Us: number;
  readonly p90Us: number;
  readonly p99Us: number;
  readonly maxUs: number;
  readonly meanUs: number;
}

export function summarize(samplesUs: Float64Array): LatencySummary {
  const s = Float64Array.from(samplesUs).sort();
  const q = (p: number): number => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? Number.NaN;
  let sum = 0;
  for (const x of s) sum += x;
  return {
    count: s.length,
    minUs: s[0] ?? Number.NaN,
    p50Us: q(0.5),
    p90Us: q(0.9),
    p99Us: q(0.99),
    maxUs: s[s.length - 1] ?? Number.NaN,
    meanUs: s.length ? sum / s.length : Number.NaN,
  };
}

export interface PingPongResult {
  /** Round trips whose answer was checked (every one is: value + 1). */
  readonly answered: number;
  readonly latency: LatencySummary;
  readonly samplesUs: Float64Array;
  /** How the kernel exited (PINGPONG_EXIT). */
  readonly exitCode: number;
  readonly compile: { readonly cached: boolean; readonly compileMs: number };
}

export interface PingPongOptions {
  readonly count: number;
  /** Pings before measuring (answers still checked). */
  readonly warmup?: number;
  /** Give up on one ping after this long (the kernel is dead or never started). */
  readonly pingTimeoutMs?: number;
  /** The kernel exits by itself after this long without a ping. */
  readonly idleTimeoutMs?: number;
  readonly cacheDir?: string;
}

/**
 * Launch the persistent ping-pong kernel, ping it `count` times (each answer checked), stop it via the
 * flag and wait (bounded) for it to exit. Frees what it allocated.
 */
export async function runPingPong(ctx: CudaContext, opts: PingPongOptions): Promise<PingPongResult> {
  const compiled = compileCached(PINGPONG_KERNEL_SOURCE, {
    arch: ctx.device.arch,
    name: 'rg_pingpong.cu',
    ...(opts.cacheDir === undefined ? {} : { cacheDir: opts.cacheDir }),
  });
  const mod = ctx.loadModule(compiled.cubin);
  let stream: CudaStream | undefined;
  let ctl: HostBuffer | undefined;
  let stopped = false;
  try {
    const fn = ctx.getFunction(mod, 'rg_pingpong');
    stream = ctx.createStream();
    ctl = ctx.allocHost(PINGPONG_LAYOUT.bytes);
    const w = new Int32Array(ctl.buffer);
    const idleNs = BigInt(Math.round((opts.idleTimeoutMs ?? 10_000) * 1e6));
    ctx.launch(fn, { grid: 1, block: 1, stream }, [arg.ptr(ctl.devPtr), arg.u64(idleNs)]);

    const warmup = opts.warmup ?? 0;
    const total = warmup + opts.count;
    const samples = new Float64Array(opts.count);
    const timeoutMs = opts.pingTimeoutMs ?? 5000;
    let answered = 0;
    for (let i = 1; i <= total; i++) {
      const expect = i + 1;
      const t0 = performance.now();
      Atomics.store(w, PINGPONG_LAYOUT.ping, i);
      let spins = 0;
      while (Atomics.load(w, PINGPONG_LAYOUT.pong) !== expect) {
        // Off the hot path: every ~1M spins see whether the kernel died or the wait is hopeless.
        if ((++spins & 0xfffff) === 0) {
          if (ctx.streamQuery(stream) === 'complete') {
            throw new CudaUsageError(
              'RG_SELFTEST_KERNEL_EXITED',
              `ping-pong kernel exited before answering ping ${i} (exit word ${Atomics.load(w, PINGPONG_LAYOUT.exit)})`,
            );
          }
          if (performance.now() - t0 > timeoutMs) {
            throw new CudaUsageError(
              'RG_SELFTEST_TIMEOUT',
              `no answer to ping ${i} within ${timeoutMs} ms (pong = ${Atomics.load(w, PINGPONG_LAYOUT.pong)})`,
            );
          }
        }
      }
      const dt = performance.now() - t0;
      answered++;
      if (i > warmup) samples[i - warmup - 1] = dt * 1000;
    }

    Atomics.store(w, PINGPONG_LAYOUT.stop, 1);
    stopped = await ctx.waitForStream(stream, { timeoutMs: 5000 });
    if (!stopped)
      throw new CudaUsageError('RG_SELFTEST_NO_STOP', 'ping-pong kernel did not exit within 5 s of the stop flag');
    return {
      answered,
      latency: summarize(samples),
      samplesUs: samples,
      exitCode: Atomics.load(w, PINGPONG_LAYOUT.exit),
      compile: { cached: compiled.cached, compileMs: compiled.compileMs },
    };
  } finally {
    if (ctl && stream && !stopped) {
      // Failure path: still ask the kernel to stop, and wait (bounded) so its memory can be freed.
      Atomics.store(new Int32Array(ctl.buffer), PINGPONG_LAYOUT.stop, 1);
      stopped = await ctx.waitForStream(stream, { timeoutMs: 5000 }).catch(() => false);
    }
    if (stopped || !stream) {
      if (ctl) ctx.freeHost(ctl);
      if (stream) ctx.destroyStream(stream);
      ctx.unloadModule(mod);
    }
  }
}

export interface LaunchSyncResult {
  readonly latency: LatencySummary;
  readonly compile: { readonly cached: boolean; readonly compileMs: number };
}

/** Launch the empty kernel and cuStreamSynchronize, `count` times: the per-message cost without a persistent kernel. */
export function runLaunchSync(ctx: CudaContext, opts: { count: number; cacheDir?: string }): LaunchSyncResult {
  const compiled = compileCached(EMPTY_KERNEL_SOURCE, {
    arch: ctx.device.arch,
    name: 'rg_empty.cu',
    ...(opts.cacheDir === undefined ? {} : { cacheDir: opts.cacheDir }),
  });
  const mod = ctx.loadModule(compiled.cubin);
  const stream = ctx.createStream();
  try {
    const fn = ctx.getFunction(mod, 'rg_empty');
    const samples = new Float64Array(opts.count);
    for (let i = 0; i < opts.count; i++) {
      const t0 = performance.now();
      ctx.launch(fn, { grid: 1, block: 1, stream }, []);
      ctx.synchronize(stream);
      samples[i] = (performance.now() - t0) * 1000;
    }
    return { latency: summarize(samples), compile: { cached: compiled.cached, compileMs: compiled.compileMs } };
  } finally {
    ctx.destroyStream(stream);
    ctx.unloadModule(mod);
  }
}
