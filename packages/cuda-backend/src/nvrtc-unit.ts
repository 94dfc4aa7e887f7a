/**
 * How a grain class's unit is handed to NVRTC: the options every compile of it uses (and so the compile-cache
 * key), shared by the backend's launches and `ringgrain build`, which fills the cache ahead of them.
 * The unit is codegen's `source` as generated: its field-offset asserts are RG_OFFSET_ASSERT, a no-op under NVRTC
 * (which has no __builtin_offsetof) and checked by the nvcc and g++ builds of the same unit.
 */
import type { GrainDef } from '@ringgrain/core/backend';
import { CudaUsageError, type CompileCachedOptions } from './driver/index.ts';

/**
 * RINGGRAIN_NVRTC_DEFINES="RG_WORKER_SPIN=16,RG_INGRESS_SPIN=16": overrides of the generated kernel's
 * tuning macros (codegen device.ts BACKOFF), e.g. idle warps that sleep sooner under compute-sanitizer,
 * where every spinning poll is instrumented. Part of the compile-cache key like every NVRTC option.
 */
export function tuningDefines(): string[] {
  const v = process.env['RINGGRAIN_NVRTC_DEFINES'];
  if (!v) return [];
  return v
    .split(',')
    .map((d) => d.trim())
    .filter(Boolean)
    .map((d) => {
      if (!/^RG_[A-Z0-9_]+(=[0-9]+u?)?$/.test(d)) {
        throw new CudaUsageError(
          'RG_BAD_DEFINE',
          `RINGGRAIN_NVRTC_DEFINES: "${d}" is not NAME or NAME=number with NAME starting RG_`,
          { hint: "name the generated kernel's tuning macros (codegen device.ts BACKOFF), comma-separated" },
        );
      }
      return `-D${d}`;
    });
}

/** NVRTC's fast-compile levels (`-Ofc`, NVRTC 12.8 and later): '0' is NVRTC's default (full optimization). */
export const FAST_COMPILE_LEVELS = ['0', 'min', 'mid', 'max'] as const;
export type FastCompileLevel = (typeof FAST_COMPILE_LEVELS)[number];

/**
 * RINGGRAIN_FAST_COMPILE=min|mid|max: NVRTC's fast-compile level for every unit (`-Ofc=<level>`), opt-in. NVRTC
 * 13.0 compiled SIR's Person unit (sm_90) in about a third of the CPU time with `min` (docs/gpu-first-run.md), but
 * the device code differs (less inlining: more calls, a larger stack frame), so the kernel's speed must be measured
 * on the GPU (scripts/device/checks/cold-start.sh). Unset or '0': no option (the default build, as before).
 * Part of the compile-cache key like every NVRTC option.
 */
export function fastCompileOption(): string[] {
  const v = process.env['RINGGRAIN_FAST_COMPILE']?.trim();
  if (v === undefined || v === '' || v === '0') return [];
  if (!(FAST_COMPILE_LEVELS as readonly string[]).includes(v)) {
    const levels = FAST_COMPILE_LEVELS.join(', ');
    throw new CudaUsageError('RG_BAD_FAST_COMPILE', `RINGGRAIN_FAST_COMPILE: "${v}" is not one of ${levels}`, {
      hint: "unset it (full optimization) or name NVRTC's fast-compile level: min, mid or max",
    });
  }
  return [`-Ofc=${v}`];
}

/**
 * RINGGRAIN_PEER_SCOPE (diagnostics for an A/B on a several-GPU host, never for production): `gpu` builds lane groups
 * on several GPUs without RG_PEER (gpu-scope queue synchronization across GPUs, formally racy), `producer` with
 * RG_PEER=2 (only the K2K producer's side system-scope, runtime/ring.cuh), to measure what the system scope costs.
 * Part of the compile-cache key like every NVRTC option.
 */
/**
 * The NVRTC options of a grain class's unit for one architecture ("sm_90": a cubin). `peer`: the class has lane
 * groups on several GPUs, so its queues and pools synchronize at system scope (RG_PEER, runtime/ring.cuh).
 */
export function unitCompileOptions(def: GrainDef, arch: string, cacheDir?: string, peer = false): CompileCachedOptions {
  const scope = process.env['RINGGRAIN_PEER_SCOPE'];
  const peerScope = !peer || scope === 'gpu' ? [] : scope === 'producer' ? ['-DRG_PEER=2'] : ['-DRG_PEER=1'];
  const extraOpts = ['--std=c++17', ...tuningDefines(), ...peerScope, ...fastCompileOption()];
  return { arch, name: `${def.name}.cu`, ...(cacheDir ? { cacheDir } : {}), extraOpts };
}
