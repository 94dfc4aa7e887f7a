// Plain JS entry of the GPU host process: registers tsx (the host imports TypeScript grain modules), then
// runs gpu-host.ts. Node 20 child processes get loader flags only through execArgv; this works without.
import { register } from 'tsx/esm/api';

register();
await import('./gpu-host.ts');
