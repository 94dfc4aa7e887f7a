import { array, bool, f32, f64, i16, i32, i8, struct, u16, u32, u8, vec } from './types.ts';

/**
 * The schema vocabulary: `t.struct({ x: t.f32, xs: t.array(t.f32, 4), ys: t.vec(t.u32, 64), bytes: t.vec(t.u8, 256)
 * })`.
 */
export const t = { f32, f64, i8, u8, i16, u16, i32, u32, bool, array, vec, struct } as const;

export * from './types.ts';
export {
  KINDS,
  SCALAR_KINDS,
  NUMERIC_KINDS,
  intRange,
  scalarGuard,
  isNumericKind,
  kindSpec,
  type KindSpec,
  type Repr,
  type TypedArrays,
  type TypedArrayCtorOf,
} from './kinds.ts';
export * from './layout.ts';
export { compileEncoder, encodedSize, Writer, OVERFLOW, MISMATCH, type Encoder } from './msgpack-encode.ts';
export { compileDecoder, decodeExact, Reader, type Decoder } from './msgpack-decode.ts';
export { viewAt, snapshot, type StateView } from './view.ts';
