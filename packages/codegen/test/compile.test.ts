import { beforeAll, describe, expect, it } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import { VectorAdd } from '../../../examples/vector-add/grains.ts';
import { Person, Ward } from '../../../examples/sir/grains.ts';
import { Alerts, Device } from '../../../examples/sensor-fleet/grains.ts';
import { Echo, Relay as BenchRelay } from '../../../bench/grains.ts';
import { generateKernel } from '../src/index.ts';
import { Counter, Relay } from './fixtures/k2k.ts';
import { Stats } from './fixtures/stats.ts';
import { CONFORMANCE_GRAINS } from './fixtures/conformance.ts';
import { Guard } from './fixtures/throws.ts';
import { Par } from './fixtures/parallel.ts';
import { Beacon } from './fixtures/timers.ts';
import { Props, Shapes, Views } from './fixtures/audit.ts';
import { Pulse, Ticker } from '../../../test/fixtures/timers.ts';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HAVE_NVCC, nvccCompile, nvccCompileAsync, pool, type BuildResult } from './toolchain.ts';

// sm_90 (H100, the GPU machine) and sm_75, the oldest architecture CUDA 13 still targets (sm_70 was dropped).
const BOTH = ['sm_90', 'sm_75'] as const;
const H100 = ['sm_90'] as const;
const conformance = CONFORMANCE_GRAINS.map((c) => c.grain);

const UNITS: readonly (readonly [string, () => string, readonly string[]])[] = [
  ['Account', () => generateKernel(Account.grain).source, BOTH],
  ['Stats', () => generateKernel(Stats.grain).source, BOTH],
  ['Counter', () => generateKernel(Counter.grain, { grains: [Counter.grain, Relay.grain] }).source, BOTH],
  ['Relay', () => generateKernel(Relay.grain, { grains: [Counter.grain, Relay.grain] }).source, BOTH],
  ['Guard', () => generateKernel(Guard.grain).source, BOTH],
  ['Par', () => generateKernel(Par.grain).source, BOTH],
  // Timers (timers.ts): integer keys (the conformance Ticker) and string keys with a K2K send from a tick.
  ['Ticker', () => generateKernel(Ticker.grain).source, BOTH],
  ['Beacon', () => generateKernel(Beacon.grain).source, BOTH],
  ['Pulse', () => generateKernel(Pulse.grain).source, H100],
  ['Ticker RG_TURN_LANES=1', () => `#define RG_TURN_LANES 1u\n${generateKernel(Ticker.grain).source}`, H100],
  // The examples' and benchmarks' grains, as `--backend cuda` places them.
  ['VectorAdd', () => generateKernel(VectorAdd.grain).source, H100],
  // The A/B and stress settings of the bulk job boards (NVRTC defines the GPU runs pass), and the
  // cooperation-off baselines that must keep compiling beside them.
  ['VectorAdd RG_BULK=0', () => `#define RG_BULK 0\n${generateKernel(VectorAdd.grain).source}`, H100],
  ['VectorAdd tiny bulk chunks', () => `#define RG_BULK_MIN_BYTES 1024u\n#define RG_BULK_CHUNK_BYTES 256u\n#define RG_BULK_MIN_ITERS 64u\n#define RG_BULK_CHUNK_ITERS 32u\n${generateKernel(VectorAdd.grain).source}`, H100],
  ['VectorAdd RG_COOP=0 RG_TURN_LANES=1', () => `#define RG_COOP 0\n#define RG_TURN_LANES 1u\n${generateKernel(VectorAdd.grain).source}`, H100],
  ['Person', () => generateKernel(Person.grain, { grains: [Person.grain, Ward.grain] }).source, H100],
  ['Ward', () => generateKernel(Ward.grain, { grains: [Person.grain, Ward.grain] }).source, H100],
  // The audit's new constructs: handlers as properties, ?: on struct/array reply fields, state structs in replies and payloads.
  ['audit Props', () => generateKernel(Props.grain).source, H100],
  ['audit Shapes', () => generateKernel(Shapes.grain).source, H100],
  ['audit Views', () => generateKernel(Views.grain).source, H100],
  ['fleet Device', () => generateKernel(Device.grain, { grains: [Device.grain, Alerts.grain] }).source, H100],
  ['fleet Alerts', () => generateKernel(Alerts.grain, { grains: [Device.grain, Alerts.grain] }).source, H100],
  ['bench Echo', () => generateKernel(Echo.grain).source, H100],
  ['bench Relay', () => generateKernel(BenchRelay.grain).source, H100],
  // Every grain of the conformance suite's fixture module, as the CUDA lane places them (one grain-id order).
  ...conformance.map((g) => [`conformance ${g.name}`, () => generateKernel(g, { grains: conformance }).source, H100] as const),
];

describe.skipIf(!HAVE_NVCC)('every generated unit compiles with nvcc, warnings as errors (static_asserts included)', () => {
  const results = new Map<string, BuildResult>();
  beforeAll(async () => {
    const jobs = UNITS.flatMap(([name, gen, archs]) => archs.map((arch) => ({ id: `${name}/${arch}`, source: gen(), arch })));
    const built = await pool(jobs, 2, (j) => nvccCompileAsync(j.source, j.arch));
    jobs.forEach((j, i) => results.set(j.id, built[i] as BuildResult));
    // A cold build cache (any prelude change rebuilds every unit): ~30 nvcc builds of 12–45 s, two at a time
    // (7 min alone on the 2-core development machine, longer beside the rest of the suite).
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

  it('a layout drift is caught by the emitted static_asserts', () => {
    const src = generateKernel(Account.grain).source.replace('struct rg_Account_state {\n  double balance;\n  unsigned int ops;', 'struct rg_Account_state {\n  float balance;\n  unsigned int ops;');
    expect(src).toContain('float balance;');
    const r = nvccCompile(src, 'sm_90');
    expect(r.ok).toBe(false);
    expect(r.log).toContain('rg_Account_state: size differs from layoutOf');
  });
});

/** nvcc (device and host code, no link) of a hand-written C++ driver that includes a generated unit. */
function compileDriver(driver: string, unitName: string, unit: string, defines: string[]): { ok: boolean; log: string } {
  const dir = mkdtempSync(join(tmpdir(), 'ringgrain-driver-'));
  try {
    writeFileSync(join(dir, unitName), unit);
    const r = spawnSync('nvcc', ['-arch=sm_90', '-std=c++17', '-c', `-I${dir}`, ...defines, fileURLToPath(new URL(driver, import.meta.url)), '-o', join(dir, 'driver.o')], { encoding: 'utf8', timeout: 240_000 });
    return { ok: r.status === 0, log: `${r.stdout}${r.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
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
    const r = compileDriver('../../cuda-backend/test/gpu/ask-probe.cu', 'Echo.cu', k.source, ['-DRG_UNIT="Echo.cu"', '-DRG_ENTRY=rg_Echo_main', `-DRG_SELF_ID=${k.abi.grainId}`, '-DRG_STATE=rg_Echo_state', '-DRG_PROFILE']);
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
