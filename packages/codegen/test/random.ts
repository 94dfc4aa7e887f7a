import type { Schema, StructSchema } from '@ringgrain/core/types';
import { KINDS, isNumericScalar, layoutOf, viewAt, type ScalarKind } from '@ringgrain/core/backend';

/** Seeded PRNG (mulberry32): every run draws the same inputs. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Ranges {
  /** Largest magnitude of float inputs. */
  readonly float: number;
  /** Largest magnitude of integer inputs. */
  readonly int: number;
}

/**
 * A value of `kind`: integers within `g.int` and the kind's range, often small, often at those bounds (a
 * small kind's bounds, where its stores wrap and its replies overflow); floats often small integers,
 * within `g.float`.
 */
export function randomScalar(kind: ScalarKind, r: () => number, g: Ranges): number | boolean {
  const pick = r();
  const repr = KINDS[kind].repr;
  switch (repr.class) {
    case 'bool':
      return pick < 0.5;
    case 'int': {
      const lo = Math.max(repr.min, -g.int);
      const hi = Math.min(repr.max, g.int);
      if (pick < 0.1) return r() < 0.5 ? lo : hi;
      const small = Math.max(repr.min, Math.min(repr.max, Math.floor(r() * 201) - 100));
      return pick < 0.5 ? small : lo + Math.floor(r() * (hi - lo + 1));
    }
    case 'float': {
      const v = pick < 0.2 ? Math.floor(r() * 21) - 10 : pick < 0.3 ? 0 : (r() * 2 - 1) * (pick < 0.7 ? 10 : g.float);
      return repr.bits === 32 ? Math.fround(v) : v;
    }
  }
}

/** A plain JS value of `schema` (numeric arrays as number[]), within `g`. */
export function randomValue(s: Schema, r: () => number, g: Ranges): unknown {
  switch (s.kind) {
    case 'scalar':
      return randomScalar(s.scalar, r, g);
    case 'array':
    case 'vec': {
      const n = s.kind === 'array' ? s.length : Math.floor(r() * (s.maxLength + 1));
      return Array.from({ length: n }, () => randomValue(s.element, r, g));
    }
    case 'struct':
      return Object.fromEntries(s.fieldNames.map((f) => [f, randomValue(s.fields[f] as Schema, r, g)]));
  }
}

function fill(s: Schema, view: any, v: any): void {
  if (s.kind === 'struct') {
    for (const f of s.fieldNames) {
      const fs = s.fields[f] as Schema;
      if (fs.kind === 'scalar') view[f] = v[f];
      else fill(fs, view[f], v[f]);
    }
  } else if (s.kind === 'array') {
    for (let i = 0; i < s.length; i++) {
      if (s.element.kind === 'scalar') view[i] = isNumericScalar(s.element) ? v[i] : v[i] ? 1 : 0;
      else fill(s.element, view[i], v[i]);
    }
  } else if (s.kind === 'vec') {
    view.length = v.length;
    for (let i = 0; i < v.length; i++) {
      if (s.element.kind === 'scalar') view.items[i] = v[i];
      else fill(s.element, view.items[i], v[i]);
    }
  }
}

/** State bytes holding a random value of the state schema (written through core's views). */
export function randomState(s: StructSchema, r: () => number, g: Ranges): Uint8Array {
  const buf = new ArrayBuffer(layoutOf(s).size);
  fill(s, viewAt(s, buf, 0), randomValue(s, r, g));
  return new Uint8Array(buf);
}

/**
 * The same value as another msgpack writer may shape it: shuffled keys, and numeric arrays at random as a
 * typed array (bin) or a plain array of numbers (msgpack array).
 */
export function reshape(s: Schema, v: any, r: () => number): any {
  if (s.kind === 'struct') {
    const names = [...s.fieldNames].sort(() => r() - 0.5);
    return Object.fromEntries(names.map((n) => [n, reshape(s.fields[n] as Schema, v[n], r)]));
  }
  if (s.kind === 'array' || s.kind === 'vec') {
    const items = Array.from(v as ArrayLike<unknown>, (x) => reshape(s.element, x, r));
    if (isNumericScalar(s.element) && r() < 0.5) return KINDS[s.element.scalar].array.from(items as number[]);
    return items;
  }
  return v;
}
