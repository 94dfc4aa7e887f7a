import type { PackedStates, StateRows } from './types.ts';

/**
 * Chunks: a store may keep an int-keyed table as chunks, the actors with keys 64c … 64c + 63 in one
 * record (key c), so a flush of a million dense keys writes about 15,600 records, not a million (a
 * record costs a store about a microsecond or more; merging a row into its chunk, tens of nanoseconds).
 * Sparse keys cost about one record a row, as without chunks. Format of a chunk:
 *
 *   byte 0: format (1)   byte 1: rows n (1..64)   bytes 2..7: 0
 *   n slot numbers (key − 64c, ascending), padded to a multiple of 8
 *   n versions (float64, little-endian)
 *   format 2 only: n epochs (float64, little-endian): the partition epoch each row was written under
 *   n + 1 offsets (uint32, little-endian) into the data that follows
 *   the states, back to back
 */
export const CHUNK = 64;
const FORMAT = 1;
/**
 * Format 1 with a row epoch each (cluster-fenced writes); written only when a row has one, so unfenced tables stay
 * format 1.
 */
const FORMAT_EPOCHS = 2;

// `+ 0` turns -0 into 0: key -0 is key 0 (a safe integer, equal to 0), but LMDB's key encoding writes a
// chunk id of -0 as another entry than 0 (one that does not even read back as a number).
export const chunkOf = (key: number): number => Math.floor(key / CHUNK) + 0;

/** A parsed chunk: where its parts are in `buf`. */
export interface Chunk {
  readonly buf: Uint8Array;
  readonly dv: DataView;
  readonly n: number;
  /** Byte offsets of the versions, the epochs (0: format 1, none), the offsets table and the data. */
  readonly versionsAt: number;
  readonly epochsAt: number;
  readonly offsetsAt: number;
  readonly dataAt: number;
}

function layout(
  n: number,
  epochs: boolean,
): { versionsAt: number; epochsAt: number; offsetsAt: number; dataAt: number } {
  const versionsAt = 8 + ((n + 7) & ~7);
  const epochsAt = epochs ? versionsAt + 8 * n : 0;
  const offsetsAt = versionsAt + 8 * n * (epochs ? 2 : 1);
  return { versionsAt, epochsAt, offsetsAt, dataAt: offsetsAt + 4 * (n + 1) };
}

/** Parses and checks a chunk; a string says why it is malformed. */
export function parseChunk(buf: Uint8Array): Chunk | string {
  if (buf.length < 8) return `a chunk of ${buf.length} bytes is shorter than its header`;
  if (buf[0] !== FORMAT && buf[0] !== FORMAT_EPOCHS) return `unknown chunk format ${buf[0]}`;
  const n = buf[1]!;
  if (n < 1 || n > CHUNK) return `a chunk of ${n} rows`;
  const { versionsAt, epochsAt, offsetsAt, dataAt } = layout(n, buf[0] === FORMAT_EPOCHS);
  if (buf.length < dataAt) return `a chunk of ${n} rows needs ${dataAt} header bytes, has ${buf.length}`;
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.length);
  for (let r = 0; r < n; r++) {
    if (buf[8 + r]! >= CHUNK || (r > 0 && buf[8 + r]! <= buf[7 + r]!)) return `slot numbers out of order at row ${r}`;
  }
  let prev = 0;
  for (let r = 0; r <= n; r++) {
    const o = dv.getUint32(offsetsAt + 4 * r, true);
    if (o < prev || dataAt + o > buf.length || (r === 0 && o !== 0)) return `state offsets out of range at row ${r}`;
    prev = o;
  }
  return { buf, dv, n, versionsAt, epochsAt, offsetsAt, dataAt };
}

export const slotAt = (c: Chunk, r: number): number => c.buf[8 + r]!;
export const versionAt = (c: Chunk, r: number): number => c.dv.getFloat64(c.versionsAt + 8 * r, true);
/** The partition epoch row r was written under (0: none, a format-1 chunk). */
export const epochAt = (c: Chunk, r: number): number =>
  c.epochsAt === 0 ? 0 : c.dv.getFloat64(c.epochsAt + 8 * r, true);
export const stateStart = (c: Chunk, r: number): number => c.dataAt + c.dv.getUint32(c.offsetsAt + 4 * r, true);
export const stateEnd = (c: Chunk, r: number): number => c.dataAt + c.dv.getUint32(c.offsetsAt + 4 * r + 4, true);

/** The row of `slot` in a chunk, or -1. */
export function rowOf(c: Chunk, slot: number): number {
  for (let r = 0; r < c.n; r++) {
    const s = c.buf[8 + r]!;
    if (s === slot) return r;
    if (s > slot) return -1;
  }
  return -1;
}

/**
 * Copies `src[start, end)` to `dst` at `at`. A state of a few dozen bytes is copied byte by byte: a view for
 * `set` costs more than the copy (a Buffer's `subarray`, as of lmdb-js's read buffer, makes a FastBuffer).
 */
export function copyBytes(dst: Uint8Array, at: number, src: Uint8Array, start: number, end: number): void {
  if (end - start > 64) {
    dst.set(src.subarray(start, end), at);
    return;
  }
  for (let k = start; k < end; k++) dst[at++] = src[k]!;
}

/** Writes chunks into one growing scratch buffer; `finish` returns a view of the chunk just built. */
export class ChunkWriter {
  private buf = new Uint8Array(4096);
  private dv = new DataView(this.buf.buffer);
  private n = 0;
  private r = 0;
  private dataEnd = 0;
  private at = { versionsAt: 0, epochsAt: 0, offsetsAt: 0, dataAt: 0 };

  /** Starts a chunk of `n` rows holding `dataBytes` bytes of states (`epochs`: format 2, a row epoch each). */
  begin(n: number, dataBytes: number, epochs = false): void {
    this.n = n;
    this.r = 0;
    this.at = layout(n, epochs);
    this.dataEnd = this.at.dataAt;
    const size = this.at.dataAt + dataBytes;
    if (size > this.buf.length) {
      this.buf = new Uint8Array(Math.max(size, this.buf.length * 2));
      this.dv = new DataView(this.buf.buffer);
    }
    this.buf.fill(0, 0, this.at.versionsAt);
    this.buf[0] = epochs ? FORMAT_EPOCHS : FORMAT;
    this.buf[1] = n;
  }

  /** Appends a row: its slot, version and the state `src[start, end)` (and its epoch, in a format-2 chunk). */
  row(slot: number, version: number, src: Uint8Array, start: number, end: number, epoch = 0): void {
    const r = this.r++;
    this.buf[8 + r] = slot;
    this.dv.setFloat64(this.at.versionsAt + 8 * r, version, true);
    if (this.at.epochsAt !== 0) this.dv.setFloat64(this.at.epochsAt + 8 * r, epoch, true);
    this.dv.setUint32(this.at.offsetsAt + 4 * r, this.dataEnd - this.at.dataAt, true);
    copyBytes(this.buf, this.dataEnd, src, start, end);
    this.dataEnd += end - start;
  }

  finish(): Uint8Array {
    if (this.r !== this.n) throw new Error(`chunk writer: ${this.r} rows of ${this.n}`);
    this.dv.setUint32(this.at.offsetsAt + 4 * this.n, this.dataEnd - this.at.dataAt, true);
    return this.buf.subarray(0, this.dataEnd);
  }
}

/** Where row i of a batch's states is, without a view object per row. */
export interface Spans {
  src(i: number): Uint8Array;
  start(i: number): number;
  end(i: number): number;
}

export function spans(rows: StateRows): Spans {
  if (Array.isArray(rows)) {
    const list = rows as readonly Uint8Array[];
    return { src: (i) => list[i]!, start: () => 0, end: (i) => list[i]!.length };
  }
  if ('stride' in rows) {
    const { bytes, stride } = rows;
    return { src: () => bytes, start: (i) => i * stride, end: (i) => (i + 1) * stride };
  }
  const { bytes, offsets } = rows as PackedStates;
  return { src: () => bytes, start: (i) => offsets[i]!, end: (i) => offsets[i + 1]! };
}

/** The rows of a batch that fall in one chunk: rows `rowAt(j)` for j in [from, to), keys ascending. */
export interface ChunkRows {
  readonly cid: number;
  readonly keys: ArrayLike<number>;
  readonly expected: ArrayLike<number> | undefined;
  readonly rowAt: (j: number) => number;
  readonly from: number;
  readonly to: number;
  /** Per batch row, the partition epoch it is written under (a fenced write); the chunk becomes format 2. */
  readonly epochs?: ArrayLike<number> | undefined;
}

/** A batch row whose stored version is not the expected one. */
export interface ChunkConflict {
  readonly row: number;
  readonly found: number;
}

/** Checks a stored row (throws the store's decode error). */
export type RowCheck = (key: number, version: number, size: number) => void;

/** The stored version of `key` in chunk c (0: none), checked. */
export function versionIn(c: Chunk | null, key: number, check: RowCheck): number {
  const cid = chunkOf(key);
  const r = c ? rowOf(c, key - cid * CHUNK) : -1;
  if (r < 0) return 0;
  const v = versionAt(c!, r);
  check(key, v, stateEnd(c!, r) - stateStart(c!, r));
  return v;
}

/**
 * Merges a batch's rows into chunk c (null: none stored): each row's stored version must be its expected
 * one; its new version (expected + 1) goes into `versions`. Returns the new chunk (a view of w's buffer)
 * or the first conflict.
 */
export function mergePut(
  w: ChunkWriter,
  c: Chunk | null,
  b: ChunkRows,
  sp: Spans,
  versions: Float64Array,
  check: RowCheck,
): Uint8Array | ChunkConflict {
  const { cid, keys, rowAt, from, to } = b;
  const expected = b.expected!;
  const en = c ? c.n : 0;
  // Pass 1: rows and bytes of the merged chunk; every batch row's stored version checked.
  let m = 0;
  let bytes = 0;
  for (let e = 0, j = from; e < en || j < to; m++) {
    const es = e < en ? slotAt(c!, e) : CHUNK;
    const i = j < to ? rowAt(j) : -1;
    const bs = i >= 0 ? keys[i]! - cid * CHUNK : CHUNK;
    if (bs <= es) {
      const have = bs === es ? versionIn(c, keys[i]!, check) : 0;
      if (have !== expected[i]) return { row: i, found: have };
      bytes += sp.end(i) - sp.start(i);
      j++;
      if (bs === es) e++;
    } else {
      bytes += stateEnd(c!, e) - stateStart(c!, e);
      e++;
    }
  }
  // Pass 2: write it (with row epochs once any row has one).
  const withEpochs = b.epochs !== undefined || (c !== null && c.epochsAt !== 0);
  w.begin(m, bytes, withEpochs);
  for (let e = 0, j = from; e < en || j < to; ) {
    const es = e < en ? slotAt(c!, e) : CHUNK;
    const i = j < to ? rowAt(j) : -1;
    const bs = i >= 0 ? keys[i]! - cid * CHUNK : CHUNK;
    if (bs <= es) {
      const v = expected[i]! + 1;
      w.row(bs, v, sp.src(i), sp.start(i), sp.end(i), b.epochs?.[i] ?? 0);
      versions[i] = v;
      j++;
      if (bs === es) e++;
    } else {
      w.row(es, versionAt(c!, e), c!.buf, stateStart(c!, e), stateEnd(c!, e), epochAt(c!, e));
      e++;
    }
  }
  return w.finish();
}

/**
 * Removes a batch's rows from chunk c (at their expected versions, when given; 0: must be absent).
 * Returns what is left (null: nothing, remove the record; undefined: unchanged) and how many rows went,
 * or the first conflict.
 */
export function mergeDelete(
  w: ChunkWriter,
  c: Chunk | null,
  b: ChunkRows,
  check: RowCheck,
): { chunk: Uint8Array | null | undefined; deleted: number } | ChunkConflict {
  const { cid, keys, expected, rowAt, from, to } = b;
  const drop = new Uint8Array(CHUNK);
  let deleted = 0;
  for (let j = from; j < to; j++) {
    const i = rowAt(j);
    const have = versionIn(c, keys[i]!, check);
    if (expected !== undefined && have !== expected[i]) return { row: i, found: have };
    if (have > 0) {
      drop[keys[i]! - cid * CHUNK] = 1;
      deleted++;
    }
  }
  if (deleted === 0) return { chunk: undefined, deleted };
  const left = c!.n - deleted;
  if (left === 0) return { chunk: null, deleted };
  let bytes = 0;
  for (let e = 0; e < c!.n; e++) if (!drop[slotAt(c!, e)]) bytes += stateEnd(c!, e) - stateStart(c!, e);
  w.begin(left, bytes, c!.epochsAt !== 0);
  for (let e = 0; e < c!.n; e++)
    if (!drop[slotAt(c!, e)])
      w.row(slotAt(c!, e), versionAt(c!, e), c!.buf, stateStart(c!, e), stateEnd(c!, e), epochAt(c!, e));
  return { chunk: w.finish(), deleted };
}

/** Calls `fn(cid, from, to)` for each run of batch rows (in key order) that share a chunk. */
export function forEachChunk(
  keys: ArrayLike<number>,
  n: number,
  rowAt: (j: number) => number,
  fn: (cid: number, from: number, to: number) => void,
): void {
  for (let j = 0; j < n; ) {
    const cid = chunkOf(keys[rowAt(j)]!);
    let to = j + 1;
    while (to < n && chunkOf(keys[rowAt(to)]!) === cid) to++;
    fn(cid, j, to);
    j = to;
  }
}
