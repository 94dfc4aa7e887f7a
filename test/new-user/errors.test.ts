/**
 * What a new user trips over (issue 34.3), as errors that say what is wrong and what to do:
 * - a handler returning a value outside its reply schema: the error says it is the handler's return value,
 *   names the field, its value and what fits, whole in the default 256-byte reply slot (it was a hint
 *   about sending a payload, cut by "[message cut to fit slot]");
 * - a NaN or ±Infinity key is named so (JSON showed it as null);
 * - placement 'cuda' with no `cuda` entry in backends: the hint is to pass a CudaBackend (it was to install
 *   a driver).
 */
import { GrainSystem, HandlerError, InvalidKeyError, SchemaValidationError } from '@ringgrain/core';
import { BackendUnavailableError } from '@ringgrain/core/errors';
import type { Backend } from '@ringgrain/core/types';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { InlineBackend } from '@ringgrain/inline-backend';
import { describe, expect, it } from 'vitest';
import { Strict } from './grains.ts';

const backends: Array<[string, () => Backend]> = [
  ['cpu', () => new CpuBackend({ threads: 1 })],
  ['inline', () => new InlineBackend()],
];

describe('new-user errors', () => {
  for (const [name, make] of backends) {
    it(
      `${name}: a reply outside its schema names the ` + `handler's return value, the field and its value, uncut`,
      async () => {
        const s = new GrainSystem({ backends: { b: make() }, logLevel: 'silent', handleSignals: false });
        s.register(Strict, { placement: 'b' });
        await s.start();
        try {
          expect(await s.grain(Strict, 1).half({ x: 4 })).toEqual({ n: 2 });
          const e = await s
            .grain(Strict, 1)
            .half({ x: 3 })
            .then(
              () => undefined,
              (err: unknown) => err,
            );
          expect(e).toBeInstanceOf(HandlerError);
          const m = (e as Error).message;
          expect(m).toContain(
            `Strict.half failed: reply does not match its schema: the handler's return value has field "n" ` +
              '= 1.5; expected an integer',
          );
          expect(m).not.toContain('cut to fit');
          expect(m).not.toContain('send a payload');
          const nested = await s
            .grain(Strict, 2)
            .point({})
            .then(
              () => undefined,
              (err: unknown) => err,
            );
          expect((nested as Error).message).toContain(`the handler's return value has field "at.tag" = 300; too large`);
          // The actor is fine afterwards: the failed reply changed nothing else.
          s.grain(Strict, 1).tell.bump({});
          await s.idle();
        } finally {
          await s.shutdown();
        }
      },
    );

    it(`${name}: NaN and ±Infinity keys are named so`, async () => {
      const s = new GrainSystem({ backends: { b: make() }, logLevel: 'silent', handleSignals: false });
      s.register(Strict, { placement: 'b' });
      await s.start();
      try {
        for (const [key, shown] of [
          [NaN, 'NaN'],
          [Infinity, 'Infinity'],
          [-Infinity, '-Infinity'],
          [1.5, '1.5'],
        ] as const) {
          const e = await Promise.resolve()
            .then(() => s.grain(Strict, key).half({ x: 2 }))
            .then(
              () => undefined,
              (err: unknown) => err,
            );
          expect(e, String(key)).toBeInstanceOf(InvalidKeyError);
          expect((e as Error).message).toContain(`got key ${shown};`);
        }
        expect(() => s.tellMany(Strict, 'bump', { key: Float64Array.from([1, NaN]) })).toThrow(SchemaValidationError);
        expect(() => s.tellMany(Strict, 'bump', { key: Float64Array.from([1, NaN]) })).toThrow(
          'row 1: NaN is not a safe integer key',
        );
        expect(() => s.tellMany(Strict, 'bump', { key: Float64Array.from([Infinity]) })).toThrow(
          'row 0: Infinity is not a safe integer key',
        );
      } finally {
        await s.shutdown();
      }
    });
  }

  it("placement 'cuda' with no cuda entry in backends: the hint is to pass a CudaBackend", async () => {
    const s = new GrainSystem({
      backends: { cpu: new CpuBackend({ threads: 1 }) },
      logLevel: 'silent',
      handleSignals: false,
    });
    s.register(Strict, { placement: 'cuda' });
    const e = await s.start().then(
      () => undefined,
      (err: unknown) => err,
    );
    await s.shutdown();
    expect(e).toBeInstanceOf(BackendUnavailableError);
    expect((e as Error).message).toContain('no "cuda" backend was given to the system');
    expect((e as BackendUnavailableError).hint).toContain('new CudaBackend()');
    expect((e as BackendUnavailableError).hint).toContain('@ringgrain/cuda-backend');
    expect((e as BackendUnavailableError).hint).not.toContain('install the driver');
  });
});
