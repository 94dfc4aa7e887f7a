import type { Schema } from '@ringgrain/core/types';
import { KINDS } from '@ringgrain/core/backend';

/**
 * Tolerances of the differential test. Arithmetic (+ - * / %, sqrt, floor, ceil, trunc, round, fround,
 * conversions) is IEEE-exact on both sides and compared exactly in practice; the tolerance exists for
 * libm functions (exp, log, pow, cos, atan2, hypot): glibc and V8's fdlibm port are each within 1 ulp,
 * so results may differ by 2 ulp of a term, carried through a few additions, and through an f32 store
 * a 1-ulp f64 difference can flip the f32 rounding by 1 f32 ulp.
 */
export const F64_REL = 2 ** -40;
export const F32_REL = 2 ** -22;

function close(a: number, b: number, rel: number): boolean {
  if (Object.is(a, b)) return true;
  if (Number.isNaN(a) || Number.isNaN(b)) return false;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return a === b;
  return Math.abs(a - b) <= rel * Math.max(1, Math.abs(a), Math.abs(b));
}

/** Differences between two decoded values of `s`: integers and booleans exactly, floats within tolerance. */
export function diff(s: Schema, a: unknown, b: unknown, path = ''): string[] {
  switch (s.kind) {
    case 'scalar': {
      const repr = KINDS[s.scalar].repr;
      if (repr.class !== 'float') return a === b ? [] : [`${path}: ${String(a)} !== ${String(b)}`];
      return close(a as number, b as number, repr.bits === 32 ? F32_REL : F64_REL)
        ? []
        : [`${path}: ${String(a)} vs ${String(b)}`];
    }
    case 'array':
    case 'vec': {
      const x = a as ArrayLike<unknown>;
      const y = b as ArrayLike<unknown>;
      if (x.length !== y.length) return [`${path}: length ${x.length} vs ${y.length}`];
      const out: string[] = [];
      for (let i = 0; i < x.length; i++) out.push(...diff(s.element, x[i], y[i], `${path}[${i}]`));
      return out;
    }
    case 'struct': {
      const out: string[] = [];
      for (const f of s.fieldNames)
        out.push(...diff(s.fields[f] as Schema, (a as any)[f], (b as any)[f], path ? `${path}.${f}` : f));
      return out;
    }
  }
}
