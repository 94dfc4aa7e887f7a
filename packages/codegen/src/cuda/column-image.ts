import { COLUMN_IMAGE_MAGIC, COLUMN_IMAGE_VERSION, COLUMN_KINDS, columnImageFields, type GrainDef } from '@ringgrain/core';
import { C_SCALAR } from './ctypes.ts';

/**
 * Device readers of tellMany column images (core column-image.ts; rg_ColumnImageHeader and rg_ColumnDesc
 * are emitted with the protocol structs and their static_asserts). Row i of an image is read straight
 * from its columns into the method's request struct: no msgpack, so a bulk job that expands an image
 * does per row only the loads of its fields. `rg_<G>_image_row` returns false for a method without an
 * image, or an image whose header or column kinds do not match the method (the host never builds one;
 * a mismatch is reported, never read as another layout).
 */
export function columnImageSection(def: GrainDef, selfId: number): string {
  const G = def.name;
  const cases: string[] = [];
  const fns: string[] = [];
  for (const [i, m] of def.methods.entries()) {
    const fields = columnImageFields(m, selfId);
    if (!fields) continue;
    const lines = fields.map((f, c) => {
      const col = `(img + d[${c}].at)`;
      return f.kind === 'bool' ? `  u->${f.name} = ${col}[row] != 0;` : `  u->${f.name} = ((const ${C_SCALAR[f.kind]}*)${col})[row];`;
    });
    const kinds = fields.map((f, c) => `d[${c}].kind == ${COLUMN_KINDS.indexOf(f.kind)}u`);
    fns.push(
      `RG_HD static inline bool rg_${G}_image_row_${i}(const unsigned char* img, unsigned int row, rg_${G}_${m.name}_req* u) {\n` +
        `  const rg_ColumnDesc* d = (const rg_ColumnDesc*)(img + sizeof(rg_ColumnImageHeader));\n` +
        `  if (((const rg_ColumnImageHeader*)img)->columns != ${fields.length}u${kinds.length ? ` || !(${kinds.join(' && ')})` : ''}) return false;\n` +
        `${lines.join('\n')}\n  return true;\n}`,
    );
    cases.push(`    case ${i}u: return rg_${G}_image_row_${i}(img, row, &u->m${i});`);
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
    `  return h->magic == RG_COLUMN_IMAGE_MAGIC && h->version == RG_COLUMN_IMAGE_VERSION && h->grainId == ${selfId}u && h->method < ${def.methods.length}u;`,
    '}',
    ...fns,
    `/* Row \`row\` of an image of method \`method\` into the request union (the worker warp zeroed it, as for decode). */`,
    `RG_HD static bool rg_${G}_image_row(unsigned int method, const unsigned char* img, unsigned int row, rg_${G}_req* u) {`,
    '  switch (method) {',
    ...cases,
    '    default: return false;',
    '  }',
    '}',
  ].join('\n');
}
