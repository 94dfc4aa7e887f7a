/**
 * tellMany's column image (column-image.ts) must carry exactly the rows the columns hold: every value of
 * every kind, the keys, and the call's row index of its first row; a buffer that is not an image fails
 * with a typed error instead of being read as one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  COLUMN_IMAGE_HEADER_BYTES,
  COLUMN_KINDS,
  ColumnDesc,
  ColumnImageError,
  ColumnImageHeader,
  columnImageFields,
  layoutOf,
  offsetOf,
  packColumnImage,
  readColumnImage,
} from '../src/entries/internal.ts';
import { KIND_FIELDS, MIXED, kindValues } from './kind-fields.ts';

const def = MIXED;
const put = def.methodByName.get('put')!;

describe('tellMany column images (column-image.ts)', () => {
  it('exist for all-scalar requests only', () => {
    expect(columnImageFields(put, 3)?.map((f) => f.name)).toEqual(KIND_FIELDS.fieldNames);
    expect(columnImageFields(def.methodByName.get('nested')!, 3)).toBeNull();
  });

  it('header fields sit where the C struct has them (the device reads these offsets)', () => {
    expect(COLUMN_IMAGE_HEADER_BYTES).toBe(layoutOf(ColumnImageHeader).size);
    expect(COLUMN_IMAGE_HEADER_BYTES % 8).toBe(0);
    expect(layoutOf(ColumnDesc).size).toBe(8);
    const img = packColumnImage(columnImageFields(put, 7)!, {
      grainId: 7,
      method: 2,
      key: [5],
      cols: { a: [1], b: [1], c: [1], d: [1], e: [true], f: [1], g: [1], h: [1], k: [1] },
      from: 0,
      to: 1,
    });
    const dv = new DataView(img.buffer);
    expect(dv.getUint32(offsetOf(ColumnImageHeader, 'grainId'), true)).toBe(7);
    expect(dv.getUint32(offsetOf(ColumnImageHeader, 'method'), true)).toBe(2);
    expect(dv.getUint32(offsetOf(ColumnImageHeader, 'rows'), true)).toBe(1);
    expect(dv.getUint32(offsetOf(ColumnImageHeader, 'bytes'), true)).toBe(img.byteLength);
    expect(dv.getFloat64(dv.getUint32(offsetOf(ColumnImageHeader, 'keysAt'), true), true)).toBe(5);
  });

  it('read back to the rows [from, to) of the columns, every kind, plain arrays and typed arrays alike', () => {
    const row = fc.record({ key: fc.integer({ min: 0, max: 2 ** 40 }), ...kindValues(true) });
    fc.assert(
      fc.property(
        fc.array(row, { minLength: 1, maxLength: 40 }),
        fc.nat(),
        fc.nat(),
        fc.boolean(),
        (rows, a, b, typed) => {
          const from = a % rows.length;
          const to = from + (b % (rows.length - from + 1));
          const fields = columnImageFields(put, 1)!;
          const cols: Record<string, ArrayLike<unknown>> = {};
          for (const f of fields) {
            const values = rows.map((r) => r[f.name as keyof typeof r]);
            cols[f.name] = typed && f.kind === 'f64' ? Float64Array.from(values as number[]) : values;
          }
          const key = typed ? Float64Array.from(rows.map((r) => r.key)) : rows.map((r) => r.key);
          const got = readColumnImage(packColumnImage(fields, { grainId: 1, method: 0, key, cols, from, to }));
          expect(got.rows).toBe(to - from);
          expect(got.firstRow).toBe(from);
          expect([...got.keys]).toEqual(rows.slice(from, to).map((r) => r.key));
          for (const [i, f] of fields.entries()) {
            const want = rows.slice(from, to).map((r) => r[f.name as keyof typeof r]);
            const col = got.columns[i]!;
            expect(col.kind).toBe(f.kind);
            expect(Array.from(col.values)).toEqual(f.kind === 'bool' ? want.map((v) => (v ? 1 : 0)) : want);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('refuse a buffer that is not an image, or whose column points outside it', () => {
    expect(() => readColumnImage(new Uint8Array(64))).toThrow(ColumnImageError);
    const img = packColumnImage(columnImageFields(put, 1)!, {
      grainId: 1,
      method: 0,
      key: [1, 2],
      cols: {
        a: [1, 2],
        b: [1, 2],
        c: [1, 2],
        d: [1, 2],
        e: [true, false],
        f: [1, 2],
        g: [1, 2],
        h: [1, 2],
        k: [1, 2],
      },
      from: 0,
      to: 2,
    });
    new DataView(img.buffer).setUint32(COLUMN_IMAGE_HEADER_BYTES + 4, img.byteLength, true);
    expect(() => readColumnImage(img)).toThrow(expect.objectContaining({ code: 'COLUMN_IMAGE_INVALID' }));
    const bad = img.slice();
    new DataView(bad.buffer).setUint32(COLUMN_IMAGE_HEADER_BYTES, COLUMN_KINDS.length, true);
    expect(() => readColumnImage(bad)).toThrow(ColumnImageError);
  });
});
