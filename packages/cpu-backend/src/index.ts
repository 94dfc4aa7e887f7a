export { CpuBackend } from './backend.ts';
export * from './errors.ts';
