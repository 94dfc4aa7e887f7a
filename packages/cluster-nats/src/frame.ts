import { Packr } from 'msgpackr';
import { MalformedFrameError } from './errors.ts';

/**
 * A frame: msgpack of [FRAME_VERSION, sender silo id, entries[], strings[]] (entries: core's
 * cluster/types.ts). A message entry's grain, method and origin travel as indices into the frame's
 * `strings` (a tell costs ~20 bytes instead of ~60: bytes are what the server and the sockets carry), and
 * bytes (a payload or a reply, encoded by its schema) as msgpack bin, which decodes as a view of the
 * frame: no copy and no buffer per message. Plain msgpack (no records), so any msgpack library reads it;
 * other values go through msgpackr, where typed arrays travel as its typed-array extension and come back
 * as the same kind. Version 1 frames ([1, from, entries], names inline) are still read.
 */
export const FRAME_VERSION = 2;

const packr = new Packr({ useRecords: false, moreTypes: true, mapsAsObjects: true, variableMapSize: true });

/** A growing msgpack writer for the parts of a frame written by hand. */
class Writer {
  u8 = new Uint8Array(64 * 1024);
  dv = new DataView(this.u8.buffer);
  pos = 0;

  ensure(n: number): void {
    if (this.pos + n <= this.u8.length) return;
    const next = new Uint8Array(Math.max(this.u8.length * 2, this.pos + n + 1024));
    next.set(this.u8.subarray(0, this.pos));
    this.u8 = next;
    this.dv = new DataView(next.buffer);
  }

  arrayHeader(n: number): void {
    this.ensure(5);
    if (n < 16) this.u8[this.pos++] = 0x90 | n;
    else if (n < 0x10000) {
      this.u8[this.pos] = 0xdc;
      this.dv.setUint16(this.pos + 1, n);
      this.pos += 3;
    } else {
      this.u8[this.pos] = 0xdd;
      this.dv.setUint32(this.pos + 1, n);
      this.pos += 5;
    }
  }

  /** An integer as msgpack's smallest int; a non-integer, or one past 32 bits, as float64 (exact for safe integers). */
  num(v: number): void {
    this.ensure(9);
    const u8 = this.u8;
    if (Number.isInteger(v) && v >= -0x80000000 && v <= 0xffffffff && !Object.is(v, -0)) {
      if (v >= 0) {
        if (v < 128) u8[this.pos++] = v;
        else if (v < 0x100) {
          u8[this.pos++] = 0xcc;
          u8[this.pos++] = v;
        } else if (v < 0x10000) {
          u8[this.pos] = 0xcd;
          this.dv.setUint16(this.pos + 1, v);
          this.pos += 3;
        } else {
          u8[this.pos] = 0xce;
          this.dv.setUint32(this.pos + 1, v);
          this.pos += 5;
        }
      } else if (v >= -32) u8[this.pos++] = v & 0xff;
      else {
        u8[this.pos] = 0xd2;
        this.dv.setInt32(this.pos + 1, v);
        this.pos += 5;
      }
      return;
    }
    u8[this.pos] = 0xcb;
    this.dv.setFloat64(this.pos + 1, v);
    this.pos += 9;
  }

  bin(b: Uint8Array): void {
    const n = b.length;
    this.ensure(n + 5);
    if (n < 0x100) {
      this.u8[this.pos++] = 0xc4;
      this.u8[this.pos++] = n;
    } else if (n < 0x10000) {
      this.u8[this.pos] = 0xc5;
      this.dv.setUint16(this.pos + 1, n);
      this.pos += 3;
    } else {
      this.u8[this.pos] = 0xc6;
      this.dv.setUint32(this.pos + 1, n);
      this.pos += 5;
    }
    this.u8.set(b, this.pos);
    this.pos += n;
  }

  /** Any value: bytes as bin, numbers by hand, the rest through msgpackr. */
  any(v: unknown): void {
    if (typeof v === 'number') return this.num(v);
    if (v instanceof Uint8Array && (v.constructor === Uint8Array || v.constructor === Buffer)) return this.bin(v);
    const b = packr.pack(v);
    this.ensure(b.length);
    this.u8.set(b, this.pos);
    this.pos += b.length;
  }
}

const w = new Writer();
/** The frame's strings (grain, method and origin names of its message entries), by first use. */
const strings = new Map<string, number>();

function str(s: unknown): number | unknown {
  if (typeof s !== 'string') return s;
  let i = strings.get(s);
  if (i === undefined) strings.set(s, (i = strings.size));
  return i;
}

export function encodeFrame(from: string, entries: readonly unknown[]): Uint8Array {
  w.pos = 0;
  strings.clear();
  w.arrayHeader(4);
  w.num(FRAME_VERSION);
  w.any(from);
  w.arrayHeader(entries.length);
  for (const e of entries) {
    if (Array.isArray(e) && e[0] === 0 && e.length === 8) {
      // [0, grain, method, key, payload, corr, origin, hops] with the three names as string indices.
      w.ensure(1);
      w.u8[w.pos++] = 0x98;
      w.num(0);
      w.any(str(e[1]));
      w.any(str(e[2]));
      w.any(e[3]);
      w.any(e[4]);
      w.any(e[5]);
      w.any(str(e[6]));
      w.any(e[7]);
    } else if (Array.isArray(e)) {
      w.arrayHeader(e.length);
      for (const x of e) w.any(x);
    } else w.any(e);
  }
  w.arrayHeader(strings.size);
  for (const s of strings.keys()) w.any(s);
  return w.u8.slice(0, w.pos);
}

export function decodeFrame(data: Uint8Array): { from: string; entries: unknown[] } {
  // One copy of the frame, in its own buffer: the entries' bytes are views of it (they may wait, parked or
  // held, past the transport's reuse of its buffers), and one schema reader serves the whole frame.
  const own = new Uint8Array(data);
  let v: unknown;
  try {
    v = packr.unpack(own);
  } catch (e) {
    throw new MalformedFrameError(`${data.length} bytes that are not msgpack`, { cause: e });
  }
  if (!Array.isArray(v) || (v[0] === 1 ? v.length !== 3 : v.length !== 4))
    throw new MalformedFrameError('not a [version, from, entries, strings] array');
  if (v[0] !== FRAME_VERSION && v[0] !== 1)
    throw new MalformedFrameError(`frame version ${JSON.stringify(v[0])}, this silo reads ${FRAME_VERSION} and 1`);
  if (typeof v[1] !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(v[1]))
    throw new MalformedFrameError('the sender id is not a silo id');
  if (!Array.isArray(v[2])) throw new MalformedFrameError('entries is not an array');
  const entries = v[2] as unknown[];
  if (v[0] === 1) return { from: v[1], entries };
  const table = v[3];
  if (!Array.isArray(table) || !table.every((s) => typeof s === 'string'))
    throw new MalformedFrameError('strings is not an array of strings');
  // Names back in place; an index that is not one stays a non-string, which the router refuses as a malformed entry.
  const name = (i: unknown): unknown => (typeof i === 'number' ? (table[i] as unknown) : null) ?? null;
  for (const e of entries) {
    if (!Array.isArray(e) || e[0] !== 0 || e.length !== 8) continue;
    e[1] = name(e[1]);
    e[2] = name(e[2]);
    e[6] = name(e[6]);
  }
  return { from: v[1], entries };
}
