import { DecodeError, PayloadTooLargeError, SchemaValidationError } from './errors.ts';
import { SLOT, SLOT_HEADER_SIZE, SlotFlag } from './protocol.ts';
import type { Ring } from './ring.ts';
import type { SlotTarget } from './spill.ts';
import { encodeTurnError, type TurnErrorValue } from './turn-error.ts';
import { MISMATCH, OVERFLOW, Writer, compileEncoder, encodedSize } from './schema/msgpack-encode.ts';
import { Reader, decodeExact, decodeIntoColumns, type Columns } from './schema/msgpack-decode.ts';
import type { Schema, StructSchema } from './schema/types.ts';

/**
 * Writing and reading one slot (header + msgpack payload), shared by every producer and consumer on
 * the host and in CPU workers. The payload is encoded straight into the slot: no intermediate buffer.
 */
export interface SlotFields {
  method: number;
  flags: number;
  corr: number;
  keyLo: number;
  keyHi: number;
  sender: number;
  grain: number;
}

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

/** Int keys travel as two's complement int64 halves. */
export function splitKeyLo(key: number): number {
  return key >>> 0;
}
export function splitKeyHi(key: number): number {
  return Math.floor(key / 0x100000000) >>> 0;
}
export function joinKey(lo: number, hi: number): number {
  return (hi | 0) * 0x100000000 + (lo >>> 0);
}

/** Appended to a text (an error message) that was cut to fit its slot. */
export const TEXT_CUT_MARK = '… [message cut to fit slot]';

export class SlotWriter {
  private readonly writers = new WeakMap<ArrayBufferLike, Writer>();

  private writerFor(ring: SlotTarget): Writer {
    let w = this.writers.get(ring.buffer);
    if (!w) {
      w = new Writer(ring.u8);
      this.writers.set(ring.buffer, w);
    }
    return w;
  }

  /**
   * Encodes `payload` by `schema` into the slot at `slot` and fills the header (all but seq).
   * Throws SchemaValidationError (with the zod path) or PayloadTooLargeError; the slot is then unused.
   */
  write(
    ring: SlotTarget,
    slot: number,
    h: SlotFields,
    schema: Schema,
    payload: unknown,
    grain: string,
    method: string,
    stringKey?: string,
  ): void {
    // No closure or string is built per message (tsx's keepNames makes every named closure costly);
    // "Grain.method" is assembled only on the error path.
    const w = this.writerFor(ring);
    const start = slot + SLOT_HEADER_SIZE;
    const end = slot + ring.slotSize;
    try {
      compileEncoder(schema)(payload, w.reset(start, end));
    } catch (e) {
      if (e === MISMATCH) throw validationError(schema, payload, `${grain}.${method}`);
      if (e === OVERFLOW) {
        const parsed = schema.zod.safeParse(payload);
        if (!parsed.success) throw validationError(schema, payload, `${grain}.${method}`);
        throw new PayloadTooLargeError(
          `${grain}.${method}`,
          encodedSize(schema, payload) + stringKeyBytes(stringKey),
          ring.payloadCapacity,
          SLOT_HEADER_SIZE,
        );
      }
      throw e;
    }
    const length = w.pos - start;
    let flags = h.flags;
    let keyHi = h.keyHi;
    if (stringKey !== undefined) {
      // The key's UTF-8 bytes follow the payload; the kernel reads them back for ctx.key.
      const bytes = textEncoder.encode(stringKey);
      if (w.pos + bytes.length > end) {
        throw new PayloadTooLargeError(
          `${grain}.${method}`,
          length + bytes.length,
          ring.payloadCapacity,
          SLOT_HEADER_SIZE,
        );
      }
      ring.u8.set(bytes, w.pos);
      flags |= SlotFlag.STRING_KEY;
      keyHi = bytes.length;
    }
    writeHeader(ring.dv, slot, h, length, flags, keyHi);
  }

  /**
   * A payload already encoded by its schema (a message from another silo: cluster/codec.ts) copied into the
   * slot, header filled (all but seq): no decode and encode again. The consumer decodes it as any payload,
   * so bytes that do not fit the schema are refused there (a REJECTED reply). Throws PayloadTooLargeError.
   */
  writeBytes(
    ring: SlotTarget,
    slot: number,
    h: SlotFields,
    bytes: Uint8Array,
    grain: string,
    method: string,
    stringKey?: string,
  ): void {
    const start = slot + SLOT_HEADER_SIZE;
    const length = bytes.length;
    let flags = h.flags;
    let keyHi = h.keyHi;
    const key = stringKey === undefined ? undefined : textEncoder.encode(stringKey);
    const needed = length + (key === undefined ? 0 : key.length);
    if (needed > ring.payloadCapacity)
      throw new PayloadTooLargeError(`${grain}.${method}`, needed, ring.payloadCapacity, SLOT_HEADER_SIZE);
    const u8 = ring.u8;
    // Small payloads byte by byte: set() of a view costs more than the copy below ~64 bytes.
    if (length <= 64) for (let i = 0; i < length; i++) u8[start + i] = bytes[i]!;
    else u8.set(bytes, start);
    if (key !== undefined) {
      u8.set(key, start + length);
      flags |= SlotFlag.STRING_KEY;
      keyHi = key.length;
    }
    writeHeader(ring.dv, slot, h, length, flags, keyHi);
  }

  /** A failed or refused turn's reply payload: its code and fields (turn-error.ts), string fields cut to fit. */
  writeError(ring: Ring, slot: number, h: SlotFields, code: number, fields: readonly TurnErrorValue[]): void {
    const start = slot + SLOT_HEADER_SIZE;
    const length = encodeTurnError(ring.u8, ring.dv, start, ring.payloadCapacity, code, fields);
    writeHeader(ring.dv, slot, h, length, h.flags, h.keyHi);
  }

  /** A msgpack str payload (error and rejection messages), cut with a marker if the slot is small. */
  writeText(ring: Ring, slot: number, h: SlotFields, text: string): void {
    let bytes = textEncoder.encode(text);
    const room = ring.payloadCapacity - 5;
    if (bytes.length > room)
      bytes = textEncoder.encode(`${text.slice(0, Math.max(0, room - 40))}${TEXT_CUT_MARK}`).subarray(0, room);
    const start = slot + SLOT_HEADER_SIZE;
    const u8 = ring.u8;
    let p = start;
    if (bytes.length < 32) u8[p++] = 0xa0 | bytes.length;
    else if (bytes.length < 256) {
      u8[p++] = 0xd9;
      u8[p++] = bytes.length;
    } else {
      u8[p++] = 0xda;
      ring.dv.setUint16(p, bytes.length);
      p += 2;
    }
    u8.set(bytes, p);
    writeHeader(ring.dv, slot, h, p + bytes.length - start, h.flags, h.keyHi);
  }
}

function stringKeyBytes(key: string | undefined): number {
  return key === undefined ? 0 : textEncoder.encode(key).length;
}

function validationError(schema: Schema, payload: unknown, where: string): SchemaValidationError {
  const parsed = schema.zod.safeParse(payload);
  if (parsed.success) return new SchemaValidationError(where, [], 'value cannot be encoded by its schema');
  const issue = parsed.error.issues[0];
  return new SchemaValidationError(where, (issue?.path ?? []) as PropertyKey[], issue?.message ?? 'invalid');
}

export class SlotReader {
  private readonly readers = new WeakMap<ArrayBufferLike, Reader>();

  private readerFor(ring: Ring): Reader {
    let r = this.readers.get(ring.buffer);
    if (!r) {
      r = new Reader(ring.u8);
      this.readers.set(ring.buffer, r);
    }
    return r;
  }

  /**
   * Decodes the slot's payload by `schema`; throws DecodeError on anything malformed. `into`: caller
   * arrays for the struct's numeric array fields (an ask's `into`), filled instead of new arrays.
   */
  payload(ring: Ring, slot: number, schema: Schema, into?: Readonly<Record<string, unknown>>): unknown {
    const length = ring.dv.getUint32(slot + SLOT.length, true);
    if (length > ring.payloadCapacity)
      throw new DecodeError(`slot claims ${length} payload bytes; a slot holds ${ring.payloadCapacity}`);
    const start = slot + SLOT_HEADER_SIZE;
    const r = this.readerFor(ring).reset(start, start + length);
    if (into === undefined) return decodeExact(schema, r);
    r.into = into;
    try {
      return decodeExact(schema, r);
    } finally {
      r.into = undefined;
      r.target = undefined;
    }
  }

  /** Decodes the slot's payload, a `schema` struct, into row `row` of `cols` (askMany's reply columns). */
  payloadInto(ring: Ring, slot: number, schema: StructSchema, row: number, cols: Columns): void {
    const length = ring.dv.getUint32(slot + SLOT.length, true);
    if (length > ring.payloadCapacity)
      throw new DecodeError(`slot claims ${length} payload bytes; a slot holds ${ring.payloadCapacity}`);
    const start = slot + SLOT_HEADER_SIZE;
    decodeIntoColumns(schema, this.readerFor(ring).reset(start, start + length), row, cols);
  }

  /** Reads a msgpack str payload (error replies). */
  text(ring: Ring, slot: number): string {
    const length = Math.min(ring.dv.getUint32(slot + SLOT.length, true), ring.payloadCapacity);
    const start = slot + SLOT_HEADER_SIZE;
    const u8 = ring.u8;
    const t = u8[start] as number;
    let p = start + 1;
    let n: number;
    if ((t & 0xe0) === 0xa0) n = t & 0x1f;
    else if (t === 0xd9) n = u8[p++] as number;
    else if (t === 0xda) {
      n = ring.dv.getUint16(p);
      p += 2;
    } else return `(unreadable error payload, type byte 0x${t.toString(16)})`;
    n = Math.min(n, start + length - p);
    return textDecoder.decode(u8.subarray(p, p + n));
  }

  /** The string key stored after the payload (STRING_KEY flag). */
  stringKey(ring: Ring, slot: number): string {
    const length = ring.dv.getUint32(slot + SLOT.length, true);
    const klen = ring.dv.getUint32(slot + SLOT.keyHi, true);
    const start = slot + SLOT_HEADER_SIZE + length;
    if (length + klen > ring.payloadCapacity) throw new DecodeError(`string key of ${klen} bytes runs past the slot`);
    return textDecoder.decode(ring.u8.subarray(start, start + klen));
  }
}

/**
 * A slot's header but its seq (the producer publishes that last): the fields, the payload's length, flags and keyHi
 * (an error or rejection reply passes the request's own).
 */
function writeHeader(dv: DataView, slot: number, h: SlotFields, length: number, flags: number, keyHi: number): void {
  dv.setUint32(slot + SLOT.length, length, true);
  dv.setUint32(slot + SLOT.method, h.method, true);
  dv.setUint32(slot + SLOT.flags, flags, true);
  dv.setUint32(slot + SLOT.corr, h.corr, true);
  dv.setUint32(slot + SLOT.keyLo, h.keyLo, true);
  dv.setUint32(slot + SLOT.keyHi, keyHi, true);
  dv.setUint32(slot + SLOT.sender, h.sender, true);
  dv.setUint32(slot + SLOT.grain, h.grain, true);
}
