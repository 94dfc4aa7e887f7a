/**
 * The fixed-image fast path of a single tell or ask (`ref.tell.m({...})`, `ref.m({...})`) whose request
 * is all scalars and whose key is an integer: a writer generated per (method, grain id) checks each field
 * exactly as the general encoder does (a number; an integer in the kind's range; a boolean; no other
 * key with a value) and writes the method's fixed slot image (row-writer.ts's template, the bytes
 * tellMany rows have) with key, time, corr and the values patched in. No header object, no per-field
 * encoder call, no int-width branches. A value the check refuses returns false and the general encoder
 * then runs, so a bad payload still fails with its typed error and path.
 */
import type { MethodDef } from './grain.ts';
import { SLOT, SLOT_HEADER_SIZE, SlotFlag } from './protocol.ts';
import { rowTemplate } from './row-writer.ts';
import { kindSpec, type ScalarKind } from './schema/kinds.ts';

/**
 * Writes the message into the slot at `slot` (all but seq) and returns true, or false (nothing certain written) where
 * the payload is not plain valid scalars.
 */
export type FixedWrite = (
  i32: Int32Array,
  dv: DataView,
  u8: Uint8Array,
  slot: number,
  payload: unknown,
  key: number,
  corr: number,
  time: number,
) => boolean;

const writers = new WeakMap<MethodDef, Map<number, FixedWrite>>();

/**
 * The method's fixed writer, or null where the fast path does not apply (a non-scalar field, an image larger than a
 * slot's payload).
 */
export function fixedWriter(method: MethodDef, grainId: number, payloadCapacity: number): FixedWrite | null {
  let byGrain = writers.get(method);
  if (!byGrain) writers.set(method, (byGrain = new Map()));
  const t = rowTemplate(method, grainId);
  // The slot size is the kernel's (systems may register one class with different ones): checked per call.
  if (!t || t.image.length + 4 - SLOT_HEADER_SIZE > payloadCapacity) return null;
  let w = byGrain.get(grainId);
  if (w === undefined) byGrain.set(grainId, (w = generate(t)));
  return w;
}

/** The general encoder's acceptance test of a value of `kind`, as an expression over `x`. */
function check(kind: ScalarKind, x: string): string {
  switch (kind) {
    case 'f32':
    case 'f64':
      return `typeof ${x} === 'number'`;
    case 'bool':
      return `(${x} === true || ${x} === false)`;
    // An integer in range, and a number: each holds only for such x (NaN, ±Infinity, fractions, non-numbers fail).
    case 'i32':
      return `(${x} | 0) === ${x}`;
    case 'u32':
      return `(${x} >>> 0) === ${x}`;
    case 'i16':
      return `((${x} << 16) >> 16) === ${x}`;
    case 'u16':
      return `(${x} & 0xffff) === ${x}`;
    case 'i8':
      return `((${x} << 24) >> 24) === ${x}`;
    case 'u8':
      return `(${x} & 0xff) === ${x}`;
  }
}

function generate(t: NonNullable<ReturnType<typeof rowTemplate>>): FixedWrite {
  const { image, fields } = t;
  const words = new Int32Array(Math.ceil(image.length / 4));
  new Uint8Array(words.buffer).set(image);
  const W = (byte: number) => byte >> 2;
  const lines: string[] = ['if (v === null || typeof v !== "object") return false;'];
  for (const [f, { name, kind }] of fields.entries()) {
    lines.push(`const v${f} = v[${JSON.stringify(name)}];`, `if (!(${check(kind, `v${f}`)})) return false;`);
  }
  // The general encoder counts the keys that have a value: any other one is a mismatch.
  lines.push(
    'let present = 0;',
    'for (const name in v) if (v[name] !== undefined) present++;',
    `if (present !== ${fields.length}) return false;`,
  );
  lines.push('const w = s >> 2;', 'tf[0] = time;');
  for (let w = 0; w < words.length; w++) {
    const at = w + 1;
    if (at === W(SLOT.keyLo) || at === W(SLOT.keyHi) || at === W(SLOT.corr) || at === W(SLOT.flags)) continue;
    if (at === W(SLOT.time)) lines.push(`i32[w + ${at}] = ti[0];`);
    else if (at === W(SLOT.time) + 1) lines.push(`i32[w + ${at}] = ti[1];`);
    else lines.push(`i32[w + ${at}] = ${words[w]! | 0};`);
  }
  lines.push(
    `i32[w + ${W(SLOT.flags)}] = corr === 0 ? ${words[W(SLOT.flags) - 1]! | 0} ` +
      `: ${words[W(SLOT.flags) - 1]! | SlotFlag.ASK | 0};`,
    `i32[w + ${W(SLOT.corr)}] = corr;`,
    `i32[w + ${W(SLOT.keyLo)}] = k;`,
    `i32[w + ${W(SLOT.keyHi)}] = Math.floor(k / 4294967296);`,
  );
  for (const [f, { kind, at }] of fields.entries()) {
    const op = kindSpec(kind).msgpack.fixed.op;
    lines.push(op === 'tag' ? `u8[s + ${at}] = v${f} ? 0xc3 : 0xc2;` : `dv.${op}(s + ${at + 1}, v${f});`);
  }
  lines.push('return true;');
  const src =
    `"use strict";\nreturn function fixedWrite(i32, dv, u8, s, v, k, corr, time) ` + `{\n  ${lines.join('\n  ')}\n};`;
  const tf = new Float64Array(1);
  const ti = new Int32Array(tf.buffer);
  return new Function('tf', 'ti', src)(tf, ti) as FixedWrite;
}
