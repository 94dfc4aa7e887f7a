import { KINDS, type NumericKind, type ScalarKind } from '@ringgrain/core/backend';
import { C_SCALAR } from './ctypes.ts';

/**
 * The device msgpack codec of each scalar kind, emitted into the prelude as rg_rd_<k>/rg_wr_<k>
 * (scalars) and rg_rd_a<k>/rg_wr_a<k> (arrays). A scalar goes on the wire in the format core's kinds
 * table chooses (msgpack.scalar); arrays of numeric kinds are `bin` of little-endian elements, whose
 * byte order this table spells per kind. Decoders accept exactly what the host decoder accepts (any
 * number format holding a value of the kind; bin or array); encoders write what the host encoder writes.
 */
export interface ElementCodec {
  /** C expression: the element at byte pointer `p` (little-endian; `p` may be an expression). */
  readonly fromLE: (p: string) => string;
  /** C statement (with its `;`): the element `x` at byte offset `at` of writer `w` (little-endian). */
  readonly putLE: (w: string, at: string, x: string) => string;
}

export const ELEMENT_CODEC: { readonly [K in NumericKind]: ElementCodec } = {
  f32: { fromLE: (p) => `rg_u2f(rg_le32(${p}))`, putLE: (w, at, x) => `rg_put_le32(${w}, ${at}, rg_f2u(${x}));` },
  f64: {
    fromLE: (p) => `rg_u2d(rg_le64(${p}))`,
    putLE: (w, at, x) =>
      `{ unsigned long long u = rg_d2u(${x}); rg_put_le32(${w}, ${at}, (unsigned int)u); rg_put_le32(${w}, ` +
      `${at} + 4, (unsigned int)(u >> 32)); }`,
  },
  i8: { fromLE: (p) => `rg_wrap_i8((${p})[0])`, putLE: (w, at, x) => `rg_put(${w}, ${at}, (unsigned int)${x});` },
  u8: { fromLE: (p) => `(${p})[0]`, putLE: (w, at, x) => `rg_put(${w}, ${at}, ${x});` },
  i16: {
    fromLE: (p) => `rg_wrap_i16((int)rg_le16(${p}))`,
    putLE: (w, at, x) => `rg_put_le16(${w}, ${at}, (unsigned int)${x});`,
  },
  u16: { fromLE: (p) => `(unsigned short)rg_le16(${p})`, putLE: (w, at, x) => `rg_put_le16(${w}, ${at}, ${x});` },
  i32: { fromLE: (p) => `(int)rg_le32(${p})`, putLE: (w, at, x) => `rg_put_le32(${w}, ${at}, (unsigned int)${x});` },
  u32: { fromLE: (p) => `rg_le32(${p})`, putLE: (w, at, x) => `rg_put_le32(${w}, ${at}, ${x});` },
};

const scalarKinds = (): ScalarKind[] => Object.keys(C_SCALAR) as ScalarKind[];
const numericKinds = (): NumericKind[] => Object.keys(ELEMENT_CODEC) as NumericKind[];

/** rg_rd_<k>: one scalar, in the format of its kind; false for anything the host decoder refuses. */
function scalarReader(k: ScalarKind): string {
  const t = C_SCALAR[k];
  const head = `RG_HD static inline bool rg_rd_${k}(rg_rd* r, ${t}* o)`;
  const wire = KINDS[k].msgpack.scalar;
  switch (wire) {
    case 'float64':
      return `${head} { return rg_rd_num(r, o); }`;
    case 'float32':
      return `${head} { double v; if (!rg_rd_num(r, &v)) return false; *o = (${t})v; return true; }`;
    case 'int':
      return `${head} { double v; if (!rg_rd_num(r, &v) || !rg_is_${k}(v)) return false; *o = (${t})v; return true; }`;
    case 'bool':
      return (
        `${head} {\n  unsigned int at;\n  if (!rg_take(r, 1, &at)) return false;\n` +
        `  if (r->p[at] == 0xc2) { *o = false; return true; }\n` +
        `  if (r->p[at] == 0xc3) { *o = true; return true; }\n  return false;\n}`
      );
    default: {
      const never: never = wire;
      return never;
    }
  }
}

/** rg_wr_<k>: one scalar, in the format of its kind. */
function scalarWriter(k: ScalarKind): string {
  const t = C_SCALAR[k];
  const head = `RG_HD static inline bool rg_wr_${k}(rg_wr* w, ${t} v)`;
  const wire = KINDS[k].msgpack.scalar;
  switch (wire) {
    case 'float64':
      return `${head} { return rg_wr_float64(w, v); }`;
    case 'float32':
      return `${head} { return rg_wr_float32(w, v); }`;
    case 'int':
      return `${head} { return rg_wr_int(w, v); }`;
    case 'bool':
      return `${head} { return rg_wr_byte(w, v ? 0xc3 : 0xc2); }`;
    default: {
      const never: never = wire;
      return never;
    }
  }
}

/** Prelude: the scalar readers and the array readers (RG_RD_NUMARR over the element codec). */
export function kindReadersC(): string {
  const scalars = scalarKinds().map(scalarReader);
  const le = numericKinds().map((k) => `#define RG_LE_${k.toUpperCase()}(p) (${ELEMENT_CODEC[k].fromLE('p')})`);
  const arrays = numericKinds().map(
    (k) => `RG_RD_NUMARR(rg_rd_a${k}, ${C_SCALAR[k]}, ${KINDS[k].size}, rg_rd_${k}, RG_LE_${k.toUpperCase()})`,
  );
  return [...scalars, ...le, ...arrays].join('\n');
}

/** Prelude: the scalar writers and the array writers (bin of little-endian elements). */
export function kindWritersC(): string {
  const scalars = scalarKinds().map(scalarWriter);
  const arrays = numericKinds().map((k) => {
    const b = KINDS[k].size;
    const times = (x: string): string => (b === 1 ? x : `${x} * ${b}`);
    return (
      `RG_HD static bool rg_wr_a${k}(rg_wr* w, const ${C_SCALAR[k]}* a, unsigned int n) {\n  unsigned int at;\n` +
      `  if (!rg_wr_binhdr(w, ${times('n')}) || !rg_need(w, ${times('n')}, &at)) return false;\n` +
      // Measuring needs no bytes; a large array is copied by the warp when one helps (the device is little-endian).
      `  if (!w->p || rg_bulk(w->co, w->p + at, (const unsigned char*)a, ${times('n')})) return true;\n` +
      `  for (unsigned int i = 0; i < n; i++) ${ELEMENT_CODEC[k].putLE('w', `at + ${times('i')}`, 'a[i]')}\n` +
      `  return true;\n}`
    );
  });
  return [...scalars, ...arrays].join('\n');
}
