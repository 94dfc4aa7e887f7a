import { Grain, t, type TypesOf } from '@ringgrain/core';

/**
 * The write-behind benchmark's grain (bench/gpu-state.ts): a 32-byte state, the row size of the issue's
 * target (1,000,000 dirty 32-byte states read out of the GPU). `put` changes every field, so each actor
 * told once is dirty.
 */
export class Slab extends Grain({
  name: 'Slab',
  module: import.meta.url,
  state: t.struct({ a: t.f64, b: t.f64, c: t.f64, n: t.u32, k: t.i32 }),
  methods: {
    put: { request: t.struct({ v: t.f64, k: t.i32 }) },
  },
}) {
  put(s: S['state'], m: S['req']['put']): void {
    s.a = m.v;
    s.b = m.v * 2;
    s.c = m.v * 3;
    s.n += 1;
    s.k = m.k;
  }
}
type S = TypesOf<typeof Slab>;

/** An odd-sized state (3 bytes): the gather kernel's byte-wise copy path. */
export class Tiny extends Grain({
  name: 'Tiny',
  module: import.meta.url,
  state: t.struct({ a: t.u8, b: t.u8, c: t.u8 }),
  methods: {
    set: { request: t.struct({ c: t.u8 }) },
  },
}) {
  set(s: T['state'], m: T['req']['set']): void {
    s.c = m.c;
    s.a = 1;
  }
}
type T = TypesOf<typeof Tiny>;
