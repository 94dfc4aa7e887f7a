/**
 * @ringgrain/cpu-backend/consumer: the CPU backend's consumer as building blocks, for a backend that runs
 * it elsewhere (@ringgrain/inline-backend runs it on the host thread): the Dispatcher (a lane's intake,
 * turns, states, timers and K2K sends), the kernel memory it reads (lanes, K2K rings, the overflow area),
 * state access and the timer clock. CpuBackend itself is the package's root entry.
 */
export { Dispatcher } from './dispatcher.ts';
export { loadedGrain, type LoadedGrain } from './grain-load.ts';
export {
  OVERFLOW_WORD,
  allocateKernelBuffers,
  controlDoorbell,
  k2kLeft,
  peerInfo,
  type Doorbell,
  type KernelBuffers,
  type PeerInfo,
} from './memory.ts';
export { StateAccess } from './state-access.ts';
export type { StateOp, StateOut } from './protocol.ts';
export type { LanePersistence } from './lane-states.ts';
export { TimerClockHost, allocateTimerClock, type TimerClockInit } from './timer-clock.ts';
