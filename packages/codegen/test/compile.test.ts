import { beforeAll, describe, expect, it } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import { Echo } from '../../../bench/grains.ts';
import { generateKernel } from '../src/index.ts';
import { fileURLToPath } from 'node:url';
import {
  HAVE_NVCC,
  NVCC_DEPTH,
  nvccCompile,
  nvccCompileAsync,
  nvccDriverBuild,
  pool,
  type BuildResult,
} from './toolchain.ts';
import { CUBIN_ALWAYS, UNITS, unitJobs } from './units.ts';

describe.skipIf(!HAVE_NVCC)(
  `every generated unit compiles with nvcc (${NVCC_DEPTH}), warnings as errors (static_asserts included)`,
  () => {
    const results = new Map<string, BuildResult>();
    beforeAll(async () => {
      const jobs = unitJobs();
      // The run's global setup started prebuild.ts on these same jobs: what it built is read from the cache,
      // what it is building is waited for, and the rest is built here, two at a time. At the main suite's
      // depth ('front', toolchain.ts) a cold cache is ~1 s of CPU a unit; at 'cubin' (pnpm test:long) ~25 s.
      const built = await pool(jobs, 2, (j) => nvccCompileAsync(j.source, j.arch, j.depth));
      jobs.forEach((j, i) => results.set(j.id, built[i] as BuildResult));
    }, 1_200_000);
    for (const [name, , archs] of UNITS) {
      for (const arch of archs) {
        it(`${name} for ${arch}`, () => {
          const r = results.get(`${name}/${arch}`) as BuildResult;
          expect(r.log).toBe('');
          expect(r.ok).toBe(true);
        });
      }
    }
    // In every run, whatever the depth: these units through NVVM's optimiser and ptxas to a cubin.
    for (const [name, arch] of CUBIN_ALWAYS) {
      it(`${name} for ${arch}, to a cubin (ptxas)`, () => {
        const r = results.get(NVCC_DEPTH === 'cubin' ? `${name}/${arch}` : `${name}/${arch}/cubin`) as BuildResult;
        expect(r.log).toBe('');
        expect(r.ok).toBe(true);
      });
    }

    it('a layout drift is caught by the emitted static_asserts', () => {
      const src = generateKernel(Account.grain).source.replace(
        'struct rg_Account_state {\n  double balance;\n  unsigned int ops;',
        'struct rg_Account_state {\n  float balance;\n  unsigned int ops;',
      );
      expect(src).toContain('float balance;');
      const r = nvccCompile(src, 'sm_90');
      expect(r.ok).toBe(false);
      expect(r.log).toContain('rg_Account_state: size differs from layoutOf');
    });
  },
);

/** nvcc (device and host code, no link) of a hand-written C++ driver that includes a generated unit (cached). */
function compileDriver(driver: string, unitName: string, unit: string, defines: string[]): BuildResult {
  return nvccDriverBuild(fileURLToPath(new URL(driver, import.meta.url)), unitName, unit, defines);
}

// The C++ drivers that launch a generated kernel by hand compile against the current unit: a parameter
// added to the kernel without updating them fails here, not on the GPU machine.
describe.skipIf(!HAVE_NVCC)('hand-written CUDA drivers compile against the current generated unit', () => {
  it('packages/codegen/test/gpu/account-driver.cu (Account)', () => {
    const r = compileDriver('./gpu/account-driver.cu', 'Account.cu', generateKernel(Account.grain).source, []);
    expect(r.log).not.toMatch(/error/);
    expect(r.ok).toBe(true);
  }, 240_000);

  it('packages/cuda-backend/test/gpu/ask-probe.cu (bench Echo, profiled)', () => {
    const k = generateKernel(Echo.grain);
    const r = compileDriver('../../cuda-backend/test/gpu/ask-probe.cu', 'Echo.cu', k.source, [
      '-DRG_UNIT="Echo.cu"',
      '-DRG_ENTRY=rg_Echo_main',
      `-DRG_SELF_ID=${k.abi.grainId}`,
      '-DRG_STATE=rg_Echo_state',
      '-DRG_PROFILE',
    ]);
    expect(r.log).not.toMatch(/error/);
    expect(r.ok).toBe(true);
  }, 240_000);
});

// Only where nvcc is missing: a skip that names why (listed in the run's summary).
if (!HAVE_NVCC) {
  describe('nvcc compile', () => {
    it.skip('skipped: nvcc not found on PATH, so no generated unit was compiled', () => {});
  });
}
