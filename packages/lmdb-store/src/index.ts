export { LmdbStore, type LmdbStoreOptions } from './store.ts';
