/**
 * The compile pool's worker side (nvrtc-pool.ts): each worker thread opens NVRTC itself (the library file the main
 * thread opened, so the cache key's NVRTC version holds) and compiles one unit at a time, synchronously on its
 * own thread. The image's buffer is transferred back, not copied.
 */
import { performance } from 'node:perf_hooks';
import { loadNvrtc, type NvrtcCompileOptions, type NvrtcOutput } from './nvrtc.ts';

export interface NvrtcJob {
  readonly source: string;
  readonly opts: NvrtcCompileOptions;
}

export interface NvrtcJobResult extends NvrtcOutput {
  /** NVRTC's own time on the worker (create, compile, read back), without the wait in the queue. */
  readonly compileMs: number;
}

export function createHandler(init: {
  libPath: string;
}): (job: NvrtcJob) => { result: NvrtcJobResult; transfer: ArrayBuffer[] } {
  const nvrtc = loadNvrtc({ env: { ...process.env, RINGGRAIN_NVRTC: init.libPath } });
  return (job) => {
    const t0 = performance.now();
    const out = nvrtc.compile(job.source, job.opts);
    const compileMs = performance.now() - t0;
    return { result: { ...out, compileMs }, transfer: [out.image.buffer as ArrayBuffer] };
  };
}
