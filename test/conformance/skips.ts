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
  cuda: {
    // Injecting a raw slot goes through the host ring API, which works for CUDA too (pinned memory);
    // nothing is skipped up front: the whole CUDA lane is skipped by backends.ts when no device/driver.
  },
  'cuda-isolated': {},
};
