import { describe, expect, it } from 'vitest';
import { compileEncoder, layoutOf, snapshot, t, viewAt, Writer } from '../src/entries/internal.ts';

/**
 * A struct view's own slots are symbol-keyed, so a schema field may take any name: before, fields named
 * `base`, `buffer`, `dv` or `kids` were shadowed by the view's own slots (`s.base = 8` moved the view).
 */
describe('state views: any field name', () => {
  const inner = t.struct({ kids: t.u16, dv: t.f32 });
  const schema = t.struct({
    base: t.i32,
    buffer: t.f64,
    dv: t.u8,
    kids: t.array(t.u16, 3),
    nest: inner,
    constructor: t.u32,
  });

  it("fields named like the view's internals read and write their own bytes", () => {
    const buf = new ArrayBuffer(layoutOf(schema).size);
    const v = viewAt(schema, buf, 0) as any;
    v.base = 8;
    v.buffer = 2.5;
    v.dv = 300; // a u8 wraps
    v.kids[1] = 7;
    v.nest.kids = 9;
    v.nest.dv = 1.5;
    v.constructor = 11;
    expect(v.base).toBe(8);
    expect(v.buffer).toBe(2.5);
    expect(v.dv).toBe(44);
    expect(snapshot(schema, buf, 0)).toEqual({
      base: 8,
      buffer: 2.5,
      dv: 44,
      kids: new Uint16Array([0, 7, 0]),
      nest: { kids: 9, dv: 1.5 },
      constructor: 11,
    });
    // A second view of the same bytes sees the same values: nothing was written beside the state.
    expect((viewAt(schema, buf, 0) as any).base).toBe(8);
  });

  it("a view encodes as its schema's value (the fields only)", () => {
    const buf = new ArrayBuffer(layoutOf(schema).size);
    const v = viewAt(schema, buf, 0) as any;
    v.base = -3;
    v.nest.dv = 0.25;
    const enc = (value: unknown) => {
      const out = new Uint8Array(1024);
      const w = new Writer(out).reset(0, out.length);
      compileEncoder(t.struct({ s: schema }))({ s: value }, w);
      return out.slice(0, w.pos);
    };
    expect(enc(v)).toEqual(enc(snapshot(schema, buf, 0)));
  });
});
