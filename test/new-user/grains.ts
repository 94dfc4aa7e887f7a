/** A grain whose handlers return values outside their reply schemas (errors.test.ts). */
import { Grain, t, type TypesOf } from '@ringgrain/core';

export class Strict extends Grain({
  name: 'Strict',
  module: import.meta.url,
  state: t.struct({ n: t.i32 }),
  methods: {
    half: { request: t.struct({ x: t.i32 }), reply: t.struct({ n: t.i32 }) },
    point: { request: t.struct({}), reply: t.struct({ at: t.struct({ x: t.f64, tag: t.u8 }) }) },
    bump: { request: t.struct({}) },
  },
}) {
  half(_s: S['state'], m: S['req']['half']): S['reply']['half'] {
    return { n: m.x / 2 };
  }
  point(): S['reply']['point'] {
    return { at: { x: 1, tag: 300 } };
  }
  bump(s: S['state']): void {
    s.n += 1;
  }
}
type S = TypesOf<typeof Strict>;

