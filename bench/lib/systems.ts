/**
 * The systems the GPU benchmarks, probes and device records measure, built one way: Relay on the CUDA
 * backend (the K2K walks and the hop chain: bench/grains.ts, scripts/gpu-measure.ts relayHop/relayWalks)
 * and Account (the host path: lone asks, pipelined asks, tells).
 */
import { GrainSystem, type RegisterOptions, type SystemOptions } from '../../packages/core/src/index.ts';
import type { Backend } from '../../packages/core/src/entries/types.ts';
import type { CudaBackend } from '../../packages/cuda-backend/src/index.ts';
import { Account } from '../../examples/bank/grains.ts';
import { RELAY_ACTORS, Relay } from '../grains.ts';

/** Quiet, no signal handlers, a minute for the first handshake (a cold NVRTC compile of the class). */
export const QUIET = { logLevel: 'warn', handleSignals: false, handshakeTimeoutMs: 60_000 } as const;
/** QUIET, and two minutes for an ask (a walk's closing asks wait behind millions of K2K messages). */
export const PATIENT = { ...QUIET, askTimeoutMs: 120_000 } as const;

type Quiet = Omit<SystemOptions, 'backends'>;

/** Relay on `backend` (placement cuda): RELAY_ACTORS actors, inbound and reply rings of 1,024 slots. */
export function relaySystem(backend: CudaBackend, options: Quiet = PATIENT): GrainSystem {
  return new GrainSystem({ backends: { cuda: backend }, ...options }).register(Relay, {
    placement: 'cuda',
    maxActors: RELAY_ACTORS,
    ringCapacity: 1024,
    replyCapacity: 1024,
  });
}

/** Account on `backend`, placed under `name`: 4,096 actors and the default rings unless `register` says otherwise. */
export function accountSystem(
  backend: Backend,
  name: string,
  options: Quiet = PATIENT,
  register: RegisterOptions = {},
): GrainSystem {
  return new GrainSystem({ backends: { [name]: backend }, ...options }).register(Account, {
    placement: name,
    maxActors: 4096,
    ...register,
  });
}
