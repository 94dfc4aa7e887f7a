/**
 * Options errors are typed everywhere (issue 35.4): each package's options out of range throw its own
 * error class with a code and a hint, at construction, never a bare RangeError or a timer that fires at
 * once (a NaN or negative timeout did).
 */
import { GrainSystem, type RinggrainError } from '@ringgrain/core';
import { SystemOptionsError } from '@ringgrain/core/errors';
import { CpuBackend, CpuBackendOptionsError } from '@ringgrain/cpu-backend';
import { CudaBackend, CudaBackendOptionsError, IsolatedCudaBackend } from '@ringgrain/cuda-backend';
import { InlineBackend, InlineBackendOptionsError } from '@ringgrain/inline-backend';
import { expect, it } from 'vitest';

function typed(f: () => unknown, cls: abstract new (...a: never[]) => RinggrainError, code: string): void {
  let e: unknown;
  try {
    f();
  } catch (x) {
    e = x;
  }
  expect(e).toBeInstanceOf(cls);
  expect(e).toMatchObject({ code, hint: expect.any(String) });
}

it('GrainSystem: timeouts, maxQueuedBytes and replySpinMicros out of range are SystemOptionsError', () => {
  const make = (o: Record<string, unknown>) => () =>
    new GrainSystem({ backends: {}, handleSignals: false, logLevel: 'silent', ...o });
  for (const name of [
    'askTimeoutMs',
    'queueFullTimeoutMs',
    'handshakeTimeoutMs',
    'heartbeatTimeoutMs',
    'signalExitMs',
    'maxQueuedBytes',
  ]) {
    for (const v of [0, -5, Number.NaN, '10']) typed(make({ [name]: v }), SystemOptionsError, 'SYSTEM_OPTIONS');
  }
  typed(make({ replySpinMicros: -1 }), SystemOptionsError, 'SYSTEM_OPTIONS');
  expect(() => make({ replySpinMicros: 0, askTimeoutMs: 1 })()).not.toThrow();
});

it('each backend types its own options errors', () => {
  typed(() => new CpuBackend({ threads: 0 }), CpuBackendOptionsError, 'CPU_BACKEND_OPTIONS');
  typed(() => new CudaBackend({ queueCapacity: 3 }), CudaBackendOptionsError, 'CUDA_BACKEND_OPTIONS');
  typed(() => new IsolatedCudaBackend({ arenaBytes: -1 }), CudaBackendOptionsError, 'CUDA_BACKEND_OPTIONS');
  typed(() => new IsolatedCudaBackend({ hostTimeoutMs: Number.NaN }), CudaBackendOptionsError, 'CUDA_BACKEND_OPTIONS');
  for (const sliceMs of [0, -1, Number.NaN])
    typed(() => new InlineBackend({ sliceMs }), InlineBackendOptionsError, 'INLINE_BACKEND_OPTIONS');
});
