/**
 * A pool thread whose teardown is slow (a loaded machine; here an 'exit' listener of the handler's own that
 * holds it for 4 s): the Worker's 'exit' event comes late, but the thread wrote that it is exiting as its
 * last JS (protocol.ts THREAD_EXITING), so the ask on its lane fails as a death (WorkerDiedError, the lane
 * moves to a new thread) and not, 1 s in, as a stalled heartbeat that faults the whole kernel.
 */
import { GrainSystem } from '@ringgrain/core';
import { afterEach, describe, expect, it } from 'vitest';
import { CpuBackend, WorkerDiedError } from '../src/index.ts';
import { Crashy } from './fixtures.ts';

let system: GrainSystem | undefined;
afterEach(async () => {
  await system?.shutdown({ mode: 'reject', timeoutMs: 1000 });
  system = undefined;
});

describe('a pool thread that takes long to end', () => {
  const title =
    'its death is known from the word it wrote, before its exit event: the lane restarts, the kernel keeps serving';
  it(title, async () => {
    const backends = { cpu: new CpuBackend({ threads: 1 }) };
    system = new GrainSystem({ backends, logLevel: 'silent', handleSignals: false, heartbeatTimeoutMs: 1000 });
    system.register(Crashy, { placement: 'cpu' });
    const faults: Error[] = [];
    system.on('fault', (e) => faults.push(e.error));
    await system.start();
    expect(await system.grain(Crashy, 1).ping({})).toEqual({ n: 1 });
    const e = await system
      .grain(Crashy, 1)
      .slowExit({ ms: 4000 })
      .then(
        () => undefined,
        (x: unknown) => x,
      );
    expect(e).toBeInstanceOf(WorkerDiedError);
    expect(faults).toEqual([]);
    expect(system.kernel(Crashy).state).toBe('active');
    expect(await system.grain(Crashy, 1).ping({})).toEqual({ n: 1 });
  }, 60_000);
});
