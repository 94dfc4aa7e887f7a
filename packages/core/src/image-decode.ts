/**
 * The consumer's side of the fixed image (row-writer.ts): a reader generated per method whose request
 * is all scalars. A payload of exactly the image's length whose constant bytes (map header, field names,
 * type tags) are the image's is read at fixed offsets, into the object the general decoder would build
 * (same fields, same order, same values: a fixed tag's value is always in its kind's range). Any other
 * payload (another encoder's shortest ints, fields in another order, a malformed one) returns undefined
 * and goes through the general decoder, with its checks and errors. tellMany rows and single sends from
 * the host are all fixed images, so a CPU lane reads them with a few compares and typed loads.
 */
import type { MethodDef } from './grain.ts';
import { SLOT_HEADER_SIZE } from './protocol.ts';
import { rowTemplate } from './row-writer.ts';
import { kindSpec } from './schema/kinds.ts';

/** The message in [start, start + length) of `u8`/`dv`, or undefined where the payload is not the fixed image. */
export type FixedRead = (u8: Uint8Array, dv: DataView, start: number, length: number) => unknown;

const readers = new WeakMap<MethodDef, FixedRead | null>();

/** The method's fixed-image reader, or null where its request is not all scalars. */
export function fixedReader(method: MethodDef): FixedRead | null {
  let r = readers.get(method);
  if (r === undefined) {
    const t = rowTemplate(method, 0);
    r = t ? generate(t) : null;
    readers.set(method, r);
  }
  return r;
}

function generate(t: NonNullable<ReturnType<typeof rowTemplate>>): FixedRead {
  // The payload part of the image (it starts after the header; the image after the seq word).
  const payload = t.image.subarray(SLOT_HEADER_SIZE - 4);
  const variable = new Uint8Array(payload.length); // 1: a value byte (or bool's tag), not compared
  const values: string[] = [];
  for (const { name, kind, at } of t.fields) {
    const p = at - SLOT_HEADER_SIZE; // the tag's offset in the payload
    if (kind === 'bool') {
      variable[p] = 1;
      values.push(`${JSON.stringify(name)}: u8[s + ${p}] === 0xc3`);
      continue;
    }
    // The kinds table's fixed form: its width (tag included) and its big-endian setter, read back by the getter.
    const { width, op } = kindSpec(kind).msgpack.fixed;
    variable.fill(1, p + 1, p + width);
    values.push(`${JSON.stringify(name)}: dv.${op.replace('set', 'get')}(s + ${p + 1})`);
  }
  const checks: string[] = [`length === ${payload.length}`];
  for (let i = 0; i < payload.length; ) {
    if (variable[i]) {
      i++;
      continue;
    }
    if (i + 4 <= payload.length && !variable[i + 1] && !variable[i + 2] && !variable[i + 3]) {
      checks.push(`dv.getInt32(s + ${i}) === ${new DataView(payload.buffer, payload.byteOffset).getInt32(i)}`);
      i += 4;
    } else {
      checks.push(`u8[s + ${i}] === ${payload[i]}`);
      i++;
    }
  }
  for (const { kind, at } of t.fields) {
    if (kind === 'bool') checks.push(`(u8[s + ${at - SLOT_HEADER_SIZE}] | 1) === 0xc3`); // 0xc2 or 0xc3
  }
  const src =
    `"use strict";\nreturn function fixedRead(u8, dv, s, length) {\n  if (!(${checks.join(' &&\n      ')})) ` +
    `return undefined;\n  return { ${values.join(', ')} };\n};`;
  return new Function(src)() as FixedRead;
}
