/** README: an integer out of its kind's range is a SchemaValidationError naming the field; nothing is sent. */
import { SchemaValidationError, type GrainSystem } from '@ringgrain/core';
import { UnknownMethodError } from '@ringgrain/core/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, imbalance, startSystem } from './backends.ts';
import { Probe } from './grains.ts';

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  let system: GrainSystem;
  beforeAll(async () => {
    system = await startSystem(backend, [Probe]);
  });
  afterAll(() => system.shutdown());

  const bad: Array<[string, string, unknown, string]> = [
    ['seq', 'fractional i32', { n: 1.5 }, 'n'],
    ['seq', 'NaN i32', { n: Number.NaN }, 'n'],
    ['seq', 'Infinity i32', { n: Number.POSITIVE_INFINITY }, 'n'],
    ['seq', 'i32 above range', { n: 2 ** 31 }, 'n'],
    ['seq', 'i32 below range', { n: -(2 ** 31) - 1 }, 'n'],
    ['seq', 'string for i32', { n: '3' }, 'n'],
    ['seq', 'missing field', {}, 'n'],
    ['bump', 'fractional', { by: 0.5 }, 'by'],
    ['flip', 'number for bool', { on: 1 }, 'on'],
    ['vec', 'vec over its max', { xs: new Float64Array(9), fixed: [1, 2, 3] }, 'xs'],
    ['vec', 'fixed array too short', { xs: [], fixed: [1, 2] }, 'fixed'],
    ['vec', 'i16 element out of range', { xs: [], fixed: [1, 2, 40000] }, 'fixed'],
  ];

  it.each(bad)(
    '%s: %s throws SchemaValidationError naming the field, sends nothing',
    async (method, _what, payload, field) => {
      const before = system.metrics()['Probe']!.sent;
      const ref = system.grain(Probe, 1) as unknown as Record<string, (p: unknown) => Promise<unknown>> & {
        tell: Record<string, (p: unknown) => unknown>;
      };
      let err: unknown;
      try {
        ref.tell[method]!(payload);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(SchemaValidationError);
      expect((err as SchemaValidationError).code).toBeTypeOf('string');
      expect((err as Error).message).toContain(field);
      // The ask form rejects (or throws) the same way.
      let askErr: unknown;
      try {
        await ref[method]!(payload);
      } catch (e) {
        askErr = e;
      }
      expect(askErr).toBeInstanceOf(SchemaValidationError);
      await system.idle();
      expect(system.metrics()['Probe']!.sent).toBe(before);
    },
  );

  it('boundary values pass and round trip; an integer state field wraps like its typed array', async () => {
    const p = system.grain(Probe, 2);
    p.tell.seq({ n: 2 ** 31 - 1 });
    p.tell.bump({ by: 300 }); // u8 300 → 44, i8 300 → 44
    p.tell.bump({ by: 100 }); // u8 144, i8 144 → -112
    const r = await p.read({});
    expect(r.last).toBe(2 ** 31 - 1);
    expect(r.small).toBe(144);
    expect(r.signed).toBe(-112);
    expect(await p.flip({ on: true })).toEqual({ on: true });
    expect((await p.read({})).flag).toBe(true);
    const v = await p.vec({ xs: [1.5, 2.5], fixed: [-32768, 32767, 1] });
    expect(v.n).toBe(2);
    expect(v.sum).toBe(1.5 + 2.5 + (-32768 + 32767 + 1));
    expect(Array.from(v.xs)).toEqual([1.5, 2.5]);
    await system.idle();
    expect(await imbalance(system)).toEqual([]);
  });

  it('an undeclared method is UnknownMethodError', () => {
    expect(() => system.tellMany(Probe, 'nope' as 'seq', { key: [1], n: [1] })).toThrow(UnknownMethodError);
  });
});
