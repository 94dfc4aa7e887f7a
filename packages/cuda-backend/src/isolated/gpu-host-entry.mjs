// Plain JS entry of the GPU host process: registers tsx (the host imports grain modules, which may be
// TypeScript), then runs the host: the built gpu-host.js in an installed package, gpu-host.ts in this
// repository. Node 20 child processes get loader flags only through execArgv; this works without.
import { existsSync } from 'node:fs';
import { register } from 'tsx/esm/api';

register();
const built = new URL('./gpu-host.js', import.meta.url);
await import(existsSync(built) ? built.href : new URL('./gpu-host.ts', import.meta.url).href);
