/**
 * Errors as data across the ring: a failed or refused turn's reply (SlotFlag.ERROR / REJECTED) carries a
 * code and its fields, and the host builds the typed error from them (reply-error.ts), so a runtime error
 * keeps its class, code and hint across the turn boundary.
 *
 * Payload: msgpack [code: positive fixint, fields: array of str | float64], fields in the order TURN_ERROR
 * gives; 12 bytes carry a code with one number, so it fits the smallest slot (16 payload bytes). Every
 * backend writes this form (the CPU consumer with encodeTurnError, the CUDA kernels with runtime/reply.cuh
 * rg_reply_text and rg_reply_code1, residency-load.cuh rg_res_reply_text); no message is matched as text.
 */
export const TURN_ERROR = {
  /** The handler (or a hook, or a timer's handler) threw: [message]. */
  HANDLER: 1,
  /** The kernel refused the message (malformed bytes, unknown method): [message]. */
  DECODE: 2,
  /** The actor could not be activated: every slot of the kernel's table is taken: [maxActors]. */
  STATE_TABLE_FULL: 3,
  /** The actor's stored state could not be loaded (the host holds the StateLoadError): [failureId, message]. */
  STATE_LOAD: 4,
} as const;

export type TurnErrorValue = string | number;

/** A reply's error payload as read: a code and its fields. */
export interface TurnErrorData {
  readonly code: number;
  readonly fields: readonly TurnErrorValue[];
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Appended to a field that was cut to fit its slot. */
export const FIELD_CUT_MARK = '… [cut to fit slot]';
const MARK_BYTES = enc.encode(FIELD_CUT_MARK).length;

function strSize(n: number): number {
  return n < 32 ? 1 + n : n < 256 ? 2 + n : n < 65536 ? 3 + n : 5 + n;
}

function putStr(u8: Uint8Array, dv: DataView, p: number, bytes: Uint8Array): number {
  const n = bytes.length;
  if (n < 32) u8[p++] = 0xa0 | n;
  else if (n < 256) {
    u8[p++] = 0xd9;
    u8[p++] = n;
  } else if (n < 65536) {
    u8[p++] = 0xda;
    dv.setUint16(p, n);
    p += 2;
  } else {
    u8[p++] = 0xdb;
    dv.setUint32(p, n);
    p += 4;
  }
  u8.set(bytes, p);
  return p + n;
}

/** `bytes` cut to at most `max` bytes on a character boundary, with FIELD_CUT_MARK when there is room for it. */
function cut(bytes: Uint8Array, max: number): Uint8Array {
  if (bytes.length <= max) return bytes;
  if (max < MARK_BYTES + 1) return new Uint8Array(0);
  // A broken last character decodes as U+FFFD: drop it.
  const kept = dec.decode(bytes.subarray(0, max - MARK_BYTES)).replace(/\uFFFD$/, '');
  return enc.encode(`${kept}${FIELD_CUT_MARK}`).subarray(0, max);
}

/**
 * Writes [code, fields] at `start` in at most `room` bytes (room ≥ 16); returns its length. String fields
 * that do not fit are cut, the longest first; the code and number fields are never cut.
 */
export function encodeTurnError(
  u8: Uint8Array,
  dv: DataView,
  start: number,
  room: number,
  code: number,
  fields: readonly TurnErrorValue[],
): number {
  if (!Number.isInteger(code) || code < 0 || code > 127 || fields.length > 15)
    throw new RangeError(`turn error code ${code} with ${fields.length} fields`);
  const values: Array<Uint8Array | number> = fields.map((v) => (typeof v === 'string' ? enc.encode(v) : v));
  const size = () => 3 + values.reduce<number>((s, v) => s + (typeof v === 'number' ? 9 : strSize(v.length)), 0);
  for (let over = size() - room; over > 0; over = size() - room) {
    let longest = -1;
    values.forEach((v, i) => {
      if (typeof v !== 'number' && v.length > 0 && (longest < 0 || v.length > (values[longest] as Uint8Array).length))
        longest = i;
    });
    if (longest < 0)
      throw new RangeError(`turn error ${code}: its number fields need ${size()} bytes, the slot holds ${room}`);
    const v = values[longest] as Uint8Array;
    // Its header may shrink too: cut by the excess, then loop if a header size change left some.
    values[longest] = cut(v, Math.max(0, v.length - over));
  }
  let p = start;
  u8[p++] = 0x92;
  u8[p++] = code;
  u8[p++] = 0x90 | values.length;
  for (const v of values) {
    if (typeof v === 'number') {
      u8[p++] = 0xcb;
      dv.setFloat64(p, v);
      p += 8;
    } else p = putStr(u8, dv, p, v);
  }
  return p - start;
}

/** Reads an error payload in [start, end): [code, fields]; undefined if it is not one. */
export function decodeTurnError(u8: Uint8Array, dv: DataView, start: number, end: number): TurnErrorData | undefined {
  let p = start;
  const str = (): string | undefined => {
    if (p >= end) return undefined;
    const t = u8[p++] as number;
    let n: number;
    if ((t & 0xe0) === 0xa0) n = t & 0x1f;
    else if (t === 0xd9 && p + 1 <= end) n = u8[p++] as number;
    else if (t === 0xda && p + 2 <= end) {
      n = dv.getUint16(p);
      p += 2;
    } else if (t === 0xdb && p + 4 <= end) {
      n = dv.getUint32(p);
      p += 4;
    } else return undefined;
    n = Math.min(n, end - p); // a text longer than its slot reads as far as the slot goes
    const s = dec.decode(u8.subarray(p, p + n));
    p += n;
    return s;
  };
  if (start + 3 > end || u8[start] !== 0x92) return undefined;
  const code = u8[start + 1] as number;
  const head = u8[start + 2] as number;
  if (code > 127 || (head & 0xf0) !== 0x90) return undefined;
  p = start + 3;
  const fields: TurnErrorValue[] = [];
  for (let i = 0; i < (head & 0x0f); i++) {
    if (u8[p] === 0xcb) {
      if (p + 9 > end) return undefined;
      fields.push(dv.getFloat64(p + 1));
      p += 9;
    } else {
      const v = str();
      if (v === undefined) return undefined;
      fields.push(v);
    }
  }
  return { code, fields };
}
