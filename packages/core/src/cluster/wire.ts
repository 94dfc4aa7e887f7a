import { HandlerError } from '../errors.ts';
import { EntryKind } from './types.ts';
import { RemoteGrainError } from './errors.ts';

/**
 * What crosses the wire besides payloads (codec.ts): the check every arriving entry passes before it is
 * used, and errors as replies carry them (a shape out, a typed error back in).
 */

/** undefined when `e` is a well-formed entry; otherwise what is wrong with it. */
export function checkEntry(e: unknown): string | undefined {
  if (!Array.isArray(e)) return 'not an array';
  switch (e[0]) {
    case EntryKind.Message:
      if (e.length !== 8) return `a message has 8 fields, got ${e.length}`;
      if (typeof e[1] !== 'string' || typeof e[2] !== 'string') return 'grain and method must be strings';
      if (!(typeof e[3] === 'string' || Number.isSafeInteger(e[3]))) return 'key must be a safe integer or a string';
      if (!Number.isInteger(e[5]) || e[5] < 0) return 'corr must be a non-negative integer';
      if (typeof e[6] !== 'string' || !Number.isInteger(e[7]) || e[7] < 0) return 'origin must be a string and hops an integer';
      return undefined;
    case EntryKind.Reply:
      if (e.length !== 4 || !Number.isInteger(e[1]) || (e[2] !== 0 && e[2] !== 1)) return 'a reply is [1, corr, 0|1, value]';
      return undefined;
    case EntryKind.Ack:
      if (e.length !== 2 || !Number.isSafeInteger(e[1]) || e[1] < 0) return 'an ack is [2, count]';
      return undefined;
    case EntryKind.HandOff:
      if (e.length !== 3 || typeof e[1] !== 'string' || !Number.isSafeInteger(e[2])) return 'a handoff is [3, grain, version]';
      return undefined;
    case EntryKind.Control:
      if (e.length !== 4 || !Number.isInteger(e[1]) || e[1] <= 0 || typeof e[2] !== 'string') return 'a control entry is [4, corr, op, arg]';
      return undefined;
    default:
      return `unknown entry kind ${JSON.stringify(e[0])}`;
  }
}

/** An error as it travels in a reply (a handler's failure keeps its grain, method and own message). */
export interface ErrorShape {
  name: string;
  code: string;
  message: string;
  grain?: string;
  method?: string;
  detail?: string;
}

/** The shape of an error, to send in a reply. */
export function errorShape(e: unknown): ErrorShape {
  if (e instanceof HandlerError) {
    return { name: e.name, code: e.code, message: e.message, grain: e.grain, method: e.method, detail: e.detail };
  }
  if (e instanceof Error) return { name: e.name, code: (e as { code?: string }).code ?? 'ERROR', message: e.message };
  return { name: 'Error', code: 'ERROR', message: String(e) };
}

/** A reply's error back as a typed error: a handler's failure as HandlerError, anything else as RemoteGrainError with its code. */
export function remoteError(from: string, v: unknown): Error {
  const e = (v ?? {}) as { readonly [F in keyof ErrorShape]?: unknown };
  const message = String(e.message ?? 'remote error');
  // Built from its fields, not by reading the message: `detail` is the handler's own text.
  const { grain, method, detail } = e;
  if (e.code === 'HANDLER' && typeof grain === 'string' && typeof method === 'string' && typeof detail === 'string') {
    return new HandlerError(grain, method, detail);
  }
  return new RemoteGrainError(from, String(e.name ?? 'Error'), String(e.code ?? 'REMOTE'), message);
}
