export * from './errors.ts';
export * from './schema/index.ts';
export * from './grain.ts';
export * from './protocol.ts';
export * from './ring.ts';
export type * from './backend.ts';
