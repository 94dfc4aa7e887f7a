import { KINDS } from './kinds.ts';
import type { Schema } from './types.ts';

/**
 * The one function that sizes and aligns every schema. C struct rules (natural alignment, fields in
 * declaration order, size padded to alignment) so the generated CUDA structs match byte for byte.
 */
export interface FieldLayout {
  readonly name: string;
  readonly offset: number;
  readonly layout: Layout;
}

export interface Layout {
  readonly size: number;
  readonly align: number;
  /** Struct fields; for a vec, `length` then `items`. */
  readonly fields?: readonly FieldLayout[];
  /** Array/vec element layout and count (max count for vecs). */
  readonly element?: Layout;
  readonly count?: number;
}

export function alignUp(n: number, a: number): number {
  return Math.ceil(n / a) * a;
}

const cache = new WeakMap<object, Layout>();

export function layoutOf(schema: Schema): Layout {
  const hit = cache.get(schema);
  if (hit) return hit;
  const computed = compute(schema);
  cache.set(schema, computed);
  return computed;
}

const U32_LAYOUT: Layout = { size: 4, align: 4 };

function compute(schema: Schema): Layout {
  switch (schema.kind) {
    case 'scalar': {
      const k = KINDS[schema.scalar];
      return { size: k.size, align: k.align };
    }
    case 'array': {
      const el = layoutOf(schema.element);
      return { size: el.size * schema.length, align: el.align, element: el, count: schema.length };
    }
    case 'vec': {
      const el = layoutOf(schema.element);
      const align = Math.max(4, el.align);
      const itemsOffset = alignUp(4, el.align);
      const items: Layout = { size: el.size * schema.maxLength, align: el.align, element: el, count: schema.maxLength };
      return {
        size: alignUp(itemsOffset + items.size, align),
        align,
        element: el,
        count: schema.maxLength,
        fields: [
          { name: 'length', offset: 0, layout: U32_LAYOUT },
          { name: 'items', offset: itemsOffset, layout: items },
        ],
      };
    }
    case 'struct': {
      let offset = 0;
      let align = 1;
      const fields: FieldLayout[] = [];
      for (const name of schema.fieldNames) {
        const l = layoutOf(schema.fields[name] as Schema);
        offset = alignUp(offset, l.align);
        fields.push({ name, offset, layout: l });
        offset += l.size;
        align = Math.max(align, l.align);
      }
      // An empty struct is one byte in C++ (CUDA), so it is here too.
      const size = fields.length === 0 ? 1 : alignUp(offset, align);
      return { size, align, fields };
    }
  }
}
