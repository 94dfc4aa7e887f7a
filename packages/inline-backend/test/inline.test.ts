/**
 * The inline backend runs handlers on the calling thread (what makes breakpoints in handlers work), costs
 * nothing while idle, and needs the registered class (a plan without one fails typed). The whole
 * conformance suite runs on it as its own lane (test/conformance).
 */
import { threadId } from 'node:worker_threads';
import { GrainSystem, Grain, t, type TypesOf } from '@ringgrain/core';
import { afterEach, describe, expect, it } from 'vitest';
import { InlineBackend, InlineNoClassError } from '../src/index.ts';

const seen: number[] = [];

export class Probe extends Grain({
  name: 'Probe',
  module: import.meta.url,
  state: t.struct({ n: t.u32 }),
  methods: { hit: { request: t.struct({}), reply: t.struct({ n: t.u32 }) } },
}) {
  hit(s: P['state']): P['reply']['hit'] {
    // Not translatable to CUDA, and it need not be: this handler only ever runs inline.
    seen.push(threadId);
    s.n += 1;
    return { n: s.n };
  }
}
type P = TypesOf<typeof Probe>;

const systems: GrainSystem[] = [];
afterEach(async () => {
  for (const s of systems.splice(0)) await s.shutdown();
});

describe('InlineBackend', () => {
  it('runs handlers on the thread that sends to them', async () => {
    const s = new GrainSystem({ backends: { inline: new InlineBackend() }, logLevel: 'silent', handleSignals: false });
    systems.push(s);
    s.register(Probe, { placement: 'inline' });
    await s.start();
    expect(await s.grain(Probe, 1).hit({})).toEqual({ n: 1 });
    expect(await s.grain(Probe, 1).hit({})).toEqual({ n: 2 });
    expect(seen).toEqual([threadId, threadId]);
  });

  it('refuses a plan that carries no grain class, naming the grain', async () => {
    const b = new InlineBackend();
    const k = await b.createKernel({
      grainId: 0,
      grain: Probe.grain,
      grains: [Probe.grain],
      options: { slotSize: 256, ringCapacity: 16, replyCapacity: 16, maxActors: 16, turnBudget: 1000 },
      logger: undefined as never,
    });
    await expect(k.start()).rejects.toThrow(InlineNoClassError);
  });
});
