import { describe, expect, it } from 'vitest';
import { timeoutScale } from '../src/timeouts.ts';
import { RinggrainError } from '../src/errors.ts';

describe('RINGGRAIN_TIMEOUT_SCALE', () => {
  it('is 1 when unset or empty, the factor when set', () => {
    expect(timeoutScale({})).toBe(1);
    expect(timeoutScale({ RINGGRAIN_TIMEOUT_SCALE: '' })).toBe(1);
    expect(timeoutScale({ RINGGRAIN_TIMEOUT_SCALE: '60' })).toBe(60);
  });
  it('refuses a value that is not a factor >= 1, naming it', () => {
    for (const v of ['abc', '0.5', '-3']) {
      expect(() => timeoutScale({ RINGGRAIN_TIMEOUT_SCALE: v })).toThrow(RinggrainError);
      expect(() => timeoutScale({ RINGGRAIN_TIMEOUT_SCALE: v })).toThrow(`RINGGRAIN_TIMEOUT_SCALE="${v}"`);
    }
  });
});
