// Plain JS entry: Node 20 does not pass ESM loader flags (--import tsx) to worker threads, so the worker
// registers tsx itself before importing the TypeScript worker and the user's grain modules.
import { register } from 'tsx/esm/api';

register();
await import('./worker.ts');
