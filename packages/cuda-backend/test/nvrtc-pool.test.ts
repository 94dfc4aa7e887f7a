/**
 * NVRTC on the pool's worker threads (src/driver/nvrtc-pool.ts): needs NVRTC only, no GPU, and is skipped with the
 * reason where NVRTC is not found (RINGGRAIN_NVRTC names one, e.g. from the nvidia-cuda-nvrtc wheel). Small units,
 * so it takes seconds: the pool's images equal this thread's byte for byte, a compile error comes back an
 * NvrtcError with the log, and compileCachedAsync reads the disk cache first, so a cached unit never reaches a worker.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  compileCachedAsync,
  CudaUsageError,
  loadNvrtc,
  NvrtcError,
  NvrtcPool,
  sharedNvrtcPool,
  type Nvrtc,
} from '../src/driver/index.ts';

let nvrtc: Nvrtc | undefined;
let reason = '';
try {
  nvrtc = loadNvrtc();
} catch {
  reason =
    'no NVRTC found; RINGGRAIN_NVRTC names one, e.g. …/nvidia/cu13/lib/libnvrtc.so.13 of the nvidia-cuda-nvrtc wheel';
}

const unit = (i: number): string =>
  `extern "C" __global__ void k${i}(int *p, int n) {\n` +
  `  int j = blockIdx.x * blockDim.x + threadIdx.x;\n  if (j < n) p[j] = j * ${i + 1};\n}\n`;
const cacheDir = mkdtempSync(join(tmpdir(), 'rg-nvrtc-pool-'));
afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

describe.skipIf(!nvrtc)(
  nvrtc ? `NVRTC ${nvrtc.versionString} on the pool's worker threads` : `NVRTC on worker threads (skipped: ${reason})`,
  () => {
    it('compiles side by side; each image equals the one this thread compiles with the same options', async () => {
      const n = nvrtc as Nvrtc;
      const pool = new NvrtcPool({ threads: 2, libPath: n.libPath });
      try {
        const opts = (i: number) => ({
          arch: i % 2 ? 'compute_80' : 'sm_90',
          name: `k${i}.cu`,
          extraOpts: ['--std=c++17'],
        });
        const pooled = await Promise.all([0, 1, 2, 3].map((i) => pool.compile(unit(i), opts(i))));
        for (const [i, p] of pooled.entries()) {
          const here = n.compile(unit(i), opts(i));
          expect(p.kind).toBe(here.kind);
          expect(Buffer.from(p.image).equals(Buffer.from(here.image)), `k${i}.cu`).toBe(true);
        }
        expect(pool.stats).toMatchObject({ jobs: 4, workersStarted: 2 });
      } finally {
        await pool.close();
      }
    }, 120_000);

    it('a compile error is an NvrtcError with the log; a bad arch a CudaUsageError, as on this thread', async () => {
      const pool = new NvrtcPool({ threads: 1, libPath: (nvrtc as Nvrtc).libPath });
      try {
        const e = await pool
          .compile('extern "C" __global__ void k() { undefined_name = 1; }', { arch: 'sm_90', name: 'broken.cu' })
          .catch((x: unknown) => x);
        expect(e).toBeInstanceOf(NvrtcError);
        expect(e).toMatchObject({
          code: 'NVRTC_ERROR_COMPILATION',
          programName: 'broken.cu',
          options: ['-arch=sm_90'],
        });
        expect((e as NvrtcError).log).toContain('undefined_name');
        const arch = await pool.compile(unit(0), { arch: 'sm_x' }).catch((x: unknown) => x);
        expect(arch).toBeInstanceOf(CudaUsageError);
        expect(arch).toMatchObject({ code: 'RG_NVRTC_BAD_ARCH' });
      } finally {
        await pool.close();
      }
    }, 120_000);

    it('compileCachedAsync compiles a miss on the shared pool; the next call is served from disk', async () => {
      const pool = sharedNvrtcPool(2, (nvrtc as Nvrtc).libPath);
      const before = pool.stats.jobs;
      const opts = { arch: 'sm_90', name: 'cached.cu', cacheDir, threads: 2 };
      const first = await compileCachedAsync(unit(9), opts);
      expect(first.cached).toBe(false);
      expect(pool.stats.jobs).toBe(before + 1);
      const again = await compileCachedAsync(unit(9), opts);
      expect(again).toMatchObject({ cached: true, key: first.key, compileMs: 0 });
      expect(Buffer.from(again.cubin).equals(Buffer.from(first.cubin))).toBe(true);
      expect(pool.stats.jobs).toBe(before + 1);
    }, 120_000);
  },
);
