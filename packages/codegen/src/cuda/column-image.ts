import {
  COLUMN_IMAGE_MAGIC,
  COLUMN_IMAGE_VERSION,
  COLUMN_KINDS,
  SLOT,
  columnImageFields,
  kindSpec,
  rowTemplate,
  type GrainDef,
  type MethodDef,
} from '@ringgrain/core/backend';
import { C_SCALAR, cMember } from './ctypes.ts';

/**
 * Device readers of tellMany column images (core column-image.ts; rg_ColumnImageHeader and rg_ColumnDesc
 * are emitted with the protocol structs and their static_asserts). Row i of an image is read straight
 * from its columns into the method's request struct: no msgpack, so a bulk job that expands an image
 * does per row only the loads of its fields. `rg_<G>_image_row` returns false for a method without an
 * image, or an image whose header or column kinds do not match the method (the host never builds one;
 * a mismatch is reported, never read as another layout).
 */
export function columnImageSection(def: GrainDef, selfId: number, reqTypes: readonly string[]): string {
  const G = def.name;
  const cases: string[] = [];
  const fns: string[] = [];
  const slotCases: string[] = [];
  for (const [i, m] of def.methods.entries()) {
    const fields = columnImageFields(m, selfId);
    if (!fields) continue;
    const lines = fields.map((f, c) => {
      const col = `(img + d[${c}].at)`;
      return f.kind === 'bool'
        ? `  u->${cMember(f.name)} = ${col}[row] != 0;`
        : `  u->${cMember(f.name)} = ((const ${C_SCALAR[f.kind]}*)${col})[row];`;
    });
    const kinds = fields.map((f, c) => `d[${c}].kind == ${COLUMN_KINDS.indexOf(f.kind)}u`);
    fns.push(
      `RG_HD static inline bool rg_${G}_image_row_${i}(const unsigned char* img, unsigned int row, ` +
        `${reqTypes[i]!}* u) {\n` +
        (fields.length
          ? `  const rg_ColumnDesc* d = (const rg_ColumnDesc*)(img + sizeof(rg_ColumnImageHeader));\n`
          : `  (void)row; (void)u;\n`) +
        `  if (((const rg_ColumnImageHeader*)img)->columns != ` +
        `${fields.length}u${kinds.length ? ` || !(${kinds.join(' && ')})` : ''}) return false;\n` +
        `${lines.join('\n')}\n  return true;\n}`,
    );
    cases.push(`    case ${i}u: return rg_${G}_image_row_${i}(img, row, &u->m${i});`);
    const slotFn = slotWriter(G, i, m, selfId);
    if (slotFn) {
      fns.push(slotFn);
      slotCases.push(`    case ${i}u: return rg_${G}_image_slot_${i}(img, row, time, d);`);
    }
  }
  return [
    '/* ---- tellMany column images (core column-image.ts) ---------------------------------------------- */',
    `#define RG_COLUMN_IMAGE_MAGIC ${COLUMN_IMAGE_MAGIC}u`,
    `#define RG_COLUMN_IMAGE_VERSION ${COLUMN_IMAGE_VERSION}u`,
    'static_assert(sizeof(rg_ColumnImageHeader) % 8u == 0u, "columns follow the header 8-aligned");',
    '/* The key of row `row` (keys travel as doubles: integers up to 2^53, one native conversion on the host). */',
    'RG_HD static inline long long rg_image_key(const unsigned char* img, unsigned int row) {',
    '  return (long long)((const double*)(img + ((const rg_ColumnImageHeader*)img)->keysAt))[row];',
    '}',
    '/* Whether `img` is an image of this unit\'s grain, of a version this unit reads. */',
    `RG_HD static inline bool rg_${G}_image_ok(const unsigned char* img) {`,
    '  const rg_ColumnImageHeader* h = (const rg_ColumnImageHeader*)img;',
    `  return h->magic == RG_COLUMN_IMAGE_MAGIC && h->version == RG_COLUMN_IMAGE_VERSION && ` +
      `h->grainId == ${selfId}u && h->method < ${def.methods.length}u;`,
    '}',
    ...fns,
    `/* Row \`row\` of an image of method \`method\` into the request union (the worker warp zeroed it, ` +
      `as for decode). */`,
    `RG_HD static bool rg_${G}_image_row(unsigned int method, const unsigned char* img, unsigned int row, ` +
      `rg_${G}_req* u) {`,
    '  switch (method) {',
    ...cases,
    '    default: return false;',
    '  }',
    '}',
    '/* Row `row` as the host would have written its slot (core row-writer.ts template: header after seq, ' +
      'fixed-width msgpack), into',
    ' * a 16-aligned queue slot `d` (all but seq): the ingress expansion of an image into partition queues. ' +
      'Returns the bytes it covers (header and payload), 0 for a method without an image. */',
    `RG_HD static unsigned int rg_${G}_image_slot(unsigned int method, const unsigned char* img, ` +
      `unsigned int row, double time, unsigned char* d) {`,
    '  switch (method) {',
    ...slotCases,
    '    default: return 0u;',
    '  }',
    '}',
  ].join('\n');
}

/** Big-endian stores of a value's `bytes` bytes from the 64-bit pattern `x` at d[at..]. */
function beStores(x: string, at: number, bytes: number): string[] {
  return Array.from({ length: bytes }, (_, j) => `  d[${at + j}] = (unsigned char)(${x} >> ${8 * (bytes - 1 - j)});`);
}

function slotWriter(G: string, i: number, m: MethodDef, selfId: number): string | null {
  const tpl = rowTemplate(m, selfId);
  if (!tpl || SLOT.seq !== 0) return null;
  const img = tpl.image; // bytes [4, 4 + img.length) of the slot
  const lines: string[] = [];
  // Word stores of the template (the slot is 16-aligned and the image starts at its second word), bytes for the tail.
  const words = Math.floor(img.length / 4);
  const dv = new DataView(img.buffer, img.byteOffset, img.byteLength);
  for (let w = 0; w < words; w++) lines.push(`  ((unsigned int*)d)[${w + 1}] = ${dv.getUint32(w * 4, true)}u;`);
  for (let b = words * 4; b < img.length; b++) lines.push(`  d[${b + 4}] = ${img[b]}u;`);
  lines.push(
    '  const long long key = rg_image_key(img, row);',
    `  ((unsigned int*)d)[${SLOT.keyLo / 4}] = (unsigned int)key;`,
    `  ((unsigned int*)d)[${SLOT.keyHi / 4}] = (unsigned int)((unsigned long long)key >> 32);`,
    `  *(double*)(d + ${SLOT.time}) = time;`,
  );
  if (tpl.fields.length)
    lines.push('  const rg_ColumnDesc* c = (const rg_ColumnDesc*)(img + sizeof(rg_ColumnImageHeader));');
  for (const [f, { kind, at }] of tpl.fields.entries()) {
    const col = `(img + c[${f}].at)`;
    if (kind === 'bool') {
      lines.push(`  d[${at}] = ${col}[row] != 0 ? 0xc3u : 0xc2u;`);
      continue;
    }
    const width = kindSpec(kind).msgpack.fixed.width - 1;
    if (kind === 'f64')
      lines.push(
        `  { union { double f; unsigned long long u; } x; x.f = ((const double*)${col})[row];`,
        ...beStores('x.u', at + 1, width),
        '  }',
      );
    else if (kind === 'f32')
      lines.push(
        `  { union { float f; unsigned int u; } x; x.f = ((const float*)${col})[row];`,
        ...beStores('x.u', at + 1, width),
        '  }',
      );
    else
      lines.push(
        `  { const unsigned long long x = (unsigned long long)(long long)((const ` +
          `${
            kind.startsWith('u')
              ? `unsigned ${kind === 'u8' ? 'char' : kind === 'u16' ? 'short' : 'int'}`
              : kind === 'i8'
                ? 'signed char'
                : kind === 'i16'
                  ? 'short'
                  : 'int'
          }*)${col})[row];`,
        ...beStores('x', at + 1, width),
        '  }',
      );
  }
  lines.push(`  return ${img.length + 4}u;`);
  return (
    `RG_HD static inline unsigned int rg_${G}_image_slot_${i}(const unsigned char* img, unsigned int row, ` +
    `double time, unsigned char* d) {\n` +
    `${lines.join('\n')}\n}`
  );
}
