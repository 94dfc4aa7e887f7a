/**
 * probeCuda: is there a usable CUDA here? Never throws. Used by the backend's `auto` placement and by
 * tests to skip the GPU lane with the reason. Takes no context and no GPU memory.
 */
import { loadCudaDriver } from './driver.ts';
import type { DeviceInfo } from './driver.ts';
import { CudaUnavailableError } from './errors.ts';
import type { DiscoveryEnv } from './library.ts';
import { loadNvrtc } from './nvrtc.ts';

export interface CudaProbeOk {
  readonly ok: true;
  readonly libcudaPath: string;
  /** e.g. 13000 */
  readonly driverVersion: number;
  /** e.g. "13.0" */
  readonly driverVersionString: string;
  readonly deviceCount: number;
  /** The device that would be used (ordinal 0 unless asked otherwise). */
  readonly device: DeviceInfo;
  /** NVRTC, when found (always when `requireNvrtc`). */
  readonly nvrtc: { readonly path: string; readonly version: string } | null;
}

export interface CudaProbeFailed {
  readonly ok: false;
  /** One line saying why, fit for a log line or a test-skip message. */
  readonly reason: string;
  readonly error: unknown;
}

export type CudaProbe = CudaProbeOk | CudaProbeFailed;

export interface ProbeOptions {
  readonly device?: number;
  /** Fail when NVRTC is missing (default true: the backend compiles kernels at launch). */
  readonly requireNvrtc?: boolean;
  /** Environment for discovery (default process.env, cached driver). */
  readonly env?: DiscoveryEnv;
}

export function probeCuda(opts: ProbeOptions = {}): CudaProbe {
  try {
    const driver = loadCudaDriver(opts.env ? { env: opts.env } : {});
    const device = driver.deviceInfo(opts.device ?? 0);
    let nvrtc: CudaProbeOk['nvrtc'] = null;
    try {
      const n = loadNvrtc(opts.env ? { env: opts.env } : {});
      nvrtc = { path: n.libPath, version: n.versionString };
    } catch (e) {
      if (opts.requireNvrtc ?? true) throw e;
    }
    return {
      ok: true,
      libcudaPath: driver.libPath,
      driverVersion: driver.version,
      driverVersionString: driver.versionString,
      deviceCount: driver.deviceCount,
      device,
      nvrtc,
    };
  } catch (error) {
    const reason =
      error instanceof CudaUnavailableError
        ? error.reason
        : error instanceof Error
          ? `${error.name}: ${error.message.split('\n')[0] ?? ''}`
          : String(error);
    return { ok: false, reason, error };
  }
}
