import { describe, expect, it } from 'vitest';
import { formatLogLine } from '../src/entries/internal.ts';

describe('readable log lines (the default logger on a terminal)', () => {
  it('time, level, message, then the other fields; pino bookkeeping dropped', () => {
    const line = JSON.stringify({
      level: 40,
      time: Date.UTC(2026, 10, 23, 12, 34, 56, 789),
      pid: 1,
      hostname: 'h',
      name: 'ringgrain',
      grain: 'Account',
      code: 'HANDLER',
      msg: 'tell failed: no funds',
    });
    expect(formatLogLine(line)).toBe('12:34:56.789 WARN  tell failed: no funds  grain=Account code=HANDLER');
  });

  it('a line that is not JSON passes through unchanged', () => {
    expect(formatLogLine('plain text')).toBe('plain text');
  });
});
