export { CpuBackend, type CpuBackendOptions } from './backend.ts';
export type { PoolStats } from './pool.ts';
export * from './errors.ts';
// The consumer's building blocks (for a backend that reuses it, e.g. @ringgrain/inline-backend): ./consumer.ts,
// the package's `@ringgrain/cpu-backend/consumer` entry.
