/**
 * tellMany's row loop, generated per (method, grain id, tell or ask, column array types). The closure
 * row writer (row-writer.ts) calls one patch closure per field per row and writes through a loop of
 * word copies; here the image's words are constants in straight-line code, key, time and corr are word
 * stores, each field one typed store, and the ring's claim and publish are inlined calls on one
 * producer class: one monomorphic loop per shape, ~3x fewer instructions a row. The bytes are the same
 * as the closure writer's (test/row-codegen.test.ts checks every kind and edge values), so the slot
 * format, and the CUDA ingress that reads it, are untouched.
 *
 * Slots are claimed in chunks (RingProducer.reserve: at most one read of the consumer's tail a chunk),
 * each published by its seq as it is written; head once at the end. Several lanes (the CUDA backend's
 * host lanes, the CPU pool's threads): a chunk of 256 rows is sorted by lane (laneOfKey, inlined; a
 * counting sort keeps each lane's rows in row order) and written lane by lane, one reserve per lane, as
 * rows spread at random over lanes cost a mispredicted branch and a change of ring each. A row whose
 * lane is full stops the loop (it and the rows after it wait, in order).
 */
import type { MethodDef } from './grain.ts';
import { mix32 } from './lanes.ts';
import { SLOT, SLOT_HEADER_SIZE, SlotFlag } from './protocol.ts';
import type { RingProducer } from './ring.ts';
import { rowTemplate } from './row-writer.ts';
import { kindSpec } from './schema/kinds.ts';

/**
 * Writes rows [from, end) (keys[i], cols[f][i] for request field f in schema order) into the lanes'
 * rings until a row's lane is full; returns the next row. `corrBase`: an ask row i gets corr corrBase + i.
 */
export type RowLoop = (
  producers: readonly RingProducer[],
  keys: ArrayLike<number>,
  cols: ReadonlyArray<ArrayLike<unknown>>,
  from: number,
  end: number,
  time: number,
  corrBase: number,
) => number;

const loops = new WeakMap<MethodDef, Map<string, RowLoop | null>>();

/** The constructor name of a column ("Float64Array", "Array"): part of the loop's shape. */
function shapeOf(col: unknown): string {
  return (col as { constructor?: { name?: string } } | null)?.constructor?.name ?? 'unknown';
}

/**
 * The generated loop for `method`'s rows with these column types, or undefined where the fast path does
 * not apply (a field that is not a scalar, or an image larger than a slot's payload).
 */
export function compileRowLoop(
  method: MethodDef,
  grainId: number,
  key: ArrayLike<unknown>,
  cols: Record<string, ArrayLike<unknown>>,
  payloadCapacity: number,
  ask: boolean,
): RowLoop | undefined {
  const t = rowTemplate(method, grainId);
  if (!t || t.image.length + 4 - SLOT_HEADER_SIZE > payloadCapacity) return undefined;
  const intKeys =
    key instanceof Int32Array ||
    key instanceof Int16Array ||
    key instanceof Int8Array ||
    key instanceof Uint16Array ||
    key instanceof Uint8Array;
  const shape =
    `${grainId}|${ask ? 'ask' : 'tell'}|${intKeys ? 'int' : 'any'}|` +
    `${t.fields.map((f) => shapeOf(cols[f.name])).join(',')}`;
  let byShape = loops.get(method);
  if (!byShape) loops.set(method, (byShape = new Map()));
  let loop = byShape.get(shape);
  if (loop === undefined) byShape.set(shape, (loop = generate(t, intKeys, ask)));
  return loop ?? undefined;
}

function generate(t: NonNullable<ReturnType<typeof rowTemplate>>, intKeys: boolean, ask: boolean): RowLoop {
  const { image, fields } = t;
  // The image starts at the slot's second word (after seq).
  const words = new Int32Array(Math.ceil(image.length / 4));
  new Uint8Array(words.buffer).set(image);
  const W = (byte: number) => byte >> 2;
  const per: string[] = [];
  for (let w = 0; w < words.length; w++) {
    const at = w + 1; // word index within the slot
    if (at === W(SLOT.keyLo) || at === W(SLOT.keyHi) || (ask && at === W(SLOT.corr))) continue; // row values below
    if (at === W(SLOT.time)) per.push(`i32[w + ${at}] = T0;`);
    else if (at === W(SLOT.time) + 1) per.push(`i32[w + ${at}] = T1;`);
    else if (ask && at === W(SLOT.flags)) per.push(`i32[w + ${at}] = ${words[w]! | SlotFlag.ASK | 0};`);
    else per.push(`i32[w + ${at}] = ${words[w]! | 0};`);
  }
  per.push(
    'const k = keys[i];',
    `i32[w + ${W(SLOT.keyLo)}] = k;`,
    `i32[w + ${W(SLOT.keyHi)}] = ${intKeys ? 'k >> 31' : 'Math.floor(k / 4294967296)'};`,
  );
  if (ask) per.push(`i32[w + ${W(SLOT.corr)}] = corrBase + i;`);
  for (const [f, { kind, at }] of fields.entries()) {
    const op = kindSpec(kind).msgpack.fixed.op;
    per.push(op === 'tag' ? `u8[s + ${at}] = c${f}[i] ? 0xc3 : 0xc2;` : `dv.${op}(s + ${at + 1}, c${f}[i]);`);
  }
  const write = per.join('\n      ');
  // laneOfKey (lanes.ts) of an int key, inlined: its high word, mixed with the low one by murmur3's
  // finalizer. The tests hold it to laneOfKey for wide and negative keys.
  const hi = intKeys ? 'keys[i] >> 31' : 'Math.floor(keys[i] / 4294967296) | 0';
  const laneExpr = `mix32((keys[i] >>> 0) ^ Math.imul(${hi}, 0x9e3779b9)) % lanes`;
  const colDecl = fields.map((_, f) => `c${f} = cols[${f}]`).join(', ');
  const src = `"use strict";
return function rowLoop(producers, keys, cols, from, end, time, corrBase) {
  ${colDecl ? `const ${colDecl};` : ''}
  tf[0] = time;
  const T0 = ti[0], T1 = ti[1];
  const lanes = producers.length;
  let next = from;
  if (lanes === 1) {
    const p = producers[0];
    const ring = p.ring, i32 = ring.i32, dv = ring.dv, u8 = ring.u8;
    while (next < end) {
      const room = p.reserve(end - next);
      if (room === 0) break;
      for (let i = next, stop = next + room; i < stop; i++) {
        const s = p.claimNext();
        const w = s >> 2;
      ${write}
        p.publishReserved(s);
      }
      next += room;
    }
  } else {
    // Chunks of rows: each row's lane, then per lane its free slots (one reserve a lane a chunk), then
    // each lane's rows in row order (a counting sort), so the writes run lane by lane, not row by row.
    const big = lanes > MAX_LANES;
    const count = big ? new Int32Array(lanes) : countS, room = big ? new Int32Array(lanes) : roomS;
    const start = big ? new Int32Array(lanes) : startS, fill = big ? new Int32Array(lanes) : fillS;
    while (next < end) {
      const chunkEnd = end - next > CHUNK ? next + CHUNK : end;
      count.fill(0, 0, lanes);
      for (let i = next; i < chunkEnd; i++) {
        const l = ${laneExpr};
        laneOf[i - next] = l;
        count[l]++;
      }
      let stop = chunkEnd;
      let short = false;
      for (let l = 0; l < lanes; l++) {
        room[l] = count[l] === 0 ? 0 : producers[l].reserve(count[l]);
        if (room[l] < count[l]) short = true;
      }
      if (short) {
        // The first row whose lane has no slot left stops the loop: it and the rows after it wait, in order.
        fill.fill(0, 0, lanes);
        for (let i = next; i < chunkEnd; i++) {
          const l = laneOf[i - next];
          if (fill[l] === room[l]) {
            stop = i;
            break;
          }
          fill[l]++;
        }
      }
      let acc = 0;
      for (let l = 0; l < lanes; l++) {
        start[l] = acc;
        fill[l] = acc;
        acc += count[l];
      }
      for (let i = next; i < stop; i++) order[fill[laneOf[i - next]]++] = i;
      for (let l = 0; l < lanes; l++) {
        const a = start[l], b = fill[l];
        if (a === b) continue;
        const p = producers[l];
        const ring = p.ring, i32 = ring.i32, dv = ring.dv, u8 = ring.u8;
        for (let q = a; q < b; q++) {
          const i = order[q];
          const s = p.claimNext();
          const w = s >> 2;
      ${write}
          p.publishReserved(s);
        }
      }
      next = stop;
      if (stop < chunkEnd) break;
    }
  }
  for (let l = 0; l < lanes; l++) producers[l].flushHead();
  return next;
};`;
  // The time's two words, through a scratch of the host's (little-endian) byte order, like the slot's.
  const tf = new Float64Array(1);
  const ti = new Int32Array(tf.buffer);
  // Scratch of the multi-lane chunks (the loop is synchronous: one call at a time uses them).
  const CHUNK = 256;
  const MAX_LANES = 64;
  const scratch = {
    CHUNK,
    MAX_LANES,
    laneOf: new Uint16Array(CHUNK),
    order: new Int32Array(CHUNK),
    countS: new Int32Array(MAX_LANES),
    roomS: new Int32Array(MAX_LANES),
    startS: new Int32Array(MAX_LANES),
    fillS: new Int32Array(MAX_LANES),
  };
  return new Function('mix32', 'tf', 'ti', ...Object.keys(scratch), src)(
    mix32,
    tf,
    ti,
    ...Object.values(scratch),
  ) as RowLoop;
}
