export { PostgresStore, type PostgresStoreOptions } from './store.ts';
