// A program that forgets `await system.shutdown()` (forgot-shutdown.test.ts runs it as a child process).
import { GrainSystem } from '@ringgrain/core';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { Stored } from '../fixtures/stored.ts';

const system = new GrainSystem({ backends: { cpu: new CpuBackend({ threads: 1 }) }, logLevel: 'warn' });
system.register(Stored, { placement: 'cpu' });
await system.start();
console.log(JSON.stringify(await system.grain(Stored, 1).add({ n: 2 })));
