/**
 * tellMany's column image: ONE buffer per call (or per chunk of rows) that carries a method's columns as
 * they are, for a backend that expands rows where they run (a CPU lane, SlotFlag.IMAGE; a CUDA kernel's bulk job)
 * instead of the host
 * writing one ring slot per row. Only methods whose request is all scalars and whose key is an integer
 * (the row template of row-writer.ts exists) have one. Layout: a ColumnImageHeader, `columns`
 * ColumnDesc entries (request field order), then the key column (f64: keys up to 2^53, one native
 * conversion from an Int32Array) and each field column at its kind's natural width (bool: one byte
 * 0/1), each 8-aligned. Columns were validated before (bulk.ts validateColumns).
 * The same schemas are emitted into CUDA units (codegen abi.ts) with static_asserts.
 */
import type { MethodDef } from './grain.ts';
import { RinggrainError } from './errors.ts';
import { rowTemplate } from './row-writer.ts';
import { t } from './schema/index.ts';
import { layoutOf } from './schema/layout.ts';
import { kindSpec, type ScalarKind } from './schema/kinds.ts';

/** 'RGCI' little-endian: a reader that finds another word was handed something that is not an image. */
export const COLUMN_IMAGE_MAGIC = 0x49434752;
export const COLUMN_IMAGE_VERSION = 1;
/** Rows per image the host cuts a call into (bounded pinned side buffers; one bulk job per chunk). */
export const COLUMN_IMAGE_CHUNK_ROWS = 65536;

/** The kinds a column may have, by code (the device switches on the code, not on a name). */
export const COLUMN_KINDS: readonly ScalarKind[] = ['f32', 'f64', 'i8', 'u8', 'i16', 'u16', 'i32', 'u32', 'bool'];

export const ColumnImageHeader = t.struct({
  magic: t.u32,
  version: t.u32,
  grainId: t.u32,
  /** The method's index in its grain's method list (the slot's method field). */
  method: t.u32,
  rows: t.u32,
  columns: t.u32,
  /** Index of this image's first row in the tellMany call (tellError row indices are the call's). */
  firstRow: t.u32,
  /** Total bytes of the image (header to the end of the last column). */
  bytes: t.u32,
  /** Byte offset of the key column (f64 per row). */
  keysAt: t.u32,
  _pad: t.u32,
});

export const ColumnDesc = t.struct({
  /** Index in COLUMN_KINDS. */
  kind: t.u32,
  /** Byte offset of the column from the image's start. */
  at: t.u32,
});

export const COLUMN_IMAGE_HEADER_BYTES = layoutOf(ColumnImageHeader).size;
export const COLUMN_DESC_BYTES = layoutOf(ColumnDesc).size;

const H = {
  magic: 0,
  version: 4,
  grainId: 8,
  method: 12,
  rows: 16,
  columns: 20,
  firstRow: 24,
  bytes: 28,
  keysAt: 32,
} as const;

/** An image that does not read back (wrong magic or version, a column outside the buffer). */
export class ColumnImageError extends RinggrainError {
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super('COLUMN_IMAGE_INVALID', `column image: ${message}`, {
      ...opts,
      hint: 'build images with packColumnImage from validated columns, and read them with the same core version',
    });
  }
}

export interface ColumnField {
  readonly name: string;
  readonly kind: ScalarKind;
}

/** The method's image fields (request order), or null where it has no image (a non-scalar field). */
export function columnImageFields(method: MethodDef, grainId: number): readonly ColumnField[] | null {
  const tpl = rowTemplate(method, grainId);
  return tpl ? tpl.fields.map(({ name, kind }) => ({ name, kind })) : null;
}

const align8 = (n: number): number => (n + 7) & ~7;

function columnBytes(kind: ScalarKind, rows: number): number {
  return kind === 'bool' ? rows : kindSpec(kind).size * rows;
}

/** Packs rows [from, to) of validated columns into one image. */
export function packColumnImage(
  fields: readonly ColumnField[],
  o: {
    readonly grainId: number;
    readonly method: number;
    readonly key: ArrayLike<unknown>;
    readonly cols: Readonly<Record<string, ArrayLike<unknown>>>;
    readonly from: number;
    readonly to: number;
  },
): Uint8Array {
  const rows = o.to - o.from;
  let at = align8(COLUMN_IMAGE_HEADER_BYTES + COLUMN_DESC_BYTES * fields.length);
  const keysAt = at;
  at += 8 * rows;
  const colAt: number[] = [];
  for (const f of fields) {
    at = align8(at);
    colAt.push(at);
    at += columnBytes(f.kind, rows);
  }
  const bytes = align8(at);
  const buf = new ArrayBuffer(bytes);
  const dv = new DataView(buf);
  dv.setUint32(H.magic, COLUMN_IMAGE_MAGIC, true);
  dv.setUint32(H.version, COLUMN_IMAGE_VERSION, true);
  dv.setUint32(H.grainId, o.grainId, true);
  dv.setUint32(H.method, o.method, true);
  dv.setUint32(H.rows, rows, true);
  dv.setUint32(H.columns, fields.length, true);
  dv.setUint32(H.firstRow, o.from, true);
  dv.setUint32(H.bytes, bytes, true);
  dv.setUint32(H.keysAt, keysAt, true);
  copyColumn(new Float64Array(buf, keysAt, rows), o.key as ArrayLike<number>, o.from, rows);
  for (const [i, f] of fields.entries()) {
    const d = COLUMN_IMAGE_HEADER_BYTES + COLUMN_DESC_BYTES * i;
    dv.setUint32(d, COLUMN_KINDS.indexOf(f.kind), true);
    dv.setUint32(d + 4, colAt[i]!, true);
    const src = o.cols[f.name]!;
    if (f.kind === 'bool') {
      const dst = new Uint8Array(buf, colAt[i]!, rows);
      for (let r = 0; r < rows; r++) dst[r] = src[o.from + r] ? 1 : 0;
    } else {
      const Ctor = kindSpec(f.kind).array!;
      copyColumn(new Ctor(buf, colAt[i]!, rows), src as ArrayLike<number>, o.from, rows);
    }
  }
  return new Uint8Array(buf);
}

/**
 * dst[r] = src[from + r]: a plain loop, which measured several times faster than TypedArray.set here
 * (bench/host-path.ts).
 */
function copyColumn(dst: { [i: number]: number }, src: ArrayLike<number>, from: number, rows: number): void {
  for (let r = 0; r < rows; r++) dst[r] = src[from + r]!;
}

export interface ColumnImage {
  readonly grainId: number;
  readonly method: number;
  readonly rows: number;
  readonly firstRow: number;
  readonly keys: Float64Array;
  /** Per column (request order): its kind and values (bool as 0/1 bytes). */
  readonly columns: ReadonlyArray<{ readonly kind: ScalarKind; readonly values: ArrayLike<number> }>;
}

/** Reads an image back (the reference reader: tests, and a backend that expands on the host). */
export function readColumnImage(image: Uint8Array): ColumnImage {
  if (image.byteLength < COLUMN_IMAGE_HEADER_BYTES || image.byteOffset % 8 !== 0)
    throw new ColumnImageError(`${image.byteLength} bytes at offset ${image.byteOffset} are not an 8-aligned image`);
  const dv = new DataView(image.buffer, image.byteOffset, image.byteLength);
  const u = (at: number): number => dv.getUint32(at, true);
  if (u(H.magic) !== COLUMN_IMAGE_MAGIC || u(H.version) !== COLUMN_IMAGE_VERSION)
    throw new ColumnImageError(
      `magic/version ${u(H.magic).toString(16)}/${u(H.version)} is ` +
        `not ${COLUMN_IMAGE_MAGIC.toString(16)}/${COLUMN_IMAGE_VERSION}`,
    );
  const rows = u(H.rows);
  const n = u(H.columns);
  const within = (at: number, len: number, what: string): void => {
    if (at % 8 !== 0 || at + len > u(H.bytes) || u(H.bytes) > image.byteLength)
      throw new ColumnImageError(`${what} at ${at} (+${len}) is outside the image's ${u(H.bytes)} bytes`);
  };
  within(u(H.keysAt), 8 * rows, 'the key column');
  const keys = new Float64Array(image.buffer, image.byteOffset + u(H.keysAt), rows);
  const columns: Array<{ kind: ScalarKind; values: ArrayLike<number> }> = [];
  for (let i = 0; i < n; i++) {
    const d = COLUMN_IMAGE_HEADER_BYTES + COLUMN_DESC_BYTES * i;
    const kind = COLUMN_KINDS[u(d)];
    if (kind === undefined) throw new ColumnImageError(`column ${i} has kind code ${u(d)}`);
    const at = u(d + 4);
    within(at, columnBytes(kind, rows), `column ${i}`);
    const values =
      kind === 'bool'
        ? new Uint8Array(image.buffer, image.byteOffset + at, rows)
        : new (kindSpec(kind).array!)(image.buffer, image.byteOffset + at, rows);
    columns.push({ kind, values });
  }
  return { grainId: u(H.grainId), method: u(H.method), rows, firstRow: u(H.firstRow), keys, columns };
}

/** Bytes an image of `rows` rows of these fields takes (as packColumnImage lays it out). */
export function columnImageBytes(fields: readonly ColumnField[], rows: number): number {
  let at = align8(COLUMN_IMAGE_HEADER_BYTES + COLUMN_DESC_BYTES * fields.length) + 8 * rows;
  for (const f of fields) at = align8(at) + columnBytes(f.kind, rows);
  return align8(at);
}

/**
 * Packs the rows `idx[from, to)` (row indices of the call, in order) into `dst` (8-aligned, large enough:
 * columnImageBytes), in packColumnImage's layout: one lane's share of a tellMany call, written straight
 * into shared memory. `firstRow` is the call's index of the first row. Returns the image's bytes.
 */
export function packColumnImageRows(
  fields: readonly ColumnField[],
  dst: Uint8Array,
  o: {
    readonly grainId: number;
    readonly method: number;
    readonly key: ArrayLike<unknown>;
    readonly cols: ReadonlyArray<ArrayLike<unknown>>;
    readonly idx: Int32Array;
    readonly from: number;
    readonly to: number;
  },
): number {
  const rows = o.to - o.from;
  const bytes = columnImageBytes(fields, rows);
  if (bytes > dst.byteLength || dst.byteOffset % 8 !== 0)
    throw new ColumnImageError(
      `${rows} rows take ${bytes} bytes; the target has ${dst.byteLength} at offset ${dst.byteOffset}`,
    );
  const buf = dst.buffer;
  const base = dst.byteOffset;
  const dv = new DataView(buf, base, bytes);
  const idx = o.idx;
  let at = align8(COLUMN_IMAGE_HEADER_BYTES + COLUMN_DESC_BYTES * fields.length);
  const keysAt = at;
  const keys = new Float64Array(buf, base + keysAt, rows);
  const key = o.key as ArrayLike<number>;
  for (let r = 0; r < rows; r++) keys[r] = key[idx[o.from + r]!]!;
  at += 8 * rows;
  for (const [i, f] of fields.entries()) {
    at = align8(at);
    const d = COLUMN_IMAGE_HEADER_BYTES + COLUMN_DESC_BYTES * i;
    dv.setUint32(d, COLUMN_KINDS.indexOf(f.kind), true);
    dv.setUint32(d + 4, at, true);
    const src = o.cols[i]!;
    if (f.kind === 'bool') {
      const out = new Uint8Array(buf, base + at, rows);
      for (let r = 0; r < rows; r++) out[r] = src[idx[o.from + r]!] ? 1 : 0;
    } else {
      const out = new (kindSpec(f.kind).array!)(buf, base + at, rows) as { [i: number]: number };
      const s = src as ArrayLike<number>;
      for (let r = 0; r < rows; r++) out[r] = s[idx[o.from + r]!]!;
    }
    at += columnBytes(f.kind, rows);
  }
  dv.setUint32(H.magic, COLUMN_IMAGE_MAGIC, true);
  dv.setUint32(H.version, COLUMN_IMAGE_VERSION, true);
  dv.setUint32(H.grainId, o.grainId, true);
  dv.setUint32(H.method, o.method, true);
  dv.setUint32(H.rows, rows, true);
  dv.setUint32(H.columns, fields.length, true);
  dv.setUint32(H.firstRow, rows ? idx[o.from]! : 0, true);
  dv.setUint32(H.bytes, bytes, true);
  dv.setUint32(H.keysAt, keysAt, true);
  return bytes;
}
