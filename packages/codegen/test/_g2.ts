import { Stats } from './fixtures/stats.ts';
import { Counter, Relay } from './fixtures/k2k.ts';
import { generateKernel } from '../src/index.ts';
import { writeFileSync } from 'node:fs';
writeFileSync('/tmp/stats.cu', generateKernel(Stats.grain).source);
writeFileSync('/tmp/relay.cu', generateKernel(Relay.grain, { grains: [Counter.grain, Relay.grain] }).source);
writeFileSync('/tmp/counter.cu', generateKernel(Counter.grain, { grains: [Counter.grain, Relay.grain] }).source);
