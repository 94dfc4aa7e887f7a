// Plain JS entry: Node 20 does not pass ESM loader flags (--import tsx) to worker threads, so the worker
// registers tsx itself (grain modules may be TypeScript) before importing the worker: the built
// pool-worker.js in an installed package, pool-worker.ts in this repository.
import { existsSync } from 'node:fs';
import { register } from 'tsx/esm/api';

register();
const built = new URL('./pool-worker.js', import.meta.url);
await import(existsSync(built) ? built.href : new URL('./pool-worker.ts', import.meta.url).href);
