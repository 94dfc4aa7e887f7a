import { DecodeError, SchemaValidationError } from '../errors.ts';
import { MISMATCH, OVERFLOW, Writer, compileEncoder, encodedSize } from '../schema/msgpack-encode.ts';
import { Reader, decodeExact } from '../schema/msgpack-decode.ts';
import type { Schema } from '../schema/types.ts';

/**
 * Payloads and replies cross silos as the bytes their schema encodes (the same msgpack a ring slot holds):
 * a bad payload fails at the sender's call with SchemaValidationError, as it does locally, and the value
 * arrives exactly (f32 rounding, -0, typed arrays of their kind) instead of as a generic msgpack value.
 */
let scratch = new Writer(new Uint8Array(16 * 1024));

export function encodeValue(schema: Schema, value: unknown, where: string): Uint8Array {
  for (;;) {
    try {
      compileEncoder(schema)(value, scratch.reset(0, scratch.u8.length));
      return scratch.u8.slice(0, scratch.pos);
    } catch (e) {
      if (e === MISMATCH) throw validationError(schema, value, where);
      if (e !== OVERFLOW) throw e;
      if (!schema.zod.safeParse(value).success) throw validationError(schema, value, where);
      scratch = new Writer(new Uint8Array(Math.max(scratch.u8.length * 2, encodedSize(schema, value) + 64)));
    }
  }
}

export function decodeValue(schema: Schema, bytes: unknown, where: string): unknown {
  if (!(bytes instanceof Uint8Array)) throw new DecodeError(`${where}: the value is not bytes`);
  try {
    return decodeExact(schema, new Reader(bytes).reset(0, bytes.length));
  } catch (e) {
    throw e instanceof DecodeError ? e : new DecodeError(`${where}: ${(e as Error).message}`, { cause: e });
  }
}

/** As slot.ts reports it: the zod path of the first issue. */
function validationError(schema: Schema, value: unknown, where: string): SchemaValidationError {
  const parsed = schema.zod.safeParse(value);
  if (parsed.success) return new SchemaValidationError(where, [], 'value cannot be encoded by its schema');
  const issue = parsed.error.issues[0];
  return new SchemaValidationError(where, (issue?.path ?? []) as PropertyKey[], issue?.message ?? 'invalid');
}
