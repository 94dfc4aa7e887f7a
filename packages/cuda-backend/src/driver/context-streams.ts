/**
 * A CudaContext's streams: always CU_STREAM_NON_BLOCKING, so nothing ever runs on the legacy default stream,
 * which would wait behind a persistent kernel.
 */
import { performance } from 'node:perf_hooks';
import { CU_STREAM_NON_BLOCKING, CUDA_ERROR_NOT_READY, CUDA_SUCCESS } from './constants.ts';
import type { ContextCore } from './context-core.ts';
import type { CudaStream, StreamState } from './context-types.ts';

export class ContextStreams {
  constructor(private readonly core: ContextCore) {}

  create(): CudaStream {
    const c = this.core;
    c.makeCurrent();
    c.check('cuStreamCreate', c.driver.api.cuStreamCreate(c.out64, CU_STREAM_NON_BLOCKING));
    const handle = c.out64[0] ?? 0n;
    c.streams.add(handle);
    return { handle };
  }

  destroy(stream: CudaStream): void {
    const c = this.core;
    c.owned(c.streams, stream.handle, 'stream');
    c.makeCurrent();
    c.check('cuStreamDestroy_v2', c.driver.api.cuStreamDestroy_v2(stream.handle));
    c.streams.delete(stream.handle);
  }

  query(stream: CudaStream): StreamState {
    const c = this.core;
    c.owned(c.streams, stream.handle, 'stream');
    c.makeCurrent();
    const r = c.driver.api.cuStreamQuery(stream.handle);
    if (r === CUDA_SUCCESS) return 'complete';
    if (r === CUDA_ERROR_NOT_READY) return 'pending';
    throw c.driver.error('cuStreamQuery', r);
  }

  synchronize(stream: CudaStream): void {
    const c = this.core;
    c.owned(c.streams, stream.handle, 'stream');
    c.makeCurrent();
    c.check('cuStreamSynchronize', c.driver.api.cuStreamSynchronize(stream.handle));
  }

  async waitFor(stream: CudaStream, opts: { timeoutMs: number; pollMs?: number }): Promise<boolean> {
    const deadline = performance.now() + opts.timeoutMs;
    for (;;) {
      if (this.query(stream) === 'complete') return true;
      if (performance.now() >= deadline) return false;
      await new Promise<void>((resolve) => setTimeout(resolve, opts.pollMs ?? 1));
    }
  }

  /**
   * The streams that still have work (dispose refuses then). A stream whose query fails (a sticky fault)
   * is not busy: its result goes to `failed`.
   */
  busy(failed: (call: string, r: number) => void): bigint[] {
    const c = this.core;
    const busy: bigint[] = [];
    for (const s of c.streams) {
      const r = c.driver.api.cuStreamQuery(s);
      if (r === CUDA_ERROR_NOT_READY) busy.push(s);
      else if (r !== CUDA_SUCCESS) failed('cuStreamQuery', r);
    }
    return busy;
  }
}
