import type { Backend } from '@ringgrain/core/types';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { InlineBackend } from '@ringgrain/inline-backend';

/**
 * The backends the conformance suite runs against. CPU and inline (handlers on this thread) always; CUDA when
 * `@ringgrain/cuda-backend`
 * exports a `CudaBackend` and its probe says a driver and device are present: in this process (`cuda`), in a GPU
 * host process (`cuda-isolated`, IsolatedCudaBackend), with lane groups (CudaBackend `devices`) on one GPU
 * (`cuda-groups`, opt-in) and over two GPUs (`cuda-2gpu`, where there are two). Anything else is a skip whose
 * reason goes into the suite's name (never a silent pass).
 */
export type Lane = 'cpu' | 'cpu-pool' | 'inline' | 'cuda' | 'cuda-isolated' | 'cuda-groups' | 'cuda-2gpu';
export interface BackendFixture {
  readonly name: Lane;
  /** The placement (and backend key) grains are registered with. */
  readonly placement: 'cpu' | 'inline' | 'cuda';
  /** Why this backend is skipped here, or undefined when it runs. */
  readonly skip: string | undefined;
  /** A fresh backend instance (one per system). */
  make(): Backend;
}

type BackendCtor = new (opts?: Record<string, unknown>) => Backend;

async function cudaFixtures(): Promise<BackendFixture[]> {
  const skippedLane = (
    name: 'cuda' | 'cuda-isolated' | 'cuda-groups' | 'cuda-2gpu',
    reason: string,
  ): BackendFixture => ({
    name,
    placement: 'cuda',
    skip: reason,
    make: () => {
      throw new Error(`${name} backend skipped: ${reason}`);
    },
  });
  const skipped = (reason: string): BackendFixture[] =>
    (['cuda', 'cuda-isolated', 'cuda-groups', 'cuda-2gpu'] as const).map((n) => skippedLane(n, reason));
  if (process.env['RINGGRAIN_CONFORMANCE_CUDA'] === '0') return skipped('disabled by RINGGRAIN_CONFORMANCE_CUDA=0');
  let mod: Record<string, unknown>;
  try {
    // A variable specifier keeps the type checker from requiring the module to exist yet.
    const spec = '@ringgrain/cuda-backend';
    mod = (await import(spec)) as Record<string, unknown>;
  } catch (e) {
    return skipped(`@ringgrain/cuda-backend does not load: ${firstLine(e)}`);
  }
  const Ctor = mod['CudaBackend'] as BackendCtor | undefined;
  if (typeof Ctor !== 'function') return skipped('@ringgrain/cuda-backend has no CudaBackend export yet');
  let gpus = 0;
  try {
    const probe = await new Ctor().probe();
    if (!probe.ok) return skipped(`no CUDA driver/device: ${probe.reason ?? 'probe failed'}`);
    const count = mod['probeCuda'] as
      | ((o?: Record<string, unknown>) => { ok: boolean; deviceCount?: number })
      | undefined;
    gpus = count?.({ requireNvrtc: false }).deviceCount ?? 1;
  } catch (e) {
    return skipped(`CudaBackend probe threw: ${firstLine(e)}`);
  }
  const Isolated = mod['IsolatedCudaBackend'] as BackendCtor | undefined;
  return [
    // One host lane in this process, the default (several) in the GPU host process: both ingress shapes run every case.
    // Actor residency (issue 30: load on first message, preload, idle collection, a full table making room,
    // reminders) as a user gets it: the backend's default, no option.
    { name: 'cuda', placement: 'cuda', skip: undefined, make: () => new Ctor({ hostLanes: 1 }) },
    typeof Isolated === 'function'
      ? { name: 'cuda-isolated', placement: 'cuda', skip: undefined, make: () => new Isolated() }
      : skippedLane('cuda-isolated', '@ringgrain/cuda-backend has no IsolatedCudaBackend export'),
    // Lane groups (devices): two groups on device 0, apart in memory, run every path of a class on several
    // GPUs but peer access. Opt-in (it runs every case again on the one GPU): RINGGRAIN_CONFORMANCE_CUDA_GROUPS=1.
    process.env['RINGGRAIN_CONFORMANCE_CUDA_GROUPS'] === '1'
      ? {
          name: 'cuda-groups',
          placement: 'cuda',
          skip: undefined,
          make: () => new Ctor({ devices: [0, 0], hostLanes: 2, residency: true }),
        }
      : skippedLane(
          'cuda-groups',
          'two lane groups on one GPU run only with RINGGRAIN_CONFORMANCE_CUDA_GROUPS=1 (every case again on device 0)',
        ),
    // Every class over two GPUs, K2K between them through peer access.
    gpus >= 2
      ? {
          name: 'cuda-2gpu',
          placement: 'cuda',
          skip: undefined,
          make: () => new Ctor({ devices: [0, 1], hostLanes: 2, residency: true }),
        }
      : skippedLane('cuda-2gpu', `a class over two GPUs needs two; this machine has ${gpus}`),
  ];
}

function firstLine(e: unknown): string {
  return String((e as Error)?.message ?? e)
    .split('\n')[0]!
    .slice(0, 160);
}

export async function backendFixtures(): Promise<BackendFixture[]> {
  return [
    // One pool thread, and several (each grain class spread over 3 lanes, K2K between threads) whatever
    // the machine's core count.
    { name: 'cpu', placement: 'cpu', skip: undefined, make: () => new CpuBackend({ threads: 1 }) },
    { name: 'cpu-pool', placement: 'cpu', skip: undefined, make: () => new CpuBackend({ threads: 3 }) },
    // Handlers on the test's own thread (a third backend in its own package; core names none).
    { name: 'inline', placement: 'inline', skip: undefined, make: () => new InlineBackend() },
    ...(await cudaFixtures()),
  ];
}
