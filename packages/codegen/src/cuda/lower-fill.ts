/**
 * Object and array literals into C structs (a reply, a K2K payload): field by field in the literal's order,
 * checked against the schema, with the conversions of each field's kind.
 */
import { describeSchema, type Schema, type StructSchema } from '@ringgrain/core/backend';
import type { Expr, Loc } from '../front/ast.ts';
import { CodegenError } from '../front/errors.ts';
import { siteAt, unsupported } from '../front/parse.ts';
import { indent } from './codecs.ts';
import { cMember } from './ctypes.ts';
import { lowerExpr } from './lower-expr.ts';
import type { FnScope } from './scope.ts';
import { describeVT, encodeAs, needBool, typeError } from './values.ts';

function field(base: string, name: string): string {
  return base === '(*r)' ? `r->${cMember(name)}` : `${base}.${cMember(name)}`;
}

/** Fills the C struct at `base` from an object literal, checking it against the schema. */
export function fillStruct(
  fn: FnScope,
  obj: Extract<Expr, { kind: 'object' }>,
  schema: StructSchema,
  base: string,
  what: string,
  path = '',
): string {
  const names = new Set(schema.fieldNames);
  for (const p of obj.props) {
    if (!names.has(p.name)) {
      throw new CodegenError(
        'CODEGEN_TYPE',
        `${what} field ${p.name}`,
        `the ${what} has no field "${p.name}" (schema ${describeSchema(schema)})`,
        siteAt(fn.site, p.loc),
        `write exactly the fields ${schema.fieldNames.join(', ') || '(none)'}`,
      );
    }
  }
  for (const name of schema.fieldNames) {
    if (!obj.props.some((x) => x.name === name)) {
      throw new CodegenError(
        'CODEGEN_TYPE',
        `${what} field ${name}`,
        `the ${what} misses field "${name}" (schema ${describeSchema(schema)})`,
        siteAt(fn.site, obj.loc),
        `write exactly the fields ${schema.fieldNames.join(', ')}`,
      );
    }
  }
  // In the literal's order, as JS evaluates it (the first failure is the turn's error).
  return obj.props
    .map((p) =>
      fillField(
        fn,
        p.value,
        schema.fields[p.name] as Schema,
        field(base, p.name),
        what,
        p.loc,
        path ? `${path}.${p.name}` : p.name,
      ),
    )
    .join('\n');
}

function fillField(fn: FnScope, e: Expr, s: Schema, lv: string, what: string, loc: Loc, path: string): string {
  if (s.kind === 'struct' && e.kind === 'object') return fillStruct(fn, e, s, lv, what, path);
  if (e.kind === 'array') return fillArray(fn, e, s, lv, what, path);
  if (e.kind === 'cond' && s.kind !== 'scalar') {
    // `c ? [a, b] : []`, `c ? m.xs : m.ys`, `c ? { x: 1 } : m.p`: the branch taken fills the field, as JS picks one
    // value.
    const test = needBool(fn.site, e.test.loc, lowerExpr(e.test, fn), 'condition of ?:');
    const a = fillField(fn, e.then, s, lv, what, loc, path);
    const b = fillField(fn, e.otherwise, s, lv, what, loc, path);
    return `if (${test}) {\n${indent(a, 2)}\n} else {\n${indent(b, 2)}\n}`;
  }
  const v = lowerExpr(e, fn);
  if (s.kind === 'scalar') {
    const { c, mayFail } = encodeAs(fn.site, loc, s.scalar, v);
    if (mayFail) fn.mayFail = true;
    return `${lv} = ${c};`;
  }
  const src = v.t.k === 'struct' || v.t.k === 'array' || v.t.k === 'vec' ? v.t : undefined;
  if (
    !src ||
    describeSchema(src.s) !== describeSchema(s) ||
    (src.k === 'vec' && src.origin === 'state') ||
    (src.origin === 'state' && hasVec(s))
  ) {
    return unsupported(
      fn.site,
      loc,
      `${what} field from ${describeVT(v.t)}`,
      `give it a value of the same schema (${describeSchema(s)}): a message or state field declared the same ` +
        `way, or an object literal; state vecs are copied element by element`,
    );
  }
  // A vec copies its length and the items in use, not its whole bound (a bound may be megabytes).
  // Into the reply (device memory), the warp may help; a K2K payload is a local of lane 0, which only it can write.
  const copy = lv.startsWith('r->') ? 'rg_copy_t(t, ' : 'rg_copy(';
  if (src.k === 'vec')
    return (
      `${copy}&${lv}, &${v.c}, rg_minu((unsigned int)sizeof(${lv}), ` +
      `(unsigned int)((const unsigned char*)&(${v.c}).items[(${v.c}).length] - (const unsigned char*)&(${v.c}))));`
    );
  return `${copy}&${lv}, &${v.c}, sizeof(${lv}));`;
}

/**
 * An array literal into a fixed array (exactly `length` elements) or a bounded vec (at most `maxLength`;
 * sets its length), element by element with the conversions of a scalar field of the same kind.
 */
function fillArray(
  fn: FnScope,
  e: Extract<Expr, { kind: 'array' }>,
  s: Schema,
  lv: string,
  what: string,
  path: string,
): string {
  const n = e.elements.length;
  if (s.kind !== 'array' && s.kind !== 'vec') {
    return typeError(
      fn.site,
      e.loc,
      'array literal',
      `the ${what} field ${path} is ${describeSchema(s)}, not an array`,
      'array literals fill t.array / t.vec fields only',
    );
  }
  if (s.kind === 'array' && n !== s.length) {
    typeError(
      fn.site,
      e.loc,
      'array literal length',
      `the ${what} field ${path} is ${describeSchema(s)} but the array literal has ${n} element(s)`,
      `write exactly ${s.length} element(s): a t.array has a fixed length`,
    );
  }
  if (s.kind === 'vec' && n > s.maxLength) {
    typeError(
      fn.site,
      e.loc,
      'array literal length',
      `the ${what} field ${path} is ${describeSchema(s)} but the array literal has ${n} elements`,
      `write at most ${s.maxLength} element(s), or raise the vec's maximum length in the schema`,
    );
  }
  const items = s.kind === 'array' ? lv : `${lv}.items`;
  const out = e.elements.map((x, i) => fillField(fn, x, s.element, `${items}[${i}]`, what, x.loc, `${path}[${i}]`));
  if (s.kind === 'vec') out.push(`${lv}.length = ${n}u;`);
  return out.join('\n');
}

function hasVec(s: Schema): boolean {
  if (s.kind === 'vec') return true;
  if (s.kind === 'array') return hasVec(s.element);
  if (s.kind === 'struct') return s.fieldNames.some((n) => hasVec(s.fields[n] as Schema));
  return false;
}
