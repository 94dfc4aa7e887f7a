import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CONTROL_BLOCK_SIZE,
  ControlBlock,
  RING_HEADER_SIZE,
  RingHeader,
  SLOT_HEADER_SIZE,
  SchemaDefinitionError,
  SlotHeader,
  layoutOf,
  offsetOf,
  t,
  type Layout,
  type Schema,
} from '../src/entries/internal.ts';
import { schemaArb } from './arbitraries.ts';

function offsets(l: Layout): Record<string, number> {
  return Object.fromEntries((l.fields ?? []).map((f) => [f.name, f.offset]));
}

describe('layoutOf: C struct rules', () => {
  it('sizes and aligns every scalar kind naturally', () => {
    expect(layoutOf(t.f32)).toMatchObject({ size: 4, align: 4 });
    expect(layoutOf(t.f64)).toMatchObject({ size: 8, align: 8 });
    expect(layoutOf(t.i32)).toMatchObject({ size: 4, align: 4 });
    expect(layoutOf(t.u32)).toMatchObject({ size: 4, align: 4 });
    expect(layoutOf(t.bool)).toMatchObject({ size: 1, align: 1 });
    expect(layoutOf(t.i8)).toMatchObject({ size: 1, align: 1 });
    expect(layoutOf(t.u8)).toMatchObject({ size: 1, align: 1 });
    expect(layoutOf(t.i16)).toMatchObject({ size: 2, align: 2 });
    expect(layoutOf(t.u16)).toMatchObject({ size: 2, align: 2 });
  });

  it('small integers pack by their own alignment; a vec of bytes keeps its u32 length first', () => {
    const s = layoutOf(t.struct({ a: t.u8, b: t.i16, c: t.i8, d: t.u16, e: t.u8, f: t.u32 }));
    expect(offsets(s)).toEqual({ a: 0, b: 2, c: 4, d: 6, e: 8, f: 12 });
    expect(s.size).toBe(16);
    expect(s.align).toBe(4);
    const bytes = layoutOf(t.vec(t.u8, 5));
    expect(offsets(bytes)).toEqual({ length: 0, items: 4 });
    expect(bytes.size).toBe(12); // 4 + 5, padded to 4
    expect(layoutOf(t.array(t.i16, 3))).toMatchObject({ size: 6, align: 2, count: 3 });
  });

  it('fixed arrays: element size × count, element alignment', () => {
    expect(layoutOf(t.array(t.f64, 3))).toMatchObject({ size: 24, align: 8, count: 3 });
    expect(layoutOf(t.array(t.bool, 5))).toMatchObject({ size: 5, align: 1, count: 5 });
    const inner = t.struct({ a: t.f64, b: t.bool }); // 16, align 8
    expect(layoutOf(t.array(inner, 2))).toMatchObject({ size: 32, align: 8 });
    expect(layoutOf(t.array(t.array(t.u32, 3), 2))).toMatchObject({ size: 24, align: 4 });
  });

  it('bounded arrays (vec): u32 length, then items aligned to the element, size padded', () => {
    const v = layoutOf(t.vec(t.f64, 3));
    expect(v.size).toBe(32); // 4 length + 4 pad + 24
    expect(v.align).toBe(8);
    expect(offsets(v)).toEqual({ length: 0, items: 8 });
    const b = layoutOf(t.vec(t.bool, 3));
    expect(b.size).toBe(8); // 4 + 3, padded to 4
    expect(b.align).toBe(4);
    expect(offsets(b)).toEqual({ length: 0, items: 4 });
    expect(layoutOf(t.vec(t.u32, 64)).size).toBe(4 + 256);
  });

  it('structs: declaration order, padding before a field to its alignment, size padded to the struct alignment', () => {
    const s = layoutOf(t.struct({ a: t.bool, b: t.f64, c: t.u32, d: t.bool }));
    expect(offsets(s)).toEqual({ a: 0, b: 8, c: 16, d: 20 });
    expect(s.size).toBe(24);
    expect(s.align).toBe(8);
    const n = layoutOf(t.struct({ x: t.bool, inner: t.struct({ y: t.f32, z: t.bool }), w: t.bool }));
    expect(offsets(n)).toEqual({ x: 0, inner: 4, w: 12 });
    expect(n.size).toBe(16);
    expect(layoutOf(t.struct({})).size).toBe(1); // C++ (CUDA) empty struct
  });

  it('protocol structs keep producer and consumer words on separate 128-byte lines', () => {
    expect(offsetOf(RingHeader, 'head')).toBe(0);
    expect(offsetOf(RingHeader, 'tail')).toBe(128);
    expect(offsetOf(RingHeader, 'capacity')).toBe(256);
    expect(RING_HEADER_SIZE).toBe(384);
    expect(offsetOf(ControlBlock, 'observed')).toBe(128);
    expect(offsetOf(ControlBlock, 'received')).toBe(256);
    expect(offsetOf(ControlBlock, 'doorbell')).toBe(384);
    expect(CONTROL_BLOCK_SIZE).toBe(512);
    expect(SLOT_HEADER_SIZE).toBe(48);
    expect(offsetOf(SlotHeader, 'seq')).toBe(0);
    expect(offsetOf(SlotHeader, 'time') % 8).toBe(0);
  });

  it('is cached per schema object', () => {
    const s = t.struct({ a: t.f32 });
    expect(layoutOf(s)).toBe(layoutOf(s));
  });

  it('rejects invalid definitions with SchemaDefinitionError', () => {
    expect(() => t.array(t.f32, 0)).toThrow(SchemaDefinitionError);
    expect(() => t.vec(t.f32, 1.5)).toThrow(SchemaDefinitionError);
    expect(() => t.struct({ 'not-an-id': t.f32 })).toThrow(SchemaDefinitionError);
    expect(() => t.struct({ ['a'.repeat(32)]: t.f32 })).toThrow(SchemaDefinitionError);
  });
});

// ---- Cross-check against a real C++ compiler -------------------------------------------------------

const gxx = spawnSync('g++', ['--version']).status === 0;

/** Emits C++ type definitions for a schema, one named type per struct/array/vec; returns checks. */
class CEmitter {
  defs: string[] = [];
  checks: Array<{ type: string; layout: Layout }> = [];
  private n = 0;
  private names = new Map<Schema, string>();

  typeOf(s: Schema): string {
    // Spelled independently of codegen's C types: this is the oracle layoutOf is checked against.
    if (s.kind === 'scalar') {
      const c = {
        f32: 'float',
        f64: 'double',
        i8: 'int8_t',
        u8: 'uint8_t',
        i16: 'int16_t',
        u16: 'uint16_t',
        i32: 'int32_t',
        u32: 'uint32_t',
        bool: 'bool',
      } as const;
      return c[s.scalar];
    }
    const hit = this.names.get(s);
    if (hit) return hit;
    const name = `T${this.n++}`;
    if (s.kind === 'array') {
      const el = this.typeOf(s.element);
      this.defs.push(`struct ${name} { ${el} v[${s.length}]; };`);
    } else if (s.kind === 'vec') {
      const el = this.typeOf(s.element);
      this.defs.push(`struct ${name} { uint32_t length; ${el} items[${s.maxLength}]; };`);
    } else {
      const fields = s.fieldNames.map((f) => `${this.typeOf(s.fields[f] as Schema)} ${f};`).join(' ');
      this.defs.push(`struct ${name} { ${fields} };`);
    }
    this.names.set(s, name);
    this.checks.push({ type: name, layout: layoutOf(s) });
    return name;
  }

  program(): string {
    const lines = this.checks.map(({ type, layout }) => {
      const offs = (layout.fields ?? []).map((f) => `printf(" %zu", offsetof(${type}, ${f.name}));`).join(' ');
      return `printf("${type} %zu %zu", sizeof(${type}), alignof(${type})); ${offs} printf("\\n");`;
    });
    return (
      `#include <cstdio>\n#include <cstddef>\n#include <cstdint>\n${this.defs.join('\n')}\nint main() ` +
      `{\n${lines.join('\n')}\nreturn 0; }\n`
    );
  }
}

describe.skipIf(!gxx)('layoutOf agrees with g++ sizeof/alignof/offsetof', () => {
  it('for hand-picked structs and 60 random nested schemas', () => {
    const em = new CEmitter();
    const picked: Schema[] = [
      t.struct({ a: t.bool, b: t.f64, c: t.u32, d: t.bool }),
      t.struct({
        x: t.bool,
        inner: t.struct({ y: t.f32, z: t.bool }),
        w: t.bool,
        v: t.vec(t.f64, 3),
        bs: t.vec(t.bool, 3),
      }),
      t.struct({ grid: t.array(t.array(t.i32, 3), 2), flags: t.array(t.bool, 7), tail: t.f64 }),
      t.struct({
        a: t.u8,
        b: t.i16,
        c: t.i8,
        d: t.u16,
        e: t.vec(t.u8, 5),
        f: t.array(t.i16, 3),
        g: t.vec(t.i8, 2),
        h: t.f64,
      }),
      t.struct({}),
      SlotHeader,
      RingHeader,
      ControlBlock,
    ];
    for (const s of picked) em.typeOf(s);
    for (const s of fc.sample(schemaArb(4), { numRuns: 60, seed: 1234 })) if (s.kind !== 'scalar') em.typeOf(s);
    const dir = mkdtempSync(join(tmpdir(), 'rg-layout-'));
    try {
      writeFileSync(join(dir, 'l.cpp'), em.program());
      execFileSync('g++', ['-std=c++17', '-O0', '-o', join(dir, 'l'), join(dir, 'l.cpp')]);
      const out = execFileSync(join(dir, 'l'), { encoding: 'utf8' }).trim().split('\n');
      expect(out.length).toBe(em.checks.length);
      for (const [i, line] of out.entries()) {
        const [type, ...nums] = line.trim().split(/\s+/);
        const { type: want, layout } = em.checks[i]!;
        expect(type).toBe(want);
        const expected = [layout.size, layout.align, ...(layout.fields ?? []).map((f) => f.offset)];
        expect(nums.map(Number), `${type}: ${em.defs.find((d) => d.startsWith(`struct ${type} `))}`).toEqual(expected);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
