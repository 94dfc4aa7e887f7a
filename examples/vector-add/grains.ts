import { Grain, t, type TypesOf } from '@ringgrain/core';

/** Largest vector a message may carry (elements). The slot size is chosen per run from the actual size. */
export const MAX_LEN = 1 << 20;

const vector = t.vec(t.f32, MAX_LEN);

/**
 * Element-wise f32 addition. The sum is written over `a` (the decoded request) and sent back: no
 * allocation in the handler, and `a[i] + b[i]` stored into an f32 slot rounds once, like CUDA's `__fadd_rn`.
 * Vectors of different lengths are not added: the reply then says `n: 0` (handlers stay in the subset the
 * CUDA generator translates: no strings, no allocation, so no `throw new Error(...)`).
 */
export class VectorAdd extends Grain({
  name: 'VectorAdd',
  module: import.meta.url,
  state: t.struct({ calls: t.u32, elements: t.f64 }),
  methods: {
    add: { request: t.struct({ a: vector, b: vector }), reply: t.struct({ n: t.u32, sum: vector }) },
    stats: { request: t.struct({}), reply: t.struct({ calls: t.u32, elements: t.f64 }) },
  },
}) {
  add(s: V['state'], m: V['req']['add']): V['reply']['add'] {
    const n = m.a.length;
    if (m.b.length !== n) return { n: 0, sum: m.b };
    for (let i = 0; i < n; i++) {
      m.a[i] = m.a[i]! + m.b[i]!;
    }
    s.calls += 1;
    s.elements += n;
    return { n: n, sum: m.a };
  }

  stats(s: V['state']): V['reply']['stats'] {
    return { calls: s.calls, elements: s.elements };
  }
}
type V = TypesOf<typeof VectorAdd>;
