import { array, bool, f32, f64, i32, struct, u32, vec } from './types.ts';

/** The schema vocabulary: `t.struct({ x: t.f32, xs: t.array(t.f32, 4), ys: t.vec(t.u32, 64) })`. */
export const t = { f32, f64, i32, u32, bool, array, vec, struct } as const;

export * from './types.ts';
export * from './layout.ts';
export { compileEncoder, encodedSize, Writer, OVERFLOW, MISMATCH, type Encoder } from './msgpack-encode.ts';
export { compileDecoder, decodeExact, Reader, type Decoder } from './msgpack-decode.ts';
export { viewAt, snapshot, type StateView } from './view.ts';
