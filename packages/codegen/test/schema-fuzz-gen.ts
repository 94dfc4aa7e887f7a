import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { rng } from './random.ts';

/**
 * Random grain schemas and handlers for schema-fuzz.test.ts. A `Spec` is the shape of one field; from it
 * come the schema text (state and message), the layout we expect from C's rules, and the handler text.
 *
 * What is generated, within the subset the codegen README documents:
 * - scalar kinds f32 f64 i8 u8 i16 u16 i32 u32 bool, in any order (so C pads: u8 then f64 then u16 …);
 * - fixed arrays (t.array) and vecs (t.vec, max 1–9, sometimes up to 64) of scalars, structs and arrays,
 *   arrays and vecs nested, structs nested up to depth 3;
 * - bool arrays/vecs in messages; in the state such an element is t.u8 (README: state arrays of t.bool are
 *   Uint8Arrays in JS and are rejected), copied with `m.b[i] ? 1 : 0` and sent back as `s.x[i] !== 0`.
 *
 * Steered around (rejected with a CodegenError, as documented): a state vec — or a state struct/array holding
 * one — given whole to a reply or K2K payload field ("state vecs are copied element by element"): those are
 * written as literals (a `?:` chain over the vec's length); a whole state struct or array is given as the
 * live view only when it holds no vec. A K2K payload is always an object literal at its top ("ctx.send needs an
 * object literal payload"). Vec lengths stay within their max (a larger length reads past the items: JS reads
 * undefined where the unit fails with INDEX_RANGE, a documented difference).
 */
export type ScalarKind = 'f32' | 'f64' | 'i8' | 'u8' | 'i16' | 'u16' | 'i32' | 'u32' | 'bool';
export type Spec =
  | { readonly k: 'scalar'; readonly kind: ScalarKind }
  | { readonly k: 'array'; readonly el: Spec; readonly n: number }
  | { readonly k: 'vec'; readonly el: Spec; readonly max: number }
  | { readonly k: 'struct'; readonly fields: readonly (readonly [string, Spec])[] };

const KINDS: readonly ScalarKind[] = ['f32', 'f64', 'i8', 'u8', 'i16', 'u16', 'i32', 'u32', 'bool'];
const NUMERIC: readonly ScalarKind[] = ['f32', 'f64', 'i8', 'u8', 'i16', 'u16', 'i32', 'u32'];
const INTS: readonly ScalarKind[] = ['i8', 'u8', 'i16', 'u16', 'i32', 'u32'];
const SIZE: Record<ScalarKind, number> = { f32: 4, f64: 8, i8: 1, u8: 1, i16: 2, u16: 2, i32: 4, u32: 4, bool: 1 };

type R = () => number;
const pick = <T>(r: R, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
const int = (r: R, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));

const hasVec = (s: Spec): boolean =>
  s.k === 'vec'
    ? true
    : s.k === 'array'
      ? hasVec(s.el)
      : s.k === 'struct'
        ? s.fields.some(([, f]) => hasVec(f))
        : false;
/** Leaves (scalars) a value of `s` holds at most: keeps generated handlers and literals small. */
const leaves = (s: Spec): number =>
  s.k === 'scalar'
    ? 1
    : s.k === 'array'
      ? s.n * leaves(s.el)
      : s.k === 'vec'
        ? s.max * leaves(s.el)
        : s.fields.reduce((a, [, f]) => a + leaves(f), 0);

let fieldNo = 0;
function fieldName(r: R): string {
  // Identifiers of odd shapes (short, long, underscores, digits), all distinct within a struct.
  const base = pick(r, ['a', 'x', 'val', 'count', 'pos', 'flag', 'n_', 'Z', 'w9', 'longer_field_name_here']);
  return `${base}${fieldNo++}`;
}

/** A random field of struct depth `depth` (0 = top level). */
function genSpec(r: R, depth: number, budget: { n: number }): Spec {
  budget.n--;
  const p = r();
  const canNest = depth < 3 && budget.n > 0;
  if (p < 0.5 || !canNest) return { k: 'scalar', kind: pick(r, KINDS) };
  if (p < 0.52) return { k: 'struct', fields: [] };
  if (p < 0.55) return { k: 'array', el: { k: 'scalar', kind: pick(r, NUMERIC) }, n: int(r, 100, 300) };
  if (p < 0.65) return { k: 'array', el: genElement(r, depth, budget), n: r() < 0.85 ? int(r, 1, 6) : int(r, 7, 40) };
  if (p < 0.82) return { k: 'vec', el: genElement(r, depth, budget), max: r() < 0.85 ? int(r, 1, 9) : int(r, 10, 64) };
  return genStruct(r, depth + 1, budget);
}

function genElement(r: R, depth: number, budget: { n: number }): Spec {
  const p = r();
  // Bool elements often: a message bool array, a u8 array in the state.
  if (p < 0.55 || depth >= 3 || budget.n <= 0) return { k: 'scalar', kind: r() < 0.2 ? 'bool' : pick(r, KINDS) };
  if (p < 0.8) return genStruct(r, depth + 1, budget);
  // An array or vec of arrays or vecs: nested indexing.
  budget.n--;
  const el = genElement(r, depth + 1, budget);
  return r() < 0.5 ? { k: 'array', el, n: int(r, 1, 5) } : { k: 'vec', el, max: int(r, 1, 6) };
}

/**
 * Field names that are JS identifiers (so valid schema fields) but C++ keywords, reserved or macro names in
 * the unit and its headers, or the generator's own escape (`rgk_int` beside `int`).
 */
const RESERVED_NAMES = [
  'int',
  'new',
  'class',
  'default',
  'this',
  'register',
  'long',
  'signed',
  'union',
  'delete',
  'private',
  'template',
  'and',
  'NULL',
  'EOF',
  'NAN',
  'assert',
  '__LINE__',
  '_Pad',
  'M_PI',
  'RG_OK',
  'rgk_int',
  'length',
  'items',
  'min',
  'max',
];

function genStruct(r: R, depth: number, budget: { n: number }): Spec {
  const n = int(r, 1, depth === 0 ? 7 : 4);
  const fields: [string, Spec][] = [];
  for (let i = 0; i < n; i++) {
    let name = fieldName(r);
    if (r() < 0.15) {
      const w = pick(r, RESERVED_NAMES);
      if (!fields.some(([f]) => f === w)) name = w;
    }
    fields.push([name, genSpec(r, depth, budget)]);
  }
  return { k: 'struct', fields };
}

/** Trims element counts until a value fits `max` leaves (big literals and loops stay bounded). */
function bound(s: Spec, max: number): Spec {
  if (leaves(s) <= max) return s;
  switch (s.k) {
    case 'scalar':
      return s;
    case 'array':
    case 'vec': {
      const el = bound(s.el, Math.max(1, Math.floor(max / 2)));
      const n = Math.max(1, Math.min(s.k === 'array' ? s.n : s.max, Math.floor(max / leaves(el))));
      return s.k === 'array' ? { k: 'array', el, n } : { k: 'vec', el, max: n };
    }
    case 'struct':
      return {
        k: 'struct',
        fields: s.fields.map(([n, f]) => [n, bound(f, Math.max(1, Math.floor(max / s.fields.length)))] as const),
      };
  }
}

// ---------------------------------------------------------------- schema text and layout

/** Schema text of `s`: `state` maps arrays/vecs of bool to u8 (the subset rejects state bool arrays). */
export function schemaText(s: Spec, state: boolean, inArray = false): string {
  switch (s.k) {
    case 'scalar':
      return `t.${state && inArray && s.kind === 'bool' ? 'u8' : s.kind}`;
    case 'array':
      return `t.array(${schemaText(s.el, state, true)}, ${s.n})`;
    case 'vec':
      return `t.vec(${schemaText(s.el, state, true)}, ${s.max})`;
    case 'struct':
      return `t.struct({ ${s.fields.map(([n, f]) => `${n}: ${schemaText(f, state)}`).join(', ')} })`;
  }
}

export interface CLayout {
  readonly size: number;
  readonly align: number;
  readonly offsets?: readonly number[];
}
const up = (n: number, a: number) => Math.ceil(n / a) * a;

/** Size, alignment and field offsets by C's rules, written independently of core's layoutOf. */
export function cLayout(s: Spec): CLayout {
  switch (s.k) {
    case 'scalar':
      return { size: SIZE[s.kind], align: SIZE[s.kind] };
    case 'array': {
      const e = cLayout(s.el);
      return { size: e.size * s.n, align: e.align };
    }
    case 'vec': {
      // struct { unsigned int length; T items[max]; }
      const e = cLayout(s.el);
      const align = Math.max(4, e.align);
      return { size: up(up(4, e.align) + e.size * s.max, align), align, offsets: [0, up(4, e.align)] };
    }
    case 'struct': {
      let off = 0;
      let align = 1;
      const offsets: number[] = [];
      for (const [, f] of s.fields) {
        const l = cLayout(f);
        off = up(off, l.align);
        offsets.push(off);
        off += l.size;
        align = Math.max(align, l.align);
      }
      return { size: s.fields.length ? up(off, align) : 1, align, offsets };
    }
  }
}

// ---------------------------------------------------------------- handler text

class Out {
  lines: string[] = [];
  constructor(private ind = 2) {}
  line(s: string) {
    this.lines.push(`${'  '.repeat(this.ind)}${s}`);
  }
  open(s: string) {
    this.line(`${s} {`);
    this.ind++;
  }
  close() {
    this.ind--;
    this.line('}');
  }
}

/**
 * put: every message field into the same-shaped state field, scalars by assignment, arrays and vecs element by element.
 */
function copyInto(o: Out, s: Spec, dst: string, src: string, depth: number, inArray: boolean): void {
  switch (s.k) {
    case 'scalar':
      o.line(`${dst} = ${inArray && s.kind === 'bool' ? `${src} ? 1 : 0` : src};`);
      return;
    case 'struct':
      for (const [n, f] of s.fields) copyInto(o, f, `${dst}.${n}`, `${src}.${n}`, depth, false);
      return;
    case 'array':
    case 'vec': {
      const i = `i${depth}`;
      if (s.k === 'vec') o.line(`${dst}.length = ${src}.length;`);
      o.open(`for (let ${i} = 0; ${i} < ${s.k === 'vec' ? `${src}.length` : s.n}; ${i}++)`);
      let d = s.k === 'vec' ? `${dst}.items[${i}]` : `${dst}[${i}]`;
      let m = `${src}[${i}]`;
      if (s.el.k === 'struct' && s.el.fields.length > 0 && locals) {
        // A const local naming a struct (a state view, a message struct): reads and writes go through it.
        o.line(`const d${depth} = ${d};`);
        o.line(`const m${depth} = ${m};`);
        d = `d${depth}`;
        m = `m${depth}`;
      }
      copyInto(o, s.el, d, m, depth + 1, true);
      o.close();
      return;
    }
  }
}
let locals = false;

/**
 * A value of `s` read from the state at `e`, for a reply (`asMsg` false: bool array elements are the state's
 * u8) or a K2K payload to put (`asMsg`: bool array elements as booleans). A struct or array without vecs
 * (and, for payloads, without bool arrays) may be the live view itself; vecs are `?:` chains of literals.
 */
function fromState(r: R, s: Spec, e: string, asMsg: boolean, inArray: boolean, top = false): string {
  switch (s.k) {
    case 'scalar':
      return asMsg && inArray && s.kind === 'bool' ? `${e} !== 0` : e;
    case 'struct':
      // A K2K payload is an object literal (README: ctx.send(Grain, key, 'method', { … })).
      if (!top && !hasVec(s) && !(asMsg && hasBoolArray(s)) && r() < 0.6) return e;
      return `{ ${s.fields.map(([n, f]) => `${n}: ${fromState(r, f, `${e}.${n}`, asMsg, false)}`).join(', ')} }`;
    case 'array':
      if (!hasVec(s) && !(asMsg && hasBoolArray(s)) && r() < 0.7) return e;
      return `[${Array.from({ length: s.n }, (_, j) => fromState(r, s.el, `${e}[${j}]`, asMsg, true)).join(', ')}]`;
    case 'vec': {
      const k = Math.min(s.max, int(r, 0, 3));
      const lit = (n: number) =>
        `[${Array.from({ length: n }, (_, j) => fromState(r, s.el, `${e}.items[${j}]`, asMsg, true)).join(', ')}]`;
      // (e.length >= k ? [e0..ek-1] : e.length === k-1 ? [..] : … : [])
      let out = '[]';
      for (let n = 1; n <= k; n++) out = `${e}.length ${n === k ? '>=' : '==='} ${n} ? ${lit(n)} : ${out}`;
      return k === 0 ? '[]' : `(${out})`;
    }
  }
}
function hasBoolArray(s: Spec, inArray = false): boolean {
  switch (s.k) {
    case 'scalar':
      return inArray && s.kind === 'bool';
    case 'array':
    case 'vec':
      return hasBoolArray(s.el, true);
    case 'struct':
      return s.fields.some(([, f]) => hasBoolArray(f));
  }
}

const INT_OPS = [
  'X += m.k;',
  'X = X * 3 - 1;',
  'X -= m.k * 7;',
  'X ^= m.k;',
  'X++;',
  'X--;',
  'X = X * m.f;',
  'X <<= 3;',
  'X = (X + m.k) | 0;',
  'X = -X;',
  'X = X % m.k;',
  'X >>>= 1;',
  'X = ~X;',
  'X = X - 1.5;',
  'X *= 257;',
];
const FLOAT_OPS = [
  'X += m.f;',
  'X = X * 3 - 1;',
  'X /= 3;',
  'X = X * m.k + 0.5;',
  'X = Math.fround(X) - m.f;',
  'X -= m.k;',
  'X = Math.floor(X * 10) / 7;',
  'X = Math.max(X, m.f) * 1.0000001;',
];

/**
 * bump: arithmetic on every numeric state leaf (each kind's wrap/narrowing), bools flipped, vec lengths moved within
 * max.
 */
function bumpInto(o: Out, r: R, s: Spec, e: string, depth: number, inArray: boolean): void {
  switch (s.k) {
    case 'scalar': {
      if (s.kind === 'bool' && !inArray) {
        o.line(r() < 0.5 ? `${e} = !${e};` : `${e} = m.k > 0;`);
        return;
      }
      const kind = inArray && s.kind === 'bool' ? 'u8' : s.kind;
      const op = pick(r, kind === 'f32' || kind === 'f64' ? FLOAT_OPS : INT_OPS);
      o.line(op.replace(/X/g, e));
      return;
    }
    case 'struct':
      for (const [n, f] of s.fields) bumpInto(o, r, f, `${e}.${n}`, depth, false);
      return;
    case 'array': {
      const i = `i${depth}`;
      o.open(`for (let ${i} = 0; ${i} < ${s.n}; ${i}++)`);
      bumpInto(o, r, s.el, `${e}[${i}]`, depth + 1, true);
      o.close();
      return;
    }
    case 'vec': {
      const i = `i${depth}`;
      if (r() < 0.5) o.line(`${e}.length = ${e}.length < ${s.max} ? ${e}.length + 1 : 0;`);
      o.open(`for (let ${i} = 0; ${i} < ${e}.length; ${i}++)`);
      bumpInto(o, r, s.el, `${e}.items[${i}]`, depth + 1, true);
      o.close();
      return;
    }
  }
}

/**
 * Scalar leaves reachable without a loop (fields, array element 0 / last), with the schema text of their state kind.
 */
function directLeaves(s: Spec, e: string, inArray: boolean, out: [string, string][]): void {
  switch (s.k) {
    case 'scalar':
      out.push([e, `t.${inArray && s.kind === 'bool' ? 'u8' : s.kind}`]);
      return;
    case 'struct':
      for (const [n, f] of s.fields) directLeaves(f, `${e}.${n}`, false, out);
      return;
    case 'array':
      directLeaves(s.el, `${e}[${s.n - 1}]`, true, out);
      return;
    case 'vec':
      return;
  }
}

export interface Generated {
  readonly seed: number;
  readonly name: string;
  readonly file: string;
  readonly text: string;
  readonly state: Spec;
  readonly request: Spec;
  /** Methods and whether they reply. */
  readonly methods: readonly string[];
}

/** A whole grain module for `seed`: schemas and the put/get/bump/echo handlers. */
export function generate(seed: number, dir: string): Generated {
  const r = rng(seed * 7919 + 17);
  fieldNo = 0;
  let state = genStruct(r, 0, { n: int(r, 4, 14) }) as Extract<Spec, { k: 'struct' }>;
  state = bound(state, 400) as Extract<Spec, { k: 'struct' }>;
  if (r() < 0.15) {
    // Padding stress: an explicit u8, f64, u16, bool, f32, i8, i64-free run at the top.
    state = {
      k: 'struct',
      fields: [
        [fieldName(r), { k: 'scalar', kind: 'u8' }],
        [fieldName(r), { k: 'scalar', kind: 'f64' }],
        [fieldName(r), { k: 'scalar', kind: 'u16' }],
        ...state.fields,
        [fieldName(r), { k: 'scalar', kind: 'bool' }],
      ],
    };
  }
  const name = `Fz${seed}`;
  const core = pathToFileURL(fileURLToPath(new URL('../../core/src/index.ts', import.meta.url))).href;
  const stateText = schemaText(state, true);
  const reqText = schemaText(state, false);

  // put
  const put = new Out();
  locals = r() < 0.5;
  copyInto(put, state, 's', 'm', 0, false);
  const putReply = state.fields.filter(() => r() < 0.5);
  if (putReply.length === 0) putReply.push(state.fields[0]!);
  put.line(
    `return { ${putReply
      .map(([n, f]) => `${n}: ${f.k === 'vec' && r() < 0.5 ? `(m.${n}.length > 1 ? m.${n} : [])` : `m.${n}`}`)
      .join(', ')} };`,
  );
  const putReplyText = `t.struct({ ${putReply.map(([n, f]) => `${n}: ${schemaText(f, false)}`).join(', ')} })`;

  // get: the whole state or parts of it, read from the state
  const get = new Out();
  const whole = r() < 0.4;
  const getFields = whole ? [...state.fields] : state.fields.filter(() => r() < 0.6);
  if (getFields.length === 0) getFields.push(state.fields[0]!);
  const leafs: [string, string][] = [];
  directLeaves(state, 's', false, leafs);
  const extra = leafs.filter(() => r() < 0.2).slice(0, 4);
  get.line(
    `return { ${[
      ...getFields.map(([n, f]) => `${n}: ${fromState(r, f, `s.${n}`, false, false)}`),
      ...extra.map(([e], j) => `leaf${j}: ${e}`),
    ].join(', ')} };`,
  );
  const getReplyText = `t.struct({ ${[
    ...getFields.map(([n, f]) => `${n}: ${schemaText(f, true)}`),
    ...extra.map(([, k], j) => `leaf${j}: ${k}`),
  ].join(', ')} })`;

  // bump
  const kKind = pick(r, INTS);
  const fKind = pick(r, ['f32', 'f64'] as const);
  const bump = new Out();
  bumpInto(bump, r, state, 's', 0, false);
  const bumpLeaves = leafs.filter(() => r() < 0.3).slice(0, 5);
  const bumpReplies = r() < 0.7;
  if (bumpReplies) bump.line(`return { ${bumpLeaves.map(([e], j) => `b${j}: ${e}`).join(', ')} };`);
  const bumpReplyText = `t.struct({ ${bumpLeaves.map(([, k], j) => `b${j}: ${k}`).join(', ')} })`;

  // echo: K2K sends to itself, a put payload built from the state, and a bump with state leaves of the right kinds
  const echo = new Out();
  echo.line(`ctx.send(${name}, ctx.key, 'put', ${fromState(r, state, 's', true, false, true)});`);
  const kFrom = leafs.find(([, k]) => k === `t.${kKind}`)?.[0] ?? 'm.k';
  const fFrom = leafs.find(([, k]) => k === `t.${fKind}`)?.[0] ?? 'm.f';
  echo.open('if (m.k > 0)');
  echo.line(`ctx.send(${name}, ctx.key + 1, 'bump', { k: ${kFrom}, f: ${fFrom} });`);
  echo.close();
  echo.line(`return { n: m.k };`);

  const text = `// Generated by schema-fuzz-gen.ts (seed ${seed}): do not edit.
import { Grain, t } from '${core}';

export class ${name} extends Grain({
  name: '${name}',
  module: import.meta.url,
  state: ${stateText},
  methods: {
    put: { request: ${reqText}, reply: ${putReplyText} },
    get: { request: t.struct({}), reply: ${getReplyText} },
    bump: { request: t.struct({ k: t.${kKind}, f: t.${fKind} })${bumpReplies ? `, reply: ${bumpReplyText}` : ''} },
    echo: { request: t.struct({ k: t.${kKind}, f: t.${fKind} }), reply: t.struct({ n: t.${kKind} }) },
  },
}) {
  put(s: any, m: any): any {
${put.lines.join('\n')}
  }

  get(s: any): any {
${get.lines.join('\n')}
  }

  bump(s: any, m: any)${bumpReplies ? ': any' : ': void'} {
${bump.lines.join('\n')}
  }

  echo(s: any, m: any, ctx: any): any {
${echo.lines.join('\n')}
  }
}
`;
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.ts`);
  writeFileSync(file, text);
  return { seed, name, file, text, state, request: state, methods: ['put', 'get', 'bump', 'echo'] };
}

export const FUZZ_DIR = join(tmpdir(), `ringgrain-schema-fuzz-${process.pid}`);
