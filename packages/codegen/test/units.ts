/**
 * The generated units the compile test builds with nvcc (warnings as errors), each for its archs: shared with
 * prebuild.ts, which builds them in the background from the start of a run, so the test finds them built.
 */
import { generateKernel } from '../src/index.ts';
import { NVCC_DEPTH, type NvccDepth } from './toolchain.ts';
import { Account } from '../../../examples/bank/grains.ts';
import { VectorAdd } from '../../../examples/vector-add/grains.ts';
import { Person, Ward } from '../../../examples/sir/grains.ts';
import { Alerts, Device } from '../../../examples/sensor-fleet/grains.ts';
import { Echo, Relay as BenchRelay } from '../../../bench/grains.ts';
import { Counter, Relay } from './fixtures/k2k.ts';
import { Stats } from './fixtures/stats.ts';
import { CONFORMANCE_GRAINS } from './fixtures/conformance.ts';
import { Guard } from './fixtures/throws.ts';
import { Par } from './fixtures/parallel.ts';
import { Beacon } from './fixtures/timers.ts';
import { Props, Shapes, Views } from './fixtures/audit.ts';
import { Pulse, Ticker } from '../../../test/fixtures/timers.ts';

// sm_90 (H100, the GPU machine) and sm_75, the oldest architecture CUDA 13 still targets (sm_70 was dropped).
export const BOTH = ['sm_90', 'sm_75'] as const;
export const H100 = ['sm_90'] as const;
const conformance = CONFORMANCE_GRAINS.map((c) => c.grain);

export const UNITS: readonly (readonly [string, () => string, readonly string[]])[] = [
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
  [
    'VectorAdd tiny bulk chunks',
    () =>
      `#define RG_BULK_MIN_BYTES 1024u\n#define RG_BULK_CHUNK_BYTES 256u\n#define RG_BULK_MIN_ITERS 64u\n#define ` +
      `RG_BULK_CHUNK_ITERS 32u\n${generateKernel(VectorAdd.grain).source}`,
    H100,
  ],
  [
    'VectorAdd RG_COOP=0 RG_TURN_LANES=1',
    () => `#define RG_COOP 0\n#define RG_TURN_LANES 1u\n${generateKernel(VectorAdd.grain).source}`,
    H100,
  ],
  ['Person', () => generateKernel(Person.grain, { grains: [Person.grain, Ward.grain] }).source, H100],
  ['Ward', () => generateKernel(Ward.grain, { grains: [Person.grain, Ward.grain] }).source, H100],
  // The audit's new constructs: handlers as properties, ?: on struct/array reply fields, state structs in replies and
  // payloads.
  ['audit Props', () => generateKernel(Props.grain).source, H100],
  ['audit Shapes', () => generateKernel(Shapes.grain).source, H100],
  ['audit Views', () => generateKernel(Views.grain).source, H100],
  ['fleet Device', () => generateKernel(Device.grain, { grains: [Device.grain, Alerts.grain] }).source, H100],
  ['fleet Alerts', () => generateKernel(Alerts.grain, { grains: [Device.grain, Alerts.grain] }).source, H100],
  ['bench Echo', () => generateKernel(Echo.grain).source, H100],
  ['bench Relay', () => generateKernel(BenchRelay.grain).source, H100],
  // Every grain of the conformance suite's fixture module, as the CUDA lane places them (one grain-id order).
  ...conformance.map(
    (g) => [`conformance ${g.name}`, () => generateKernel(g, { grains: conformance }).source, H100] as const,
  ),
];

/**
 * Units built to a cubin (NVVM's optimiser and ptxas) in every run, whatever NVCC_DEPTH says: the README's
 * unit on the H100's architecture and on the oldest one. `pnpm test:long` builds every unit so.
 */
export const CUBIN_ALWAYS: readonly (readonly [string, string])[] = [
  ['Account', 'sm_90'],
  ['Account', 'sm_75'],
];

export interface UnitJob {
  readonly id: string;
  readonly source: string;
  readonly arch: string;
  readonly depth: NvccDepth;
}

/**
 * Every (unit, arch) build of UNITS at NVCC_DEPTH, then the CUBIN_ALWAYS builds, in the order the compile test asks for
 * them.
 */
export function unitJobs(): UnitJob[] {
  const sources = new Map<string, string>();
  const jobs: UnitJob[] = UNITS.flatMap(([name, gen, archs]) => {
    const source = gen();
    sources.set(name, source);
    return archs.map((arch) => ({ id: `${name}/${arch}`, source, arch, depth: NVCC_DEPTH }));
  });
  for (const [name, arch] of CUBIN_ALWAYS) {
    if (NVCC_DEPTH === 'cubin') continue; // already in the list above
    jobs.push({ id: `${name}/${arch}/cubin`, source: sources.get(name)!, arch, depth: 'cubin' });
  }
  return jobs;
}
