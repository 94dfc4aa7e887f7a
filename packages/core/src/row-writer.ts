/**
 * tellMany's fast path for requests made only of scalar fields. The slot image of a message of the
 * method (the header after its seq word, then the msgpack payload with every value at a fixed width) is
 * built once; each row copies it into its slot and patches key, time and values: no object per row and
 * no per-field dispatch. A fixed width is valid msgpack (an int may take a wider form than the shortest;
 * f64 and f32 already have one), which every decoder here reads. Columns were validated before.
 */
import type { MethodDef } from './grain.ts';
import { HOST_SENDER, SLOT, SLOT_HEADER_SIZE } from './protocol.ts';
import { kindSpec, type ScalarKind } from './schema/kinds.ts';
import type { Schema } from './schema/index.ts';
import { keyBytes } from './schema/msgpack-encode.ts';
import { splitKeyHi, splitKeyLo } from './slot.ts';

/** Writes row `i` into the slot at `slot` (a multiple of 16) of a buffer, through its views (all but seq). */
export type RowWrite = (i32: Int32Array, dv: DataView, slot: number, i: number, time: number) => void;

export interface Template {
  /** The image after the seq word. */
  readonly image: Uint8Array;
  /** Per field: its kind and the offset of its value's tag byte within the slot. */
  readonly fields: ReadonlyArray<{ readonly name: string; readonly kind: ScalarKind; readonly at: number }>;
}

const templates = new WeakMap<MethodDef, Map<number, Template | null>>();

/**
 * The method's fixed slot image for int keys (cached per method and grain id), or null where a field is not a scalar.
 */
export function rowTemplate(method: MethodDef, grainId: number): Template | null {
  let byGrain = templates.get(method);
  if (!byGrain) templates.set(method, (byGrain = new Map()));
  let t = byGrain.get(grainId);
  if (t === undefined) byGrain.set(grainId, (t = template(method, grainId)));
  return t;
}

function template(method: MethodDef, grainId: number): Template | null {
  const req = method.request;
  const names = req.fieldNames;
  if (names.length >= 16) return null;
  const kinds: ScalarKind[] = [];
  for (const n of names) {
    const f = req.fields[n] as Schema;
    if (f.kind !== 'scalar') return null;
    kinds.push(f.scalar);
  }
  const parts: number[] = [0x80 | names.length];
  const fields: Array<{ name: string; kind: ScalarKind; at: number }> = [];
  for (const [i, n] of names.entries()) {
    parts.push(...keyBytes(n));
    const kind = kinds[i]!;
    const { tag, width } = kindSpec(kind).msgpack.fixed;
    fields.push({ name: n, kind, at: SLOT_HEADER_SIZE + parts.length });
    parts.push(tag, ...new Array<number>(width - 1).fill(0));
  }
  const slot = new Uint8Array(SLOT_HEADER_SIZE + parts.length);
  const dv = new DataView(slot.buffer);
  slot.set(parts, SLOT_HEADER_SIZE);
  dv.setUint32(SLOT.length, parts.length, true);
  dv.setUint32(SLOT.method, method.id, true);
  dv.setUint32(SLOT.flags, 0, true);
  dv.setUint32(SLOT.corr, 0, true);
  dv.setUint32(SLOT.sender, HOST_SENDER, true);
  dv.setUint32(SLOT.grain, grainId, true);
  return { image: slot.subarray(SLOT.seq + 4), fields };
}

/**
 * A writer of `method`'s rows from `cols` (int keys), or undefined where the fast path does not apply
 * (a field that is not a scalar). The reference form of the image: one closure per row and per field.
 * The send paths use the code generated from the same template (row-codegen.ts, tell-image.ts), which
 * the tests hold byte for byte to this writer, and this writer to the general encoder; bench/host-path.ts
 * times it as the baseline.
 */
export function compileRowWriter(
  method: MethodDef,
  grainId: number,
  key: ArrayLike<unknown>,
  cols: Record<string, ArrayLike<unknown>>,
  payloadCapacity: number,
): RowWrite | undefined {
  if (SLOT.seq !== 0) return undefined;
  const t = rowTemplate(method, grainId);
  if (!t || t.image.length + 4 - SLOT_HEADER_SIZE > payloadCapacity) return undefined;
  const { image, fields } = t;
  // The image as 32-bit words (the slot is 16-byte aligned, the image starts at its second word): a few
  // word stores beat a typed-array copy call for images of a few dozen bytes.
  const words = new Int32Array(Math.ceil(image.length / 4));
  new Uint8Array(words.buffer).set(image);
  const nw = words.length;
  const keys = key as ArrayLike<number>;
  // One closure per field kind, chosen once per call: the row loop then only patches bytes.
  const patches = fields.map(({ name, kind, at }) => kindSpec(kind).msgpack.fixed.patch(at, cols[name]!));
  const n = patches.length;
  return (i32, dv, slot, i, time) => {
    const w0 = (slot >> 2) + 1;
    for (let w = 0; w < nw; w++) i32[w0 + w] = words[w]!;
    const k = keys[i]!;
    dv.setUint32(slot + SLOT.keyLo, splitKeyLo(k), true);
    dv.setUint32(slot + SLOT.keyHi, splitKeyHi(k), true);
    dv.setFloat64(slot + SLOT.time, time, true);
    for (let f = 0; f < n; f++) patches[f]!(dv, slot, i);
  };
}
