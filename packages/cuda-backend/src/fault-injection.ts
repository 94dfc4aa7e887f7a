/**
 * Fault injection and diagnostics for tests and probes: `import { corruptRoute } from
 * '@ringgrain/cuda-backend/testing'`. Kept out of
 * the backend classes and the main entry: an application cannot reach it by accident, and an isolated GPU
 * host refuses it unless the backend was built with `faultInjection: true`.
 */
import { viewAt, type GrainDef } from '@ringgrain/core/backend';
import type { CudaBackend, CudaKernel } from './backend.ts';
import { INTERNALS } from './internals.ts';
import { IsolatedCudaBackend } from './isolated/isolated-backend.ts';

/**
 * Points grain `grainId`'s route in every live kernel's table at an unmapped device address, so that the next
 * K2K send to it faults on the GPU (a sticky fault: the CUDA context is lost). In an IsolatedCudaBackend it
 * happens in the GPU host process (which must have been started with `faultInjection: true`).
 */
export async function corruptRoute(backend: CudaBackend | IsolatedCudaBackend, grainId: number): Promise<void> {
  if (backend instanceof IsolatedCudaBackend) return backend[INTERNALS]().request({ op: 'corruptRoute', grainId });
  const { ctx, setup, live } = backend[INTERNALS]();
  if (!ctx || !setup) throw new Error('corruptRoute: the backend has no CUDA context yet (launch a kernel first)');
  const slots = new Set<CudaKernel['slot']>();
  for (const k of live) {
    const table = new Uint8Array(k.routeTable);
    // Every lane group's entry of the grain (routeCount entries per group).
    for (let g = 0; g < k.groupCount; g++) {
      const v = viewAt(
        k.abi.schemas.RouteEntry,
        table.buffer,
        table.byteOffset + (g * k.plan.grains.length + grainId) * k.routeStride,
      ) as Record<string, number>;
      v['queuesLo'] = 0x10;
      v['queuesHi'] = 0;
      v['partitions'] = 1;
      v['groups'] = 1;
    }
    k.slot.current!.copyToDeviceAsync(k.device, table, k.slot.setup!, k.routesAt);
    slots.add(k.slot);
  }
  for (const s of slots) s.current!.synchronize(s.setup!);
}

/** The pid of an IsolatedCudaBackend's current GPU host process (tests check that a fault replaced it). */
export function gpuHostPid(backend: IsolatedCudaBackend): number | undefined {
  return backend[INTERNALS]().hostPid();
}

/**
 * The next GPU host `backend` starts runs `entry` instead of the package's: a module that serves the same frames
 * (src/isolated/host-loop.ts) over a stand-in for the device, so the isolated path is tested where there is no GPU
 * (test/fixtures/cpu-gpu-host.ts runs the kernels on the CPU).
 */
export function useGpuHostEntry(backend: IsolatedCudaBackend, entry: URL): void {
  backend[INTERNALS]().useHostEntry(entry);
}

/** The live ring kernel of grain `def` on a CudaBackend (bench/gpu-state.ts times its gatherDirty through this). */
export function liveKernel(backend: CudaBackend, def: GrainDef): CudaKernel | undefined {
  for (const k of backend[INTERNALS]().live) if (k.plan.grain === def) return k;
  return undefined;
}

/**
 * The sums of `rg_wave_stats` (codegen device.ts, compiled in with the NVRTC define RG_WAVE_STATS) over
 * every loaded module that has them, read while the kernels run (scripts/k2k-probe.ts --wave-stats);
 * undefined when no module was built with the define.
 */
export function readWaveStats(backend: CudaBackend): BigUint64Array | undefined {
  const { ctx, setup, modules } = backend[INTERNALS]();
  if (!ctx || !setup) return undefined;
  let sum: BigUint64Array | undefined;
  for (const { mod } of modules.values()) {
    let g;
    try {
      g = ctx.getGlobal(mod, 'rg_wave_stats');
    } catch {
      continue; // built without RG_WAVE_STATS
    }
    const part = new BigUint64Array(g.bytes / 8);
    ctx.copyFromDeviceAsync(part, g, setup);
    ctx.synchronize(setup);
    if (!sum) sum = part;
    else for (let i = 0; i < part.length; i++) sum[i] = sum[i]! + part[i]!;
  }
  return sum;
}
