/**
 * Probe: how much memory a tell loop that never yields takes when its kernel does not consume (inline
 * backend, kernel deactivated, 1024-slot ring), with the default maxQueuedBytes (256 MiB) or none.
 *   npx tsx bench/probes/spill-bound.ts [unbounded]
 * Prints the sends accepted, the error that stopped the loop, and the RSS growth.
 */
import { GrainSystem } from '@ringgrain/core';
import type { QueueLimitError } from '@ringgrain/core/errors';
import { InlineBackend } from '../../packages/inline-backend/src/index.ts';
import { Probe } from '../../test/readme-programs/grains.ts';

const unbounded = process.argv[2] === 'unbounded';
const s = new GrainSystem({
  backends: { inline: new InlineBackend() },
  logLevel: 'silent',
  handleSignals: false,
  ...(unbounded ? { maxQueuedBytes: Number.MAX_SAFE_INTEGER } : {}),
});
s.register(Probe, { placement: 'inline', ringCapacity: 1024 });
await s.start();
await s.kernel(Probe).deactivate();
const ref = s.grain(Probe, 1);
const rss0 = process.memoryUsage().rss;
let n = 0;
let error = '';
for (; n < 5_000_000; n++) {
  try {
    ref.tell.seq({ n: n + 1 });
  } catch (e) {
    error = (e as QueueLimitError).code;
    break;
  }
}
const grown = Math.round((process.memoryUsage().rss - rss0) / 2 ** 20);
console.log(
  JSON.stringify({
    maxQueuedBytes: unbounded ? 'unbounded' : 'default (256 MiB)',
    accepted: n,
    error,
    rssGrowthMiB: grown,
  }),
);
process.exit(0);
