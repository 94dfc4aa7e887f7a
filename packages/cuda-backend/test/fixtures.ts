/** Grain classes of the CUDA backend tests (handlers inside the subset the code generator translates). */
import { Grain, t, type TypesOf } from '@ringgrain/core';

/**
 * A handler that fails on demand: an index out of range is a turn error on the GPU (the translated
 * subset has no `throw`); the ask rejects with the error text and the actor keeps its state.
 */
export class Picky extends Grain({
  name: 'Picky',
  module: import.meta.url,
  state: t.struct({ count: t.u32, xs: t.array(t.u32, 4) }),
  methods: {
    check: { request: t.struct({ code: t.i32 }), reply: t.struct({ count: t.u32 }) },
  },
}) {
  check(s: P['state'], m: P['req']['check']): P['reply']['check'] {
    s.xs[m.code] = 1; // code outside 0..3 fails the turn (INDEX_RANGE)
    s.count += 1;
    return { count: s.count };
  }
}
type P = TypesOf<typeof Picky>;

