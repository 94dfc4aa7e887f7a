export { InlineBackend, type InlineBackendOptions } from './backend.ts';
export * from './errors.ts';
