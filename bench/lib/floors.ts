/**
 * The device-side floor of a K2K hop: two blocks bounce a word through device memory (st.release.gpu /
 * ld.acquire.gpu spin), timed with %globaltimer. Run before any persistent kernel is launched in the context
 * (loading a module must not meet a running persistent kernel).
 */
import { type CudaContext, arg, compileCached } from '../../packages/cuda-backend/src/index.ts';

export const HOP_FLOOR_SOURCE = `
extern "C" __global__ void rg_hop_floor(unsigned int* w, unsigned int hops, unsigned long long* out) {
  if (threadIdx.x != 0) return;
  unsigned int* ping = w;
  unsigned int* pong = w + 32;
  unsigned long long t0 = 0, t1 = 0;
  if (blockIdx.x == 0) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (unsigned int i = 1; i <= hops; i++) {
    unsigned int v;
    if (blockIdx.x == 0) {
      asm volatile("st.release.gpu.u32 [%0], %1;" : : "l"(ping), "r"(i) : "memory");
      do { asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(pong) : "memory"); } while (v != i);
    } else {
      do { asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(ping) : "memory"); } while (v != i);
      asm volatile("st.release.gpu.u32 [%0], %1;" : : "l"(pong), "r"(i) : "memory");
    }
  }
  if (blockIdx.x == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    out[0] = t1 - t0;
  }
}
`;

/** One hop (half a round trip) in ns for each of `trials` runs of `hops` (100,000) round trips. */
export async function hopFloorRuns(ctx: CudaContext, trials: number): Promise<{ hops: number; runs: number[] }> {
  const compiled = compileCached(HOP_FLOOR_SOURCE, { arch: ctx.device.arch, name: 'rg_hop_floor.cu' });
  const mod = ctx.loadModule(compiled.cubin);
  const stream = ctx.createStream();
  const words = ctx.allocDevice(256);
  const out = ctx.allocDevice(8);
  try {
    const fn = ctx.getFunction(mod, 'rg_hop_floor');
    const hops = 100_000;
    const runs: number[] = [];
    for (let t = 0; t < trials; t++) {
      ctx.memsetDevice(words, 0);
      ctx.launch(fn, { grid: 2, block: 32, stream }, [arg.ptr(words.devPtr), arg.u32(hops), arg.ptr(out.devPtr)]);
      if (!(await ctx.waitForStream(stream, { timeoutMs: 20_000 })))
        throw new Error('hop floor kernel did not finish in 20 s (blocks not co-resident?)');
      const ns = new BigUint64Array(1);
      ctx.copyFromDevice(ns, out);
      runs.push(Number(ns[0]) / (2 * hops));
    }
    return { hops, runs };
  } finally {
    ctx.freeDevice(words);
    ctx.freeDevice(out);
    ctx.destroyStream(stream);
    ctx.unloadModule(mod);
  }
}
