import { SchemaValidationError } from '@ringgrain/core/backend';

/** The value at `path` inside `v` (undefined where the path leaves it). */
function at(v: unknown, path: readonly PropertyKey[]): unknown {
  let cur = v;
  for (const p of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[p];
  }
  return cur;
}

function show(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean' || v === undefined || v === null)
    return String(v);
  if (typeof v === 'string') return JSON.stringify(v.length > 24 ? `${v.slice(0, 24)}…` : v);
  return Array.isArray(v) ? `an array of ${v.length}` : typeof v === 'object' ? 'an object' : typeof v;
}

/**
 * The error text of a handler whose return value does not fit its reply schema: says that it is the
 * handler's return value (not a payload the caller sent), which field, what it was and what fits, short
 * enough for the default 256-byte reply slot. The host prefixes "<Grain>.<method> failed: "; the CUDA
 * kernels' text starts the same way ("reply does not match its schema: ...").
 */
export function replyMismatchText(value: unknown, e: unknown): string {
  const head = "reply does not match its schema: the handler's return value";
  if (!(e instanceof SchemaValidationError)) return `${head} cannot be encoded: ${(e as Error)?.message ?? String(e)}`;
  const field = e.path.length
    ? `has field "${e.path.map(String).join('.')}" = ${show(at(value, e.path))}`
    : `is ${show(value)}`;
  return `${head} ${field}; ${e.detail}`;
}
