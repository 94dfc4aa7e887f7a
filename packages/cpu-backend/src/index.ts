export { CpuBackend, type CpuBackendOptions } from './backend.ts';
export type { PoolStats } from './pool.ts';
export * from './errors.ts';
// Building blocks for backends that reuse the CPU consumer (e.g. @ringgrain/inline-backend).
export { Dispatcher } from './dispatcher.ts';
export { loadedGrain, type LoadedGrain } from './grain-load.ts';
export { OVERFLOW_WORD, allocateKernelBuffers, controlDoorbell, k2kLeft, peerInfo, type Doorbell, type KernelBuffers, type PeerInfo } from './memory.ts';
export { StateAccess } from './state-access.ts';
export type { StateOp, StateOut } from './protocol.ts';
export type { LanePersistence } from './lane-states.ts';
export { TimerClockHost, allocateTimerClock, type TimerClockInit } from './timer-clock.ts';
