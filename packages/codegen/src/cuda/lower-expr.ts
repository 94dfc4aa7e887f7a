import { isNumericScalar, type Schema } from '@ringgrain/core/backend';
import type { BinaryOp, Expr, Loc } from '../front/ast.ts';
import { MATH_CONSTANTS, MATH_FUNCTIONS } from './intrinsics.ts';
import { CodegenError } from '../front/errors.ts';
import { siteAt, unsupported } from '../front/parse.ts';
import type { FnScope } from './scope.ts';
import {
  BOOL,
  F64,
  I32,
  U32,
  asDouble,
  asI32,
  asU32,
  describeVT,
  fmtDouble,
  heldAsInt,
  needBool,
  paren,
  schemaType,
  typeError,
  type VT,
  type Val,
} from './values.ts';
import { ARITH } from './kind-arith.ts';
import { cMember } from './ctypes.ts';

type ExprOf<K extends Expr['kind']> = Extract<Expr, { kind: K }>;
type ExprTable = { readonly [K in Expr['kind']]: (e: ExprOf<K>, fn: FnScope) => Val };

export function lowerExpr(e: Expr, fn: FnScope): Val {
  return (EXPR[e.kind] as (e: Expr, fn: FnScope) => Val)(e, fn);
}

function numLit(v: number): Val {
  if (Number.isInteger(v) && Math.abs(v) <= 0x7fffffff && !Object.is(v, -0))
    return { c: v < 0 ? `(${v})` : String(v), t: I32, lit: v };
  return { c: fmtDouble(v), t: F64 };
}

const OUTER_HINT =
  'handlers see only their parameters, their locals, module-level `const NAME = <number>` and module-level ' +
  'function helpers; pass the value in the message or keep it in the state';
/** JS globals a handler might reach for, with what the subset offers instead. */
const GLOBAL_HINTS: Readonly<Record<string, string>> = {
  Number:
    'Number.* is not in the subset: for Number.isInteger(x) write x === Math.trunc(x), for Number.isFinite(x) x ' +
    '- x === 0, for Number.isNaN(x) x !== x; constants such as Number.MAX_SAFE_INTEGER as a module-level `const ' +
    'NAME = 9007199254740991`',
  console: 'a GPU turn cannot log: return the value in the reply, or keep it in the state and read it with an ask',
  parseInt: 'strings are not in the subset: send numbers (Math.trunc(x) truncates)',
  parseFloat: 'strings are not in the subset: send numbers',
  String: 'strings are not in the subset: send numbers',
  JSON: 'strings are not in the subset: send the fields as schema values',
  Date: 'use ctx.now() (the message clock, in ms)',
  Array: 'arrays come from the schema (t.array, t.vec): write into the state, the reply or the message field',
  Object: 'objects are the reply (`return { ... }`) or a ctx.send payload, built as object literals',
  BigInt: 'integers are numbers in the subset (t.i32, t.u32, …): no BigInt',
};

/** One dispatch table per node type: each entry lowers one kind of expression. */
const EXPR: ExprTable = {
  num: (e) => numLit(e.value),
  bool: (e) => ({ c: e.value ? 'true' : 'false', t: BOOL }),
  str: (e, fn) => unsupported(fn.site, e.loc, 'string'),
  object: (e, fn) =>
    unsupported(
      fn.site,
      e.loc,
      'object literal here',
      'object literals are the reply (`return { ... }`) or the payload of ctx.send/ctx.forward',
    ),
  array: (e, fn) => unsupported(fn.site, e.loc, 'array literal'),
  ident: (e, fn) => {
    const local = fn.lookup(e.name);
    if (local) return { c: local.cname, t: local.t, lv: !local.constant };
    const role = fn.roles.get(e.name);
    if (role === 'state') return { c: '(*s)', t: { k: 'struct', s: fn.grain.state, origin: 'state' } };
    if (role === 'msg' && fn.method) return { c: '(*m)', t: { k: 'struct', s: fn.method.request, origin: 'msg' } };
    if (role === 'ctx') return { c: 't', t: { k: 'ctx' } };
    if (e.name === 'Math') return { c: '', t: { k: 'math' } };
    if (e.name === 'Infinity') return { c: 'rg_inf()', t: F64 };
    if (e.name === 'NaN') return { c: 'rg_nan()', t: F64 };
    const k = fn.unit.mod.consts.get(e.name);
    if (k !== undefined) return numLit(k);
    const g = fn.unit.resolveGrain(e.name);
    if (g) return { c: '', t: { k: 'grain', def: g.def, id: g.id } };
    if (fn.unit.mod.classToGrain.has(e.name)) {
      throw new CodegenError(
        'CODEGEN_K2K',
        `grain class ${e.name}`,
        `grain class ${e.name} is not among the grains placed with ${fn.grain.name} (generateKernel's grains)`,
        siteAt(fn.site, e.loc),
        'place both classes on the same backend (K2K on the GPU never goes through the host), and pass every ' +
          'placed GrainDef in grains',
      );
    }
    return unsupported(fn.site, e.loc, `reference to outer variable ${e.name}`, GLOBAL_HINTS[e.name] ?? OUTER_HINT);
  },
  member: (e, fn) => member(fn, e.loc, lowerExpr(e.object, fn), e.name),
  index: (e, fn) => index(fn, e.loc, lowerExpr(e.object, fn), e.index),
  call: (e, fn) => call(fn, e),
  unary: (e, fn) => {
    const a = lowerExpr(e.arg, fn);
    switch (e.op) {
      case '!':
        return { c: `!${paren(needBool(fn.site, e.loc, a, 'operator !'))}`, t: BOOL };
      case '-':
        if (a.lit !== undefined && a.lit !== 0) return numLit(-a.lit);
        return { c: `(-${paren(asDouble(fn.site, e.loc, a, 'unary -'))})`, t: F64 };
      case '+':
        return { c: asDouble(fn.site, e.loc, a, 'unary +'), t: F64 };
      case '~':
        return { c: `(~${paren(asI32(fn.site, e.loc, a, 'operator ~'))})`, t: I32 };
    }
  },
  binary: (e, fn) => {
    const { vals, wrap } = inOrder(fn, [e.left, e.right]);
    const v = binary(fn, e.loc, e.op, vals[0] as Val, vals[1] as Val);
    return { ...v, c: wrap(v.c) };
  },
  logical: (e, fn) => {
    const l = needBool(fn.site, e.loc, lowerExpr(e.left, fn), `operator ${e.op}`);
    const r = needBool(fn.site, e.loc, lowerExpr(e.right, fn), `operator ${e.op}`);
    return { c: `(${l} ${e.op} ${r})`, t: BOOL };
  },
  cond: (e, fn) => {
    const test = needBool(fn.site, e.loc, lowerExpr(e.test, fn), 'condition of ?:');
    const a = lowerExpr(e.then, fn);
    const b = lowerExpr(e.otherwise, fn);
    if (a.t.k === 'bool' && b.t.k === 'bool') return { c: `(${test} ? ${a.c} : ${b.c})`, t: BOOL };
    if (a.t.k === 'num' && b.t.k === 'num') {
      if (a.t.n === b.t.n) return { c: `(${test} ? ${a.c} : ${b.c})`, t: a.t };
      return { c: `(${test} ? ${asDouble(fn.site, e.loc, a)} : ${asDouble(fn.site, e.loc, b)})`, t: F64 };
    }
    return typeError(
      fn.site,
      e.loc,
      '?:',
      `both branches of ?: must be numbers or both booleans, got ${describeVT(a.t)} and ${describeVT(b.t)}`,
      'give both branches the same type',
    );
  },
};

/**
 * Lowers operands that JS evaluates left to right. C leaves the order of an operator's operands and of a
 * call's arguments unspecified (g++ evaluates `f(a, b)`'s arguments right to left), which is visible only
 * when two of them can fail (a helper's throw, an index, a checked conversion): the first failure is the
 * turn's error, so it must be JS's. Then every operand but the last is bound in order to a constant inside
 * an immediately invoked lambda, and `wrap` puts the combining expression after the bindings. Otherwise
 * nothing changes.
 */
function inOrder(fn: FnScope, es: readonly Expr[]): { vals: Val[]; wrap: (c: string) => string } {
  const outer = fn.mayFail;
  let failing = 0;
  const vals = es.map((x) => {
    fn.mayFail = false;
    const v = lowerExpr(x, fn);
    if (fn.mayFail) failing++;
    return v;
  });
  fn.mayFail = outer || failing > 0;
  if (failing < 2 || vals.some((v) => v.t.k !== 'num' && v.t.k !== 'bool')) return { vals, wrap: (c) => c };
  const binds: string[] = [];
  const bound = vals.map((v, i) => {
    if (i === vals.length - 1) return v;
    const name = fn.temp('q');
    binds.push(`const auto ${name} = ${v.c};`);
    return { c: name, t: v.t };
  });
  return { vals: bound, wrap: (c) => `([&]() { ${binds.join(' ')} return ${c}; }())` };
}

export function binary(fn: FnScope, loc: Loc, op: BinaryOp, l: Val, r: Val): Val {
  const site = fn.site;
  switch (op) {
    case '+':
    case '-':
    case '*':
    case '/': {
      const m = { '+': 'RG_ADD', '-': 'RG_SUB', '*': 'RG_MUL', '/': 'RG_DIV' }[op];
      return {
        c: `${m}(${asDouble(site, loc, l, `operator ${op}`)}, ${asDouble(site, loc, r, `operator ${op}`)})`,
        t: F64,
      };
    }
    case '%':
      return { c: `fmod(${asDouble(site, loc, l, 'operator %')}, ${asDouble(site, loc, r, 'operator %')})`, t: F64 };
    case '<':
    case '<=':
    case '>':
    case '>=':
    case '===':
    case '!==': {
      const cop = op === '===' ? '==' : op === '!==' ? '!=' : op;
      if (l.t.k === 'bool' || r.t.k === 'bool') {
        if (l.t.k !== r.t.k || (op !== '===' && op !== '!==')) {
          typeError(
            site,
            loc,
            `operator ${op}`,
            `operator ${op} on ${describeVT(l.t)} and ${describeVT(r.t)}`,
            'compare booleans only with === / !== and only with booleans',
          );
        }
        return { c: `(${l.c} ${cop} ${r.c})`, t: BOOL };
      }
      if (l.t.k === 'num' && r.t.k === 'num' && l.t.n === r.t.n && ARITH[l.t.n].held !== 'float')
        return { c: `(${l.c} ${cop} ${r.c})`, t: BOOL };
      // Values that are C ints after promotion (integer literals, i8..i32) compare exactly as ints.
      if (heldAsInt(l) && heldAsInt(r)) return { c: `(${l.c} ${cop} ${r.c})`, t: BOOL };
      return {
        c: `(${asDouble(site, loc, l, `operator ${op}`)} ${cop} ${asDouble(site, loc, r, `operator ${op}`)})`,
        t: BOOL,
      };
    }
    case '|':
    case '&':
    case '^':
      return { c: `(${asI32(site, loc, l)} ${op} ${asI32(site, loc, r)})`, t: I32 };
    case '<<':
      return { c: `(int)((unsigned int)${paren(asI32(site, loc, l))} << (${asU32(site, loc, r)} & 31u))`, t: I32 };
    case '>>':
      return { c: `(${asI32(site, loc, l)} >> (${asU32(site, loc, r)} & 31u))`, t: I32 };
    case '>>>':
      return { c: `(${asU32(site, loc, l)} >> (${asU32(site, loc, r)} & 31u))`, t: U32 };
  }
}

function member(fn: FnScope, loc: Loc, o: Val, name: string): Val {
  const t = o.t;
  const bad = (hint: string): never => unsupported(fn.site, loc, `property ${name} of ${describeVT(t)}`, hint);
  switch (t.k) {
    case 'math': {
      const k = MATH_CONSTANTS[name];
      if (k !== undefined) return { c: fmtDouble(k), t: F64 };
      if (MATH_FUNCTIONS[name]) return bad(`call it: Math.${name}(...)`);
      return bad(
        `Math.${name} has no CUDA translation; supported: ${Object.keys(MATH_FUNCTIONS).join(', ')}, ` +
          `${Object.keys(MATH_CONSTANTS).join(', ')}`,
      );
    }
    case 'ctx':
      if (name === 'key') {
        if (fn.grain.keyKind === 'string') {
          return bad(
            `a string key exists on the GPU only as its host-interned id: ctx.key may only be the key of ` +
              `ctx.send/ctx.forward to ${fn.grain.name} itself; pass other uses in the message`,
          );
        }
        return { c: '(double)t->key', t: F64 };
      }
      return bad('ctx offers key, now(), send(...) and forward(...)');
    case 'struct': {
      const f = t.s.fields[name] as Schema | undefined;
      if (!f) return bad(`the schema has fields ${t.s.fieldNames.join(', ') || '(none)'}`);
      // Through a pointer (the state, the message, a const struct local): p->f.
      const ptr = /^\(\*([A-Za-z_]\w*)\)$/.exec(o.c)?.[1];
      const c = ptr !== undefined ? `${ptr}->${cMember(name)}` : `${o.c}.${cMember(name)}`;
      return { c, t: schemaType(f, t.origin), lv: f.kind === 'scalar' };
    }
    case 'array':
      if (name === 'length') return { c: String(t.s.length), t: I32, lit: t.s.length };
      return bad('arrays offer .length and [i]');
    case 'items':
      if (name === 'length') return { c: String(t.s.maxLength), t: I32, lit: t.s.maxLength };
      return bad('arrays offer .length and [i]');
    case 'vec':
      if (name === 'length') return { c: `${o.c}.length`, t: U32, lv: t.origin === 'state' };
      if (name === 'items' && t.origin === 'state')
        return { c: `${o.c}.items`, t: { k: 'items', s: t.s, origin: t.origin } };
      return bad(
        t.origin === 'state'
          ? 'state vecs offer .length and .items[i]'
          : 'message vecs are arrays: use .length and [i]',
      );
    default:
      return bad('only schema fields, Math and ctx have properties');
  }
}

/** A length the handler itself can evaluate (a literal, or a field of its state or message). */
const HANDLER_SCOPE_BOUND = /^(\d+|\(\*[sm]\)[.\w]*|[sm]->[.\w]+)$/;

function index(fn: FnScope, loc: Loc, o: Val, ie: Expr): Val {
  const t = o.t;
  let element: Schema;
  let bound: string;
  let items = o.c;
  let staticBound: number | undefined;
  if (t.k === 'array') {
    element = t.s.element;
    bound = String(t.s.length);
    staticBound = t.s.length;
  } else if (t.k === 'items') {
    element = t.s.element;
    bound = String(t.s.maxLength);
    staticBound = t.s.maxLength;
  } else if (t.k === 'vec' && t.origin !== 'state') {
    element = t.s.element;
    bound = `${o.c}.length`;
    items = `${o.c}.items`;
  } else {
    return unsupported(
      fn.site,
      loc,
      `dynamic property access on ${describeVT(t)}`,
      t.k === 'vec'
        ? 'index a state vec through its storage: state.v.items[i]'
        : 'only arrays can be indexed; name struct fields with a dot',
    );
  }
  if (t.origin === 'state' && element.kind === 'scalar' && element.scalar === 'bool') {
    unsupported(
      fn.site,
      loc,
      'state array of booleans',
      'state bool arrays are Uint8Arrays in JS (numbers, not booleans); declare the field as t.array(t.u8, n) ' +
        'and store 0/1',
    );
  }
  const i = lowerExpr(ie, fn);
  let ic: string;
  const proven = fn.provenIndex;
  if (i.lit !== undefined && staticBound !== undefined && i.lit >= 0 && i.lit < staticBound) ic = String(i.lit);
  else if (
    proven &&
    ie.kind === 'ident' &&
    i.c === proven.cname &&
    HANDLER_SCOPE_BOUND.test(bound) &&
    !/\bv_|\b_[a-z]+\d/.test(bound)
  ) {
    // An element-parallel loop's variable, indexing an array whose length the loop checks before it runs
    // on the lanes (lower-stmt.ts parallelFor: 0 <= start, end <= every such length).
    proven.bounds.add(bound);
    ic = proven.index;
  } else {
    if (i.t.k !== 'num')
      typeError(
        fn.site,
        loc,
        'index',
        `an array index must be a number, got ${describeVT(i.t)}`,
        'index with a number',
      );
    fn.mayFail = true;
    const held = ARITH[i.t.n].held;
    ic =
      held === 'int'
        ? `rg_idxi(t, ${i.c}, ${bound})`
        : held === 'unsigned'
          ? `rg_idxu(t, ${i.c}, ${bound})`
          : `rg_idx(t, ${asDouble(fn.site, loc, i)}, ${bound})`;
  }
  const vt: VT = schemaType(element, t.origin);
  return { c: `${items}[${ic}]`, t: vt, lv: element.kind === 'scalar' };
}

function call(fn: FnScope, e: ExprOf<'call'>): Val {
  const site = fn.site;
  const callee = e.callee;
  if (callee.kind === 'member') {
    const o = lowerExpr(callee.object, fn);
    if (o.t.k === 'math') {
      const m = MATH_FUNCTIONS[callee.name];
      if (!m) {
        return unsupported(
          site,
          e.loc,
          `Math.${callee.name}`,
          `Math.${callee.name} has no CUDA translation; supported: ${Object.keys(MATH_FUNCTIONS).join(', ')}`,
        );
      }
      if (m.arity === 'variadic' ? e.args.length < 1 : e.args.length !== m.arity) {
        typeError(
          site,
          e.loc,
          `Math.${callee.name}`,
          `Math.${callee.name} takes ${m.arity === 'variadic' ? 'at least 1' : m.arity} argument(s), got ` +
            `${e.args.length}`,
          'pass the documented arguments',
        );
      }
      const ordered = inOrder(fn, e.args);
      const args = e.args.map((a, i) => {
        const v = ordered.vals[i] as Val;
        return m.args === 'i32'
          ? asI32(site, a.loc, v, `Math.${callee.name}`)
          : m.args === 'u32'
            ? asU32(site, a.loc, v, `Math.${callee.name}`)
            : asDouble(site, a.loc, v, `Math.${callee.name}`);
      });
      let c = args[0] as string;
      if (m.arity === 'variadic') for (const a of args.slice(1)) c = `${m.c}(${c}, ${a})`;
      else c = `${m.c}(${args.join(', ')})`;
      return { c: ordered.wrap(c), t: m.result === 'i32' ? I32 : F64 };
    }
    if (o.t.k === 'ctx') {
      if (callee.name === 'now' && e.args.length === 0) return { c: 't->now', t: F64 };
      if (callee.name === 'send' || callee.name === 'forward') {
        return unsupported(
          site,
          e.loc,
          `ctx.${callee.name} inside an expression`,
          callee.name === 'send' ? 'call ctx.send(...) as its own statement' : 'write `return ctx.forward(...)`',
        );
      }
      if (
        callee.name === 'startTimer' ||
        callee.name === 'stopTimer' ||
        callee.name === 'setReminder' ||
        callee.name === 'clearReminder'
      ) {
        throw new CodegenError(
          'CODEGEN_TIMER',
          `ctx.${callee.name}`,
          `ctx.${callee.name} inside an expression (it returns nothing)`,
          siteAt(site, e.loc),
          `call ctx.${callee.name}(...) as its own statement`,
        );
      }
      return unsupported(
        site,
        e.loc,
        `ctx.${callee.name}(...)`,
        'ctx offers key, now(), send(...), forward(...), startTimer(...), stopTimer(...), setReminder(...) and ' +
          'clearReminder(...)',
      );
    }
    return unsupported(
      site,
      e.loc,
      `method call .${callee.name}(...)`,
      'only Math functions, ctx.send/forward/now and module-level helper functions can be called',
    );
  }
  if (callee.kind === 'ident' && !fn.lookup(callee.name) && !fn.roles.has(callee.name)) {
    const h = fn.unit.helper(callee.name, e.loc, fn.site);
    if (h) {
      if (h.params.length !== e.args.length) {
        typeError(
          site,
          e.loc,
          `call of ${callee.name}`,
          `${callee.name} takes ${h.params.length} argument(s), got ${e.args.length}`,
          'pass every argument',
        );
      }
      const ordered = inOrder(fn, e.args);
      const args = e.args.map((a, i) => {
        const v = ordered.vals[i] as Val;
        return h.params[i] === 'boolean'
          ? needBool(site, a.loc, v, `argument ${i + 1} of ${callee.name}`)
          : asDouble(site, a.loc, v, `argument ${i + 1} of ${callee.name}`);
      });
      fn.mayFail = true;
      const t: VT = h.returns === 'number' ? F64 : h.returns === 'boolean' ? BOOL : { k: 'void' };
      return { c: ordered.wrap(`${h.cname}(${['t', ...args].join(', ')})`), t };
    }
  }
  return unsupported(
    site,
    e.loc,
    `call of ${callee.kind === 'ident' ? callee.name : 'an expression'}`,
    'only Math functions, ctx.send/forward/now and module-level `function` helpers of the same module can be called',
  );
}

export function isNumericSchema(s: Schema): boolean {
  return isNumericScalar(s);
}
