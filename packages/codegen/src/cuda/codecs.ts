import { isNumericScalar, type Schema, type StructSchema } from '@ringgrain/core/backend';
import { cMember, type CTypes } from './ctypes.ts';

/**
 * Per-schema msgpack codecs in C. Decoders accept every encoding the host decoder accepts (any int
 * width, float32/64, ints for floats, bin or array for numeric arrays, keys in any order, exact field
 * count, no duplicates, no trailing bytes); encoders write exactly what the host encoder writes.
 */
export class Codecs {
  private readonly decoders = new Map<StructSchema, string>();
  private readonly encoders = new Map<StructSchema, string>();
  readonly defs: string[] = [];

  constructor(private readonly types: CTypes) {}

  /** Name of `bool rg_dec_<T>(rg_rd*, T*)` for a struct schema, emitting it once. */
  decoder(s: StructSchema): string {
    const hit = this.decoders.get(s);
    if (hit) return hit;
    const type = this.types.nameOf(s);
    if (!type) throw new Error('codecs: struct type must be named before its decoder');
    const name = `rg_dec_${type.replace(/^rg_/, '')}`;
    this.decoders.set(s, name);
    const n = s.fieldNames.length;
    const match = s.fieldNames
      .map((f, i) => `    ${i ? 'else ' : ''}if (rg_keyeq(r, ka, kl, "${f}", ${f.length})) f = ${i};`)
      .join('\n');
    const cases = s.fieldNames
      .map(
        (f, i) =>
          `      case ${i}:\n${indent(this.decodeInto(s.fields[f] as Schema, `o->${cMember(f)}`, 1), 8)}\n` +
          `        break;`,
      )
      .join('\n');
    const body =
      n === 0
        ? `  unsigned int n;\n  return rg_rd_maphdr(r, &n) && n == 0;`
        : `  unsigned int n;\n  if (!rg_rd_maphdr(r, &n) || n != ${n}) return false;\n  bool seen[${n}];\n` +
          `  for (unsigned int i = 0; i < ${n}; i++) seen[i] = false;\n` +
          `  for (unsigned int i = 0; i < n; i++) {\n    unsigned int ka, kl;\n` +
          `    if (!rg_rd_key(r, &ka, &kl)) return false;\n    int f = -1;\n${match}\n` +
          `    if (f < 0 || seen[f]) return false;\n    seen[f] = true;\n    switch (f) {\n${cases}\n    }\n  }\n` +
          `  return true;`;
    this.defs.push(`RG_HD static bool ${name}(rg_rd* r, ${type}* o) {\n${body}\n}`);
    return name;
  }

  /** Name of `bool rg_enc_<T>(const T*, rg_wr*)`, emitting it once. */
  encoder(s: StructSchema): string {
    const hit = this.encoders.get(s);
    if (hit) return hit;
    const type = this.types.nameOf(s);
    if (!type) throw new Error('codecs: struct type must be named before its encoder');
    const name = `rg_enc_${type.replace(/^rg_/, '')}`;
    this.encoders.set(s, name);
    const lines = [`  if (!rg_wr_maphdr(w, ${s.fieldNames.length})) return false;`];
    for (const f of s.fieldNames) {
      lines.push(`  if (!rg_wr_str(w, "${f}", ${f.length})) return false;`);
      lines.push(indent(this.encodeFrom(s.fields[f] as Schema, `v->${cMember(f)}`, 1), 2));
    }
    lines.push('  return true;');
    this.defs.push(`RG_HD static bool ${name}(const ${type}* v, rg_wr* w) {\n${lines.join('\n')}\n}`);
    return name;
  }

  private decodeInto(s: Schema, lv: string, depth: number): string {
    switch (s.kind) {
      case 'scalar':
        return `if (!rg_rd_${s.scalar}(r, &${lv})) return false;`;
      case 'struct':
        return `if (!${this.decoder(s)}(r, &${lv})) return false;`;
      case 'array':
      case 'vec': {
        const vec = s.kind === 'vec';
        const min = vec ? 0 : s.length;
        const max = vec ? s.maxLength : s.length;
        const items = vec ? `${lv}.items` : lv;
        if (isNumericScalar(s.element)) {
          const cnt = vec ? `&${lv}.length` : '&c';
          return vec
            ? `if (!rg_rd_a${s.element.scalar}(r, ${items}, ${min}, ${max}, ${cnt})) return false;`
            : `{ unsigned int c; if (!rg_rd_a${s.element.scalar}(r, ${items}, ${min}, ${max}, ${cnt})) return false; }`;
        }
        const i = `i${depth}`;
        // No `c < 0` for a vec: an unsigned comparison with zero is a warning (nvcc #186-D).
        const range = min > 0 ? `c${depth} < ${min} || c${depth} > ${max}` : `c${depth} > ${max}`;
        return (
          `{\n  unsigned int c${depth};\n  if (!rg_rd_arrhdr(r, &c${depth}) || ${range}) return false;\n` +
          (vec ? `  ${lv}.length = c${depth};\n` : '') +
          `  for (unsigned int ${i} = 0; ${i} < c${depth}; ${i}++) {\n` +
          `${indent(this.decodeInto(s.element, `${items}[${i}]`, depth + 1), 4)}\n  }\n}`
        );
      }
    }
  }

  private encodeFrom(s: Schema, v: string, depth: number): string {
    switch (s.kind) {
      case 'scalar':
        return `if (!rg_wr_${s.scalar}(w, ${v})) return false;`;
      case 'struct':
        return `if (!${this.encoder(s)}(&${v}, w)) return false;`;
      case 'array':
      case 'vec': {
        const vec = s.kind === 'vec';
        const n = vec ? `${v}.length` : String(s.length);
        const items = vec ? `${v}.items` : v;
        const guard = vec ? `if (${v}.length > ${s.maxLength}) return false;\n` : '';
        if (isNumericScalar(s.element))
          return `${guard}if (!rg_wr_a${s.element.scalar}(w, ${items}, ${n})) return false;`;
        const i = `i${depth}`;
        return (
          `${guard}if (!rg_wr_arrhdr(w, ${n})) return false;\n` +
          `for (unsigned int ${i} = 0; ${i} < ${n}; ${i}++) {\n` +
          `${indent(this.encodeFrom(s.element, `${items}[${i}]`, depth + 1), 2)}\n}`
        );
      }
    }
  }
}

export function indent(text: string, n: number): string {
  const pad = ' '.repeat(n);
  return text
    .split('\n')
    .map((l) => (l ? pad + l : l))
    .join('\n');
}
