/**
 * RINGGRAIN_TIMEOUT_SCALE=<n> multiplies every default timeout of the runtime (asks, handshakes,
 * heartbeats, queue-full waits, a kernel's STOP acknowledgement) by n. Under compute-sanitizer or a
 * debugger a kernel runs 10–1000× slower, and the defaults, sized for full speed, would declare a healthy
 * kernel dead. Values given explicitly in options are never scaled.
 */
import { RinggrainError } from './errors.ts';

export function timeoutScale(env: NodeJS.ProcessEnv = process.env): number {
  const v = env['RINGGRAIN_TIMEOUT_SCALE'];
  if (v === undefined || v === '') return 1;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 1) {
    throw new RinggrainError('BAD_TIMEOUT_SCALE', `RINGGRAIN_TIMEOUT_SCALE="${v}" is not a number >= 1`, {
      hint: 'set it to a factor such as 50 (runs under compute-sanitizer or a debugger), or unset it',
    });
  }
  return n;
}

/** `ms` times the environment's timeout scale. */
export const scaledDefault = (ms: number): number => Math.round(ms * timeoutScale());
