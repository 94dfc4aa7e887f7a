/** README: large replies into your own arrays (`into`), ReplyTargetError at the call or on a short array. */
import type { GrainSystem } from '@ringgrain/core';
import { ReplyTargetError } from '@ringgrain/core/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, imbalance, startSystem } from './backends.ts';
import { Probe } from './grains.ts';

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  let system: GrainSystem;
  beforeAll(async () => {
    system = await startSystem(backend, [Probe]);
  });
  afterAll(() => system.shutdown());

  it('the reply field is the caller array itself (exact length) or a view of its first n', async () => {
    const p = system.grain(Probe, 1);
    const exact = new Float64Array(3);
    const r1 = await p.vec({ xs: [1, 2, 3], fixed: [0, 0, 0] }, { into: { xs: exact } });
    expect(Array.from(exact)).toEqual([1, 2, 3]);
    expect(r1.xs.buffer).toBe(exact.buffer);
    const big = new Float64Array(8).fill(-1);
    const r2 = await p.vec({ xs: [4, 5], fixed: [0, 0, 0] }, { into: { xs: big } });
    expect(r2.xs.length).toBe(2);
    expect(r2.xs.buffer).toBe(big.buffer);
    expect(Array.from(big.subarray(0, 2))).toEqual([4, 5]);
    // An empty reply array.
    const r3 = await p.vec({ xs: [], fixed: [0, 0, 0] }, { into: { xs: big } });
    expect(r3.xs.length).toBe(0);
  });

  it('a wrong kind or a non-array field throws ReplyTargetError at the call, sending nothing', async () => {
    const p = system.grain(Probe, 2);
    const before = system.metrics()['Probe']!.sent;
    const call = (into: Record<string, unknown>) => {
      try {
        return p.vec({ xs: [1], fixed: [0, 0, 0] }, { into } as never);
      } catch (e) {
        return Promise.reject(e);
      }
    };
    await expect(call({ xs: new Float32Array(8) })).rejects.toBeInstanceOf(ReplyTargetError);
    await expect(call({ n: new Uint32Array(1) })).rejects.toBeInstanceOf(ReplyTargetError);
    await expect(call({ nope: new Float64Array(1) })).rejects.toBeInstanceOf(ReplyTargetError);
    await expect(call({ xs: [0, 0, 0] })).rejects.toBeInstanceOf(ReplyTargetError);
    await system.idle();
    expect(system.metrics()['Probe']!.sent).toBe(before);
  });

  it('an array too short for the reply rejects the ask with ReplyTargetError; the actor runs on', async () => {
    const p = system.grain(Probe, 3);
    const short = new Float64Array(2);
    const e = await p.vec({ xs: [1, 2, 3, 4], fixed: [0, 0, 0] }, { into: { xs: short } }).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(ReplyTargetError);
    expect((e as ReplyTargetError).code).toBeTypeOf('string');
    expect((await p.vec({ xs: [1, 2], fixed: [0, 0, 0] }, { into: { xs: short } })).xs.length).toBe(2);
    await system.idle();
    expect(await imbalance(system)).toEqual([]);
  });
});
