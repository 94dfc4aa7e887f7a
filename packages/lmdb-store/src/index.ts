export { LmdbStore, type LmdbStoreOptions } from './store.ts';
export { StateStoreLockedError, LOCK_FILE } from './lock.ts';
