/**
 * Statements of handlers and helpers into C: locals, assignments, control flow, returns and replies, throws,
 * and the ctx calls made as statements (ctx.send in lower-send.ts, timers and reminders in timers.ts and
 * reminders.ts). A handler's `for` loop may run on the warp's lanes (lower-parallel.ts).
 */
import { HOOK_METHOD, HOOK_NAMES, describeSchema } from '@ringgrain/core/backend';
import type { BinaryOp, Expr, Loc, Stmt } from '../front/ast.ts';
import { unsupported } from '../front/parse.ts';
import { indent } from './codecs.ts';
import { C_SCALAR } from './ctypes.ts';
import { binary, lowerExpr } from './lower-expr.ts';
import { fillStruct } from './lower-fill.ts';
import { forLoop, noteLoop } from './lower-parallel.ts';
import { k2k } from './lower-send.ts';
import { lowerReminderCall } from './reminders.ts';
import type { FnScope } from './scope.ts';
import { lowerTimerCall } from './timers.ts';
import {
  BOOL,
  F64,
  I32,
  asDouble,
  describeVT,
  needBool,
  paren,
  storeAs,
  typeError,
  type VT,
  type Val,
} from './values.ts';

type StmtOf<K extends Stmt['kind']> = Extract<Stmt, { kind: K }>;
type StmtTable = { readonly [K in Stmt['kind']]: (s: StmtOf<K>, fn: FnScope) => string };

/** Lowers a statement; appends the turn-abort check when something in it can fail. */
export function lowerStmt(s: Stmt, fn: FnScope): string {
  fn.mayFail = false;
  const c = (STMT[s.kind] as (s: Stmt, fn: FnScope) => string)(s, fn);
  if (
    fn.mayFail &&
    s.kind !== 'if' &&
    s.kind !== 'for' &&
    s.kind !== 'while' &&
    s.kind !== 'block' &&
    s.kind !== 'return'
  ) {
    fn.mayFail = false;
    return `${c}\n${fn.check()}`;
  }
  fn.mayFail = false;
  return c;
}

export function lowerBlock(body: readonly Stmt[], fn: FnScope): string {
  fn.push();
  const out = body.map((s) => lowerStmt(s, fn)).join('\n');
  fn.pop();
  return out;
}

/** Evaluates a condition; when it can fail, into a temporary checked before use. */
function condition(e: Expr, fn: FnScope, what: string): { pre: string; c: string } {
  fn.mayFail = false;
  const c = needBool(fn.site, e.loc, lowerExpr(e, fn), what);
  if (!fn.mayFail) return { pre: '', c };
  fn.mayFail = false;
  const tmp = fn.temp('c');
  return { pre: `const bool ${tmp} = ${c};\n${fn.check()}\n`, c: tmp };
}

const COMPOUND: Record<string, BinaryOp> = {
  '+=': '+',
  '-=': '-',
  '*=': '*',
  '/=': '/',
  '%=': '%',
  '|=': '|',
  '&=': '&',
  '^=': '^',
  '<<=': '<<',
  '>>=': '>>',
  '>>>=': '>>>',
};

function assign(fn: FnScope, loc: Loc, target: Expr, op: BinaryOp | undefined, value: (cur: Val) => Val): string {
  if (target.kind === 'ident' && fn.roles.has(target.name))
    unsupported(fn.site, loc, `assignment to parameter ${target.name}`, 'assign to its fields instead');
  const lhs = lowerExpr(target, fn);
  if (!lhs.lv) {
    if (target.kind === 'ident' && fn.lookup(target.name)?.constant)
      unsupported(fn.site, loc, `assignment to const ${target.name}`, 'declare it with let');
    unsupported(
      fn.site,
      loc,
      `assignment to ${describeVT(lhs.t)}`,
      'assign to let locals and to number/boolean fields and elements; whole structs and arrays are assigned ' +
        'field by field',
    );
  }
  const lhsFails = fn.mayFail;
  const kind = lhs.t.k === 'bool' ? 'bool' : lhs.t.k === 'num' ? lhs.t.n : undefined;
  if (!kind) return unsupported(fn.site, loc, 'assignment', 'assign numbers or booleans');
  // A let local (a field reached through a const struct local, v_p->f, is a field store below).
  const local = target.kind === 'ident';
  if (local) {
    const v = value(lhs);
    // A `let` holds a JS number as a double (or a boolean).
    const rhs =
      kind === 'bool' ? needBool(fn.site, loc, v, 'assignment to a boolean local') : storeAs(fn.site, loc, kind, v);
    return `${lhs.c} = ${rhs};`;
  }
  if (!lhsFails) {
    fn.mayFail = false;
    const v = storeAs(fn.site, loc, kind, value(lhs));
    if (!fn.mayFail) return `${lhs.c} = ${v};`;
    const tmp = fn.temp('v');
    return `{\n  const ${C_SCALAR[kind]} ${tmp} = ${v};\n  if (!t->err) ${lhs.c} = ${tmp};\n}`;
  }
  // The target's index can fail: take its address first, store only if nothing failed.
  const p = fn.temp('p');
  const cur: Val = { c: `(*${p})`, t: lhs.t };
  const v = storeAs(fn.site, loc, kind, value(cur));
  const tmp = fn.temp('v');
  fn.mayFail = true;
  return (
    `{\n  ${C_SCALAR[kind]}* ${p} = &${lhs.c};\n  const ${C_SCALAR[kind]} ${tmp} = ${v};\n` +
    `  if (!t->err) *${p} = ${tmp};\n}`
  );
}

const STMT: StmtTable = {
  let: (s, fn) => {
    if (fn.roles.has(s.name)) unsupported(fn.site, s.loc, `redeclaration of ${s.name}`, 'pick another name');
    const v = lowerExpr(s.init, fn);
    const cname = `v_${s.name}`;
    let t: VT;
    let ctype: string;
    let init: string;
    if (v.t.k === 'bool') {
      t = BOOL;
      ctype = 'bool';
      init = v.c;
    } else if (v.t.k === 'num') {
      // A const keeps its initializer's C type; a let holds any JS number, so it is a double.
      t = s.constant ? v.t : F64;
      ctype = C_SCALAR[t.k === 'num' ? t.n : 'f64'];
      init = s.constant ? v.c : asDouble(fn.site, s.loc, v);
    } else if (v.t.k === 'struct' && s.constant) {
      // `const p = m.pts[i]` names a struct (a live state view or a decoded message struct): a C pointer
      // to it, so reads and writes through p reach the same bytes as in JS. The index is taken once.
      const ctype = fn.unit.types.nameOf(v.t.s) ?? fn.unit.types.named(v.t.s, `rg_${fn.grain.name}_${s.name}`);
      fn.declare(s.name, { cname: `(*${cname})`, t: v.t, constant: true });
      return `${ctype}* const ${cname} = &${paren(v.c)};`;
    } else {
      return unsupported(
        fn.site,
        s.loc,
        `local holding ${describeVT(v.t)}`,
        v.t.k === 'struct'
          ? 'declare it with const: a const local names the struct (const p = m.pts[i]); let locals hold numbers ' +
              'or booleans'
          : 'locals hold numbers or booleans, and const locals may name a struct; read arrays through their full path',
      );
    }
    fn.declare(s.name, { cname, t, constant: s.constant });
    return `${s.constant ? 'const ' : ''}${ctype} ${cname} = ${init};`;
  },
  assign: (s, fn) => {
    if (s.value.kind === 'array') arrayToState(fn, s);
    const op = s.op === '=' ? undefined : COMPOUND[s.op];
    return assign(fn, s.loc, s.target, op, (cur) => {
      const r = lowerExpr(s.value, fn);
      if (op && s.target.kind === 'ident') fn.lookup(s.target.name)?.onTerm?.(r.t);
      return op ? binary(fn, s.loc, op, cur, r) : r;
    });
  },
  update: (s, fn) =>
    assign(fn, s.loc, s.target, s.op === '++' ? '+' : '-', (cur) =>
      binary(fn, s.loc, s.op === '++' ? '+' : '-', cur, { c: '1', t: I32, lit: 1 }),
    ),
  expr: (s, fn) => {
    const e = s.expr;
    if (
      e.kind === 'call' &&
      e.callee.kind === 'member' &&
      e.callee.object.kind === 'ident' &&
      fn.roles.get(e.callee.object.name) === 'ctx'
    ) {
      if (e.callee.name === 'send') return k2k(fn, e, false);
      if (e.callee.name === 'startTimer' || e.callee.name === 'stopTimer') return lowerTimerCall(fn, e, e.callee.name);
      if (e.callee.name === 'setReminder' || e.callee.name === 'clearReminder')
        return lowerReminderCall(fn, e, e.callee.name);
      if (e.callee.name === 'forward')
        unsupported(
          fn.site,
          e.loc,
          'ctx.forward without return',
          'write `return ctx.forward(...)`: the reply obligation moves on',
        );
    }
    if (e.kind === 'call') {
      const v = lowerExpr(e, fn);
      return `${v.t.k === 'void' ? '' : '(void)'}${v.c};`;
    }
    return unsupported(fn.site, s.loc, 'expression statement without effect', 'remove it, or assign its value');
  },
  if: (s, fn) => {
    const { pre, c } = condition(s.test, fn, 'if condition');
    const then = lowerBlock(s.then, fn);
    const otherwise = s.otherwise ? lowerBlock(s.otherwise, fn) : undefined;
    const out =
      `${pre}if (${c}) {\n${indent(then, 2)}\n` +
      `}${otherwise !== undefined ? ` else {\n${indent(otherwise, 2)}\n}` : ''}`;
    return pre ? `{\n${indent(out, 2)}\n}` : out;
  },
  for: (s, fn) => {
    const sequential = lowerFor(s, fn);
    return fn.method ? forLoop(s, fn, sequential, lowerBlock) : sequential;
  },
  while: (s, fn) => {
    if (fn.method && fn.loops === 0)
      noteLoop(fn, s, false, 'a while loop (only `for (let i = a; i < b; i++)` loops run on the warp)');
    return lowerWhile(s, fn);
  },
  return: (s, fn) => (fn.method ? handlerReturn(s, fn) : helperReturn(s, fn)),
  // The turn ends with the constant message; state written before the throw stays, as in JS. A helper
  // may run after an earlier failure of the same expression (JS would have stopped there: the right of
  // `a(x) || b(y)` once a threw), so its throw leaves the first error in place; in a handler t->err is
  // always clear between statements.
  throw: (s, fn) => {
    const set = `t->msg = ${cString(s.message)};\nt->err = RG_E_THROW;`;
    return `${fn.method ? set : `if (!t->err) {\n${indent(set, 2)}\n}`}\n${fn.abort}`;
  },
  break: () => 'break;',
  continue: () => 'continue;',
  block: (s, fn) => `{\n${indent(lowerBlock(s.body, fn), 2)}\n}`,
};

function lowerFor(s: StmtOf<'for'>, fn: FnScope): string {
  fn.push();
  const init = s.init ? lowerStmt(s.init, fn) : '';
  let update = '';
  if (s.update) {
    const u = s.update;
    const target = u.kind === 'assign' || u.kind === 'update' ? u.target : undefined;
    if (!target || target.kind !== 'ident' || !fn.lookup(target.name)) {
      unsupported(
        fn.site,
        u.loc,
        'for update other than a local',
        'update a let local in the header (i++, i += 2); move other updates into the body',
      );
    }
    update = lowerStmt(u, fn);
    if (update.includes('\n'))
      unsupported(fn.site, u.loc, 'for update that can fail', 'move the update into the loop body');
    update = update.replace(/;$/, '');
  }
  fn.loops++;
  const test = s.test ? condition(s.test, fn, 'for condition') : { pre: '', c: '' };
  const body = lowerBlock(s.body, fn);
  fn.loops--;
  fn.pop();
  const head = test.pre ? `for (;; ${update})` : `for (; ${test.c}; ${update})`;
  const guard = test.pre ? `${test.pre}if (!${test.c}) break;\n` : '';
  const loop = `${head} {\n${indent(`${guard}${fn.budget()}\n${body}`, 2)}\n}`;
  return init ? `{\n${indent(`${init}\n${loop}`, 2)}\n}` : loop;
}

function lowerWhile(s: StmtOf<'while'>, fn: FnScope): string {
  fn.loops++;
  const test = condition(s.test, fn, 'while condition');
  const body = lowerBlock(s.body, fn);
  fn.loops--;
  if (s.doWhile) {
    if (test.pre)
      unsupported(
        fn.site,
        s.test.loc,
        'do..while condition that can fail',
        'use while (true) with an if (...) break at the end of the body',
      );
    return `do {\n${indent(`${fn.budget()}\n${body}`, 2)}\n} while (${test.c});`;
  }
  if (test.pre) return `for (;;) {\n${indent(`${test.pre}if (!${test.c}) break;\n${fn.budget()}\n${body}`, 2)}\n}`;
  return `while (${test.c}) {\n${indent(`${fn.budget()}\n${body}`, 2)}\n}`;
}

/**
 * `s.xs = [a, b]` throws in JS (state arrays are getter-only live views, TypeError on the CPU backend),
 * so it is rejected rather than translated into stores that would succeed on the GPU only.
 */
function arrayToState(fn: FnScope, s: StmtOf<'assign'>): void {
  const lhs = lowerExpr(s.target, fn);
  fn.mayFail = false;
  if ((lhs.t.k === 'array' || lhs.t.k === 'vec' || lhs.t.k === 'items') && lhs.t.origin === 'state') {
    unsupported(
      fn.site,
      s.loc,
      'assignment of an array literal to a state array',
      'state arrays are live views without a setter in JS (the CPU backend throws TypeError: "Cannot set ' +
        'property … which has only a getter"); store the elements one by one: s.xs[0] = a; s.xs[1] = b (a t.vec: ' +
        's.v.items[i] = a; then s.v.length = n)',
    );
  }
}

/** A C string literal of the UTF-8 bytes of `text`: printable ASCII as is, everything else as octal escapes. */
export function cString(text: string): string {
  let out = '"';
  for (const b of new TextEncoder().encode(text)) {
    if (b === 0x22 || b === 0x5c || b === 0x3f) out += `\\${String.fromCharCode(b)}`;
    else if (b >= 0x20 && b < 0x7f) out += String.fromCharCode(b);
    else out += `\\${b.toString(8).padStart(3, '0')}`;
  }
  return `${out}"`;
}

function helperReturn(s: StmtOf<'return'>, fn: FnScope): string {
  if (fn.helperReturns === 'void') {
    if (s.value)
      unsupported(fn.site, s.loc, 'return value from a void helper', 'declare the return type: number or boolean');
    return 'return;';
  }
  if (!s.value) unsupported(fn.site, s.loc, 'return without a value', `return a ${fn.helperReturns}`);
  fn.mayFail = false;
  const v = lowerExpr(s.value, fn);
  const c =
    fn.helperReturns === 'boolean'
      ? needBool(fn.site, s.loc, v, 'return value')
      : asDouble(fn.site, s.loc, v, 'return value');
  if (!fn.mayFail) return `return ${c};`;
  const tmp = fn.temp('r');
  return (
    `{\n  const ${fn.helperReturns === 'boolean' ? 'bool' : 'double'} ${tmp} = ${c};\n  ${fn.check()}\n` +
    `  return ${tmp};\n}`
  );
}

function handlerReturn(s: StmtOf<'return'>, fn: FnScope): string {
  const method = fn.method;
  if (!method) throw new Error('handlerReturn outside a handler');
  const v = s.value;
  if (
    v &&
    v.kind === 'call' &&
    v.callee.kind === 'member' &&
    v.callee.name === 'forward' &&
    v.callee.object.kind === 'ident' &&
    fn.roles.get(v.callee.object.name) === 'ctx'
  ) {
    if (HOOK_NAMES.includes(method.name) && method.id >= HOOK_METHOD.onActivate)
      unsupported(
        fn.site,
        v.loc,
        'ctx.forward in an activation hook',
        `${fn.grain.name}.${method.name} has no message to forward: send one with ctx.send`,
      );
    return `${k2k(fn, v, true)}\n${fn.check()}\nreturn RG_FORWARDED;`;
  }
  if (!method.reply) {
    if (v)
      unsupported(
        fn.site,
        s.loc,
        'return value from a method without a reply schema',
        `${fn.grain.name}.${method.name} is a tell: write \`return;\`, or declare a reply schema`,
      );
    return 'return RG_OK;';
  }
  if (!v)
    typeError(
      fn.site,
      s.loc,
      'return without a reply',
      `${fn.grain.name}.${method.name} must reply ${describeSchema(method.reply)}`,
      'return an object literal with every reply field',
    );
  if (v.kind !== 'object') {
    unsupported(
      fn.site,
      v.loc,
      'reply that is not an object literal',
      `write the reply out: return { ${method.reply.fieldNames.map((f) => `${f}: ...`).join(', ')} }`,
    );
  }
  fn.mayFail = false;
  const fill = fillStruct(fn, v, method.reply, '(*r)', 'reply');
  // An out-of-range field fails once every field was evaluated (JS builds the object, then the host encodes it).
  if (fill.includes('rg_chk_'))
    return `{\n${indent(
      `bool rg_mis = false;\n${fill}\nif (rg_mis && !t->err) t->err = RG_E_REPLY_MISMATCH;\n` +
        `${fn.check()}\nreturn RG_OK;`,
      2,
    )}\n}`;
  return fn.mayFail ? `${fill}\n${fn.check()}\nreturn RG_OK;` : `${fill}\nreturn RG_OK;`;
}
