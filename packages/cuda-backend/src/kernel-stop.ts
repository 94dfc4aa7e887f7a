/**
 * Stopping a running ring kernel at dispose: STOP asked if core did not (it timed out before asking, or the launch
 * handshake failed), then replies nobody will read drained (a kernel finishing its drain never waits on a full reply
 * ring) until its stream completes, or the stop timeout passes (KernelStuckError: the kernel is left running).
 */
import { performance } from 'node:perf_hooks';
import { CONTROL, KernelState, RingConsumer, type Ring } from '@ringgrain/core/backend';
import type { DeviceSlot } from './device-slot.ts';
import type { CudaContext, CudaStream } from './driver/index.ts';
import { KernelStuckError } from './errors.ts';

export type StopOutcome = 'exited' | 'poisoned' | KernelStuckError;

export async function stopKernel(
  grain: string,
  slot: DeviceSlot,
  ctx: CudaContext,
  stream: CudaStream,
  control: Int32Array,
  reply: Ring,
  stopTimeoutMs: number,
): Promise<StopOutcome> {
  if (Atomics.load(control, CONTROL.requested) !== KernelState.STOP) {
    Atomics.store(control, CONTROL.requested, KernelState.STOP);
    Atomics.store(control, CONTROL.requestEpoch, (Atomics.load(control, CONTROL.requestEpoch) + 1) | 0);
  }
  const consumer = new RingConsumer(reply);
  const deadline = performance.now() + stopTimeoutMs;
  for (;;) {
    while (consumer.peek() >= 0) consumer.release();
    try {
      if (ctx.streamQuery(stream) === 'complete') return 'exited';
    } catch (e) {
      slot.poisoned(e as Error);
      return 'poisoned';
    }
    if (performance.now() > deadline) return new KernelStuckError(grain, stopTimeoutMs);
    await new Promise<void>((r) => setTimeout(r, 1));
  }
}
