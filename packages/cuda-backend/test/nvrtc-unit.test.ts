/**
 * The NVRTC options of a grain class's unit (src/nvrtc-unit.ts): RINGGRAIN_FAST_COMPILE adds NVRTC's fast-compile
 * level (opt-in; part of the compile-cache key), a bad level is a typed error. No NVRTC needed: the option's effect on
 * compile time and on the kernel is measured by scripts/device/checks/cold-start.sh.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import { CudaUsageError, cacheKey } from '../src/driver/index.ts';
import { fastCompileOption, unitCompileOptions } from '../src/nvrtc-unit.ts';

const before = process.env['RINGGRAIN_FAST_COMPILE'];
afterEach(() => {
  if (before === undefined) delete process.env['RINGGRAIN_FAST_COMPILE'];
  else process.env['RINGGRAIN_FAST_COMPILE'] = before;
});

const optionsWith = (level: string | undefined): readonly string[] => {
  if (level === undefined) delete process.env['RINGGRAIN_FAST_COMPILE'];
  else process.env['RINGGRAIN_FAST_COMPILE'] = level;
  return unitCompileOptions(Account.grain, 'sm_90').extraOpts ?? [];
};

describe('RINGGRAIN_FAST_COMPILE', () => {
  it('unset, empty or 0: no fast-compile option (the default build)', () => {
    for (const level of [undefined, '', '0']) {
      const opts = optionsWith(level);
      expect(opts).toContain('--std=c++17');
      expect(opts.some((o) => o.startsWith('-Ofc'))).toBe(false);
    }
  });

  it('min, mid, max: -Ofc=<level>, and a cache key of its own', () => {
    const plain = optionsWith(undefined);
    const key = (opts: readonly string[]) => cacheKey('unit', 'sm_90', '13.0', undefined, opts, 'Account.cu');
    for (const level of ['min', 'mid', 'max']) {
      const opts = optionsWith(level);
      expect(opts).toEqual([...plain, `-Ofc=${level}`]);
      expect(key(opts)).not.toBe(key(plain));
    }
  });

  it('anything else is a CudaUsageError naming the levels', () => {
    process.env['RINGGRAIN_FAST_COMPILE'] = 'fast';
    let err: unknown;
    try {
      fastCompileOption();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CudaUsageError);
    expect(err).toMatchObject({ code: 'RG_BAD_FAST_COMPILE' });
    expect(String((err as Error).message)).toContain('"fast" is not one of 0, min, mid, max');
    expect(() => unitCompileOptions(Account.grain, 'sm_90')).toThrow(CudaUsageError);
  });
});
