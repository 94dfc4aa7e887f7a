import { HandlerError, RinggrainError } from '../errors.ts';
import * as coreErrors from '../entries/errors.ts';
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
      if (typeof e[6] !== 'string' || !Number.isInteger(e[7]) || e[7] < 0)
        return 'origin must be a string and hops an integer';
      return undefined;
    case EntryKind.Reply:
      if (e.length !== 4 || !Number.isInteger(e[1]) || (e[2] !== 0 && e[2] !== 1))
        return 'a reply is [1, corr, 0|1, value]';
      return undefined;
    case EntryKind.Ack:
      if (e.length !== 2 || !Number.isSafeInteger(e[1]) || e[1] < 0) return 'an ack is [2, count]';
      return undefined;
    case EntryKind.HandOff:
      if (e.length !== 3 || typeof e[1] !== 'string' || !Number.isSafeInteger(e[2]))
        return 'a handoff is [3, grain, version]';
      return undefined;
    case EntryKind.Control:
      if (e.length !== 4 || !Number.isInteger(e[1]) || e[1] <= 0 || typeof e[2] !== 'string')
        return 'a control entry is [4, corr, op, arg]';
      return undefined;
    default:
      return `unknown entry kind ${JSON.stringify(e[0])}`;
  }
}

/** An error as it travels in a reply: its class name, code, message, hint, and its own plain fields. */
export interface ErrorShape {
  name: string;
  code: string;
  message: string;
  grain?: string;
  method?: string;
  hint?: string;
  /** The error's own fields that are plain data (ReplyTargetError.field, SchemaValidationError.path, ...). */
  fields?: Record<string, unknown>;
}

const SHAPE_KEYS = new Set(['name', 'code', 'message', 'hint', 'stack', 'cause']);

export function errorShape(e: unknown): ErrorShape {
  if (e instanceof HandlerError)
    return { name: e.name, code: e.code, message: e.message, grain: e.grain, method: e.method };
  if (e instanceof Error) {
    const shape: ErrorShape = { name: e.name, code: (e as { code?: string }).code ?? 'ERROR', message: e.message };
    const hint = (e as { hint?: unknown }).hint;
    if (typeof hint === 'string') shape.hint = hint;
    const fields: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(e)) if (!SHAPE_KEYS.has(k) && plain(v)) fields[k] = v;
    if (Object.keys(fields).length) shape.fields = fields;
    return shape;
  }
  return { name: 'Error', code: 'ERROR', message: String(e) };
}

/** A value that survives the frame's msgpack as itself: a primitive, or an array of them. */
function plain(v: unknown): boolean {
  const t = typeof v;
  if (v === null || t === 'string' || t === 'number' || t === 'boolean') return true;
  return Array.isArray(v) && v.every((x) => x === null || ['string', 'number', 'boolean'].includes(typeof x));
}

/**
 * A reply's error back as a typed error: a handler's failure as HandlerError; an error of one of core's
 * classes (PayloadTooLargeError, QueueFullError, KernelTerminatedError, ...) as that class, so `instanceof`
 * holds as it does in one process, with its code, message, hint and plain fields, and `silo` naming where it
 * was raised; anything else as RemoteGrainError with its name and code.
 */
export function remoteError(from: string, v: unknown): Error {
  const e = (v ?? {}) as {
    name?: unknown;
    code?: unknown;
    message?: unknown;
    grain?: unknown;
    method?: unknown;
    hint?: unknown;
    fields?: unknown;
  };
  const message = String(e.message ?? 'remote error');
  if (e.code === 'HANDLER' && typeof e.grain === 'string' && typeof e.method === 'string') {
    const prefix = `${e.grain}.${e.method} failed: `;
    return new HandlerError(e.grain, e.method, message.startsWith(prefix) ? message.slice(prefix.length) : message);
  }
  const Cls = typeof e.name === 'string' ? (coreErrors as Record<string, unknown>)[e.name] : undefined;
  if (typeof Cls === 'function' && Cls.prototype instanceof RinggrainError && typeof e.code === 'string') {
    // Rebuilt without its constructor (each takes its own arguments): the fields as they were raised.
    const out = Object.create(Cls.prototype as object) as RinggrainError & Record<string, unknown>;
    const fields = e.fields && typeof e.fields === 'object' ? (e.fields as Record<string, unknown>) : {};
    Object.assign(out, fields, {
      name: e.name,
      code: e.code,
      hint: typeof e.hint === 'string' ? e.hint : undefined,
      silo: from,
    });
    Object.defineProperty(out, 'message', { value: message, writable: true, configurable: true });
    Object.defineProperty(out, 'stack', {
      value: `${String(e.name)}: ${message}\n    at silo ${from}`,
      writable: true,
      configurable: true,
    });
    return out;
  }
  return new RemoteGrainError(from, String(e.name ?? 'Error'), String(e.code ?? 'REMOTE'), message);
}
