import type { Lane } from './backends.ts';
import { persistenceCases } from './persistence.ts';
import { reminderCases } from './reminders.ts';

/** Every persistent-state case, skipped on a lane for one reason. */
function persistentSkips(reason: string): Record<string, string> {
  return Object.fromEntries(persistenceCases.map((p) => [`${p.name} [store]`, reason]));
}
/*
 * The CUDA kernel keeps dirty marks and reads them out (readDirty: codegen state-meta.ts, cuda-backend
 * state-gather.ts) and runs translated activation hooks (codegen kernel.ts), but the system refuses storage
 * on a backend without all three state methods.
 */
const NO_GPU_STATE =
  'CUDA backend has readDirty (dirty marks + gather kernel) and runs the translated onActivate at activation, but not writeStates (parking an absent actor\'s messages on the device until its stored state is uploaded) nor deactivateIdle (running onDeactivate, freeing directory entries and slots): the system refuses storage and idleMs on CUDA (core system.ts, StorageUnsupportedError)';
/** Reminder cases on a CUDA lane (timers run there: the kernel generates their ticks, codegen timers.ts). */
function reminderSkips(): Record<string, string> {
  return Object.fromEntries(reminderCases.map((c) => [`${c.name} [store]`, `reminders need the class's storage, and ${NO_GPU_STATE}`]));
}

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
    // the whole CUDA lane is skipped by backends.ts when no device/driver.
    ...persistentSkips(NO_GPU_STATE),
    ...reminderSkips(),
  },
  'cuda-isolated': { ...persistentSkips(NO_GPU_STATE), ...reminderSkips() },
};
