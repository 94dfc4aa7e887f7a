import type { Lane } from './backends.ts';

/**
 * The explicit SKIP list: backend → case name → reason. A case listed here is reported as skipped with
 * its reason in the test name; every other case must pass on every backend that is available.
 * Keep each reason specific (what is missing, and where it will be done), and remove the entry the
 * moment the backend supports the case.
 */
export const SKIPS: Readonly<Record<Lane, Readonly<Record<string, string>>>> = {
  cpu: {},
  'cpu-pool': {},
  inline: {},
  // The cuda lane runs with actor residency (the CudaBackend default): every persistence and reminder case runs
  // (all 47 cases passed on the cuda, cuda-isolated and cuda-groups lanes on the H200 at 76943ef).
  // Injecting a raw slot goes through the host ring API, which works for CUDA too (pinned memory);
  // the whole CUDA lane is skipped by backends.ts when no device/driver.
  cuda: {},
  // The isolated backend's GPU host runs the same kernels with residency; their state access and load/evicted
  // reports cross its IPC channel (cuda-backend isolated/host-loop.ts, host-client.ts, frames.ts).
  'cuda-isolated': {},
  // Lane groups (CudaBackend devices) run the cuda lane's cases, with residency on.
  'cuda-groups': {},
  'cuda-2gpu': {},
};
