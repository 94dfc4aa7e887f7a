import { DecodeError, SchemaValidationError } from '../errors.ts';
import { MISMATCH, OVERFLOW, Writer, compileEncoder, encodedSize } from '../schema/msgpack-encode.ts';
import { Reader, decodeExact } from '../schema/msgpack-decode.ts';
import type { Schema } from '../schema/types.ts';
import type { MethodDef } from '../grain.ts';
import { SLOT, SLOT_HEADER_SIZE } from '../protocol.ts';
import { rowTemplate } from '../row-writer.ts';
import { fixedWriter, type FixedWrite } from '../tell-image.ts';

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

/**
 * A request of scalar fields only, as the host's fixed slot image (tell-image.ts: each field checked as the
 * general encoder checks it, values at fixed widths, valid msgpack): written into a slab of 16-byte aligned
 * images, its payload handed out as a view. About a third of the general encoder's time for a small struct
 * (no for-in over the keys, no per-field encoder call), and the owner's kernel reads such a payload at fixed
 * offsets. A payload it refuses goes through encodeValue, which throws the typed error.
 */
export function encodeRequest(m: MethodDef, value: unknown, grain: string): Uint8Array {
  let f = fixed.get(m);
  if (f === undefined) fixed.set(m, (f = fixedImage(m)));
  if (f !== null) {
    let s = images;
    if (s.pos + f.size > s.u8.length) images = s = imageSlab();
    const at = s.pos;
    if (f.write(s.i32, s.dv, s.u8, at, value, 0, 0, 0)) {
      s.pos = at + ((f.size + 15) & ~15);
      const start = at + SLOT_HEADER_SIZE;
      return s.u8.subarray(start, start + s.dv.getUint32(at + SLOT.length, true));
    }
  }
  return encodeValue(m.request, value, grain, m.name);
}

const fixed = new WeakMap<MethodDef, { write: FixedWrite; size: number } | null>();
function fixedImage(m: MethodDef): { write: FixedWrite; size: number } | null {
  const t = rowTemplate(m, 0);
  // Any image fits the room given (no slot to fit here): only a non-scalar field leaves no writer.
  const write = t && fixedWriter(m, 0, 1 << 30);
  return t && write ? { write, size: t.image.length + 4 } : null;
}
function imageSlab(): { u8: Uint8Array; dv: DataView; i32: Int32Array; pos: number } {
  const b = new ArrayBuffer(SLAB);
  return { u8: new Uint8Array(b), dv: new DataView(b), i32: new Int32Array(b), pos: 0 };
}
let images = imageSlab();

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
