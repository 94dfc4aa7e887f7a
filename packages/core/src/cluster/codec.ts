import { DecodeError, SchemaValidationError } from '../errors.ts';
import { MISMATCH, OVERFLOW, Writer, compileEncoder, encodedSize } from '../schema/msgpack-encode.ts';
import { Reader, decodeExact } from '../schema/msgpack-decode.ts';
import type { Schema } from '../schema/types.ts';

/**
 * Payloads and replies cross silos as the bytes their schema encodes (the same msgpack a ring slot holds):
 * a bad payload fails at the sender's call with SchemaValidationError, as it does locally, and the value
 * arrives exactly (f32 rounding, -0, typed arrays of their kind) instead of as a generic msgpack value.
 */
const SLAB = 64 * 1024;
/**
 * Values are encoded one after another into a slab and handed out as views of it: a buffer of its own per
 * message (`slice`) cost an ArrayBuffer allocation per tell, about a third of encoding one (CPU time,
 * bench/probes/cluster-costs.ts's encode stage). Views are never written after they are handed out; a
 * slab is dropped by the GC once no entry holds a view of it (a parked entry keeps its slab alive).
 */
let slab = new Writer(new Uint8Array(SLAB));

/** `grain` and `method` name the value in errors (joined only then: no string is built per message). */
export function encodeValue(schema: Schema, value: unknown, grain: string, method: string): Uint8Array {
  for (;;) {
    const start = slab.pos;
    try {
      compileEncoder(schema)(value, slab.reset(start, slab.u8.length));
      return slab.u8.subarray(start, slab.pos);
    } catch (e) {
      slab.pos = start;
      if (e === MISMATCH) throw validationError(schema, value, `${grain}.${method}`);
      if (e !== OVERFLOW) throw e;
      // A fresh slab, large enough for this value; one that did not fit even a fresh slab is checked first.
      if (start === 0 && !schema.zod.safeParse(value).success)
        throw validationError(schema, value, `${grain}.${method}`);
      slab = new Writer(new Uint8Array(start === 0 ? Math.max(SLAB, encodedSize(schema, value) + 64) : SLAB));
    }
  }
}

/** Readers by buffer: a frame's values are views of its one buffer, so one Reader serves them all. */
const readers = new WeakMap<ArrayBufferLike, Reader>();

export function decodeValue(schema: Schema, bytes: unknown, grain: string, method: string): unknown {
  if (!(bytes instanceof Uint8Array)) throw new DecodeError(`${grain}.${method}: the value is not bytes`);
  let r = readers.get(bytes.buffer);
  if (!r) readers.set(bytes.buffer, (r = new Reader(new Uint8Array(bytes.buffer))));
  try {
    return decodeExact(schema, r.reset(bytes.byteOffset, bytes.byteOffset + bytes.length));
  } catch (e) {
    throw e instanceof DecodeError ? e : new DecodeError(`${grain}.${method}: ${(e as Error).message}`, { cause: e });
  }
}

/** As slot.ts reports it: the zod path of the first issue. */
function validationError(schema: Schema, value: unknown, where: string): SchemaValidationError {
  const parsed = schema.zod.safeParse(value);
  if (parsed.success) return new SchemaValidationError(where, [], 'value cannot be encoded by its schema');
  const issue = parsed.error.issues[0];
  return new SchemaValidationError(where, (issue?.path ?? []) as PropertyKey[], issue?.message ?? 'invalid');
}
