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

/** The last name each of a message's three name fields took, and its index: runs of one class skip the map. */
const lastName: Array<string | undefined> = [undefined, undefined, undefined];
const lastIndex = [0, 0, 0];
function nameIndex(s: string, field: number): number {
  if (s === lastName[field]) return lastIndex[field]!;
  let i = strings.get(s);
  if (i === undefined) strings.set(s, (i = strings.size));
  lastName[field] = s;
  lastIndex[field] = i;
  return i;
}

/** A non-negative integer below 2^32 at `p`, msgpack's smallest form; the new position. */
function uint(u8: Uint8Array, dv: DataView, p: number, v: number): number {
  if (v < 0x80) {
    u8[p] = v;
    return p + 1;
  }
  if (v < 0x100) {
    u8[p] = 0xcc;
    u8[p + 1] = v;
    return p + 2;
  }
  if (v < 0x10000) {
    u8[p] = 0xcd;
    dv.setUint16(p + 1, v);
    return p + 3;
  }
  u8[p] = 0xce;
  dv.setUint32(p + 1, v);
  return p + 5;
}

/**
 * A message entry of the router's usual shape (names strings, a key, corr and hops non-negative integers
 * below 2^32, the payload bytes) written in one go, the same bytes the general path writes; false (nothing
 * written) for any other, which the general path writes.
 */
function writeMessage(e: unknown[]): boolean {
  const [, grain, method, key, bytes, corr, origin, hops] = e;
  if (typeof grain !== 'string' || typeof method !== 'string' || typeof origin !== 'string') return false;
  if (typeof key !== 'number' || !(key >= 0 && key <= 0xffffffff) || !Number.isInteger(key)) return false;
  if (!(bytes instanceof Uint8Array)) return false;
  if (bytes.constructor !== Uint8Array && bytes.constructor !== Buffer) return false;
  if (typeof corr !== 'number' || typeof hops !== 'number') return false;
  if (!(corr >= 0 && corr <= 0xffffffff && hops >= 0 && hops <= 0xffffffff)) return false;
  if (!Number.isInteger(corr) || !Number.isInteger(hops)) return false;
  const n = bytes.length;
  w.ensure(n + 40);
  const u8 = w.u8;
  const dv = w.dv;
  let p = w.pos;
  u8[p++] = 0x98;
  u8[p++] = 0;
  p = uint(u8, dv, p, nameIndex(grain, 0));
  p = uint(u8, dv, p, nameIndex(method, 1));
  p = uint(u8, dv, p, key);
  if (n < 0x100) {
    u8[p++] = 0xc4;
    u8[p++] = n;
  } else if (n < 0x10000) {
    u8[p] = 0xc5;
    dv.setUint16(p + 1, n);
    p += 3;
  } else {
    u8[p] = 0xc6;
    dv.setUint32(p + 1, n);
    p += 5;
  }
  if (n <= 16) for (let i = 0; i < n; i++) u8[p + i] = bytes[i]!;
  else u8.set(bytes, p);
  p += n;
  p = uint(u8, dv, p, corr);
  p = uint(u8, dv, p, nameIndex(origin, 2));
  w.pos = uint(u8, dv, p, hops);
  return true;
}

export function encodeFrame(from: string, entries: readonly unknown[]): Uint8Array {
  w.pos = 0;
  strings.clear();
  lastName.fill(undefined);
  w.arrayHeader(4);
  w.num(FRAME_VERSION);
  w.any(from);
  w.arrayHeader(entries.length);
  for (const e of entries) {
    if (Array.isArray(e) && e[0] === 0 && e.length === 8 && writeMessage(e)) continue;
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
  const fast = readFrame(own);
  if (fast !== undefined) return fast;
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

/** Where readFrame stopped: anything it does not read by hand sends the frame to msgpackr. */
const UNREAD = Symbol('unread');
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A version 2 frame read by hand, for the entries silos send all the time (messages, replies with bytes or
 * nil, acks): no generic unpacker, and a message's bytes a view of the frame. Anything else (another entry
 * kind or shape, a reply carrying an error, a malformed frame) returns undefined, and decodeFrame reads the
 * frame with msgpackr as before, with the same checks and errors. Version 2 frames written here always
 * take the hand-read forms (frame.ts Writer), so the fallback is for other writers and bad input.
 */
export function readFrame(u8: Uint8Array): { from: string; entries: unknown[] } | undefined {
  try {
    return readFrameOrThrow(u8);
  } catch {
    // UNREAD, or a string that is not UTF-8: msgpackr's path reads it (or refuses the frame) as before.
    return undefined;
  }
}

/** A cursor over one frame's bytes (fields, not closures: this runs for every entry a silo receives). */
class FrameReader {
  u8: Uint8Array = new Uint8Array(0);
  dv: DataView = new DataView(this.u8.buffer);
  p = 0;
  end = 0;

  reset(u8: Uint8Array): this {
    this.u8 = u8;
    this.dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
    this.p = 0;
    this.end = u8.length;
    return this;
  }

  byte(): number {
    if (this.p >= this.end) throw UNREAD;
    return this.u8[this.p++]!;
  }

  /** `n` more bytes are there (the position is past the tag). */
  have(n: number): void {
    if (this.p + n > this.end) throw UNREAD;
  }

  int(): number {
    const t = this.byte();
    if (t < 0x80) return t;
    if (t >= 0xe0) return t - 0x100;
    const p = this.p;
    let v: number;
    switch (t) {
      case 0xcc:
        this.have(1);
        this.p = p + 1;
        return this.u8[p]!;
      case 0xcd:
        this.have(2);
        v = this.dv.getUint16(p);
        this.p = p + 2;
        return v;
      case 0xce:
        this.have(4);
        v = this.dv.getUint32(p);
        this.p = p + 4;
        return v;
      case 0xd2:
        this.have(4);
        v = this.dv.getInt32(p);
        this.p = p + 4;
        return v;
      case 0xcb:
        this.have(8);
        v = this.dv.getFloat64(p);
        this.p = p + 8;
        return v;
      default:
        throw UNREAD;
    }
  }

  /** A 16- or 32-bit length after its tag. */
  len(wide: boolean): number {
    this.have(wide ? 4 : 2);
    const v = wide ? this.dv.getUint32(this.p) : this.dv.getUint16(this.p);
    this.p += wide ? 4 : 2;
    return v;
  }

  /** An array's length (at most the bytes left: every element takes one). */
  arrayLength(): number {
    const t = this.byte();
    const n = (t & 0xf0) === 0x90 ? t & 0x0f : t === 0xdc || t === 0xdd ? this.len(t === 0xdd) : -1;
    if (n < 0 || n > this.end - this.p) throw UNREAD;
    return n;
  }

  str(): string {
    const t = this.byte();
    const n = (t & 0xe0) === 0xa0 ? t & 0x1f : t === 0xd9 ? this.byte() : t === 0xda ? this.len(false) : -1;
    if (n < 0) throw UNREAD;
    this.have(n);
    const p = this.p;
    const u8 = this.u8;
    let ascii = true;
    for (let i = p; i < p + n && ascii; i++) ascii = u8[i]! < 0x80;
    const v = u8.subarray(p, p + n);
    this.p = p + n;
    return ascii ? String.fromCharCode.apply(null, v as unknown as number[]) : utf8.decode(v);
  }

  /** Whether a string (a string key) starts here. */
  atStr(): boolean {
    const k = this.u8[this.p];
    return k !== undefined && ((k & 0xe0) === 0xa0 || k === 0xd9 || k === 0xda);
  }

  bin(): Uint8Array {
    const t = this.byte();
    const n = t === 0xc4 ? this.byte() : t === 0xc5 || t === 0xc6 ? this.len(t === 0xc6) : -1;
    if (n < 0) throw UNREAD;
    this.have(n);
    this.p += n;
    return this.u8.subarray(this.p - n, this.p);
  }

  /** A reply's value: bytes, or nil. */
  binOrNil(): Uint8Array | null {
    if (this.u8[this.p] !== 0xc0) return this.bin();
    this.p++;
    return null;
  }
}
const r = new FrameReader();

function readFrameOrThrow(u8: Uint8Array): { from: string; entries: unknown[] } {
  r.reset(u8);
  if (r.byte() !== 0x94 || r.int() !== FRAME_VERSION) throw UNREAD;
  const from = r.str();
  const n = r.arrayLength();
  const entries: unknown[] = new Array(n);
  /** Message entries, whose names are string indices until the table is read. */
  let messages = 0;
  for (let i = 0; i < n; i++) {
    const t = r.byte();
    const kind = r.byte();
    if (t === 0x98 && kind === 0) {
      const grain = r.int();
      const method = r.int();
      // A key: an int, or a string (other forms, and any check, as msgpackr's path: wire.ts checkEntry).
      const key = r.atStr() ? r.str() : r.int();
      const bytes = r.bin();
      const corr = r.int();
      const origin = r.int();
      entries[i] = [0, grain, method, key, bytes, corr, origin, r.int()];
      messages++;
    } else if (t === 0x94 && kind === 1) {
      const corr = r.int();
      const ok = r.int();
      entries[i] = [1, corr, ok, r.binOrNil()];
    } else if (t === 0x92 && kind === 2) entries[i] = [2, r.int()];
    else throw UNREAD;
  }
  const m = r.arrayLength();
  const table: string[] = new Array(m);
  for (let i = 0; i < m; i++) table[i] = r.str();
  if (r.p !== r.end) throw UNREAD;
  r.reset(EMPTY); // the frame is not held here past the call
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(from)) throw UNREAD;
  if (messages > 0) {
    // As decodeFrame's: an index that is not one stays a non-string, which the router refuses as malformed.
    for (const e of entries as unknown[][]) {
      if (e[0] !== 0) continue;
      e[1] = table[e[1] as number] ?? null;
      e[2] = table[e[2] as number] ?? null;
      e[6] = table[e[6] as number] ?? null;
    }
  }
  return { from, entries };
}
const EMPTY = new Uint8Array(0);
