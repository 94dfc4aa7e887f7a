import { lowerTimerCall } from './timers.ts';
import { lowerReminderCall } from './reminders.ts';
import { HOOK_METHOD, HOOK_NAMES, describeSchema, type Schema, type StructSchema } from '@ringgrain/core/backend';
import type { BinaryOp, Expr, Loc, Stmt } from '../front/ast.ts';
import { indent } from './codecs.ts';
import { CodegenError } from '../front/errors.ts';
import { binary, lowerExpr } from './lower-expr.ts';
import { siteAt, unsupported } from '../front/parse.ts';
import { FnScope, type Local } from './scope.ts';
import { COOP_ENV_BYTES } from './abi.ts';
import { ARITH } from './kind-arith.ts';
import { planParallel, type ParallelPlan } from '../front/parallel.ts';
import { C_SCALAR, cMember } from './ctypes.ts';
import { BOOL, F64, I32, asDouble, describeVT, encodeAs, needBool, paren, storeAs, typeError, type VT, type Val } from './values.ts';

type StmtOf<K extends Stmt['kind']> = Extract<Stmt, { kind: K }>;
type StmtTable = { readonly [K in Stmt['kind']]: (s: StmtOf<K>, fn: FnScope) => string };

/** Lowers a statement; appends the turn-abort check when something in it can fail. */
export function lowerStmt(s: Stmt, fn: FnScope): string {
  fn.mayFail = false;
  const c = (STMT[s.kind] as (s: Stmt, fn: FnScope) => string)(s, fn);
  if (fn.mayFail && s.kind !== 'if' && s.kind !== 'for' && s.kind !== 'while' && s.kind !== 'block' && s.kind !== 'return') {
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

const COMPOUND: Record<string, BinaryOp> = { '+=': '+', '-=': '-', '*=': '*', '/=': '/', '%=': '%', '|=': '|', '&=': '&', '^=': '^', '<<=': '<<', '>>=': '>>', '>>>=': '>>>' };

function assign(fn: FnScope, loc: Loc, target: Expr, op: BinaryOp | undefined, value: (cur: Val) => Val): string {
  if (target.kind === 'ident' && fn.roles.has(target.name)) unsupported(fn.site, loc, `assignment to parameter ${target.name}`, 'assign to its fields instead');
  const lhs = lowerExpr(target, fn);
  if (!lhs.lv) {
    if (target.kind === 'ident' && fn.lookup(target.name)?.constant) unsupported(fn.site, loc, `assignment to const ${target.name}`, 'declare it with let');
    unsupported(fn.site, loc, `assignment to ${describeVT(lhs.t)}`, 'assign to let locals and to number/boolean fields and elements; whole structs and arrays are assigned field by field');
  }
  const lhsFails = fn.mayFail;
  const kind = lhs.t.k === 'bool' ? 'bool' : lhs.t.k === 'num' ? lhs.t.n : undefined;
  if (!kind) return unsupported(fn.site, loc, 'assignment', 'assign numbers or booleans');
  // A let local (a field reached through a const struct local, v_p->f, is a field store below).
  const local = target.kind === 'ident';
  if (local) {
    const v = value(lhs);
    // A `let` holds a JS number as a double (or a boolean).
    return `${lhs.c} = ${kind === 'bool' ? needBool(fn.site, loc, v, 'assignment to a boolean local') : storeAs(fn.site, loc, kind, v)};`;
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
  return `{\n  ${C_SCALAR[kind]}* ${p} = &${lhs.c};\n  const ${C_SCALAR[kind]} ${tmp} = ${v};\n  if (!t->err) *${p} = ${tmp};\n}`;
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
        v.t.k === 'struct' ? 'declare it with const: a const local names the struct (const p = m.pts[i]); let locals hold numbers or booleans' : 'locals hold numbers or booleans, and const locals may name a struct; read arrays through their full path',
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
    assign(fn, s.loc, s.target, s.op === '++' ? '+' : '-', (cur) => binary(fn, s.loc, s.op === '++' ? '+' : '-', cur, { c: '1', t: I32, lit: 1 })),
  expr: (s, fn) => {
    const e = s.expr;
    if (e.kind === 'call' && e.callee.kind === 'member' && e.callee.object.kind === 'ident' && fn.roles.get(e.callee.object.name) === 'ctx') {
      if (e.callee.name === 'send') return k2k(fn, e, false);
      if (e.callee.name === 'startTimer' || e.callee.name === 'stopTimer') return lowerTimerCall(fn, e, e.callee.name);
      if (e.callee.name === 'setReminder' || e.callee.name === 'clearReminder') return lowerReminderCall(fn, e, e.callee.name);
      if (e.callee.name === 'forward') unsupported(fn.site, e.loc, 'ctx.forward without return', 'write `return ctx.forward(...)`: the reply obligation moves on');
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
    const out = `${pre}if (${c}) {\n${indent(then, 2)}\n}${otherwise !== undefined ? ` else {\n${indent(otherwise, 2)}\n}` : ''}`;
    return pre ? `{\n${indent(out, 2)}\n}` : out;
  },
  for: (s, fn) => {
    const sequential = lowerFor(s, fn);
    if (!fn.method) return sequential;
    const plan = planParallel(s, fn, (COOP_ENV_BYTES - 16) / 8);
    if (plan.ok) {
      const out = parallelFor(s, fn, plan, sequential);
      if (typeof out === 'string') return out;
      noteLoop(fn, s, false, out.why);
      return sequential;
    }
    noteLoop(fn, s, false, plan.why);
    return sequential;
  },
  while: (s, fn) => {
    if (fn.method && fn.loops === 0) noteLoop(fn, s, false, 'a while loop (only `for (let i = a; i < b; i++)` loops run on the warp)');
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
      unsupported(fn.site, u.loc, 'for update other than a local', 'update a let local in the header (i++, i += 2); move other updates into the body');
    }
    update = lowerStmt(u, fn);
    if (update.includes('\n')) unsupported(fn.site, u.loc, 'for update that can fail', 'move the update into the loop body');
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
    if (test.pre) unsupported(fn.site, s.test.loc, 'do..while condition that can fail', 'use while (true) with an if (...) break at the end of the body');
    return `do {\n${indent(`${fn.budget()}\n${body}`, 2)}\n} while (${test.c});`;
  }
  if (test.pre) return `for (;;) {\n${indent(`${test.pre}if (!${test.c}) break;\n${fn.budget()}\n${body}`, 2)}\n}`;
  return `while (${test.c}) {\n${indent(`${fn.budget()}\n${body}`, 2)}\n}`;
}

function noteLoop(fn: FnScope, s: Stmt, parallel: boolean, why: string): void {
  if (!fn.method || fn.loops > 0) return;
  const at = siteAt(fn.site, s.loc);
  fn.unit.loopNote({ grain: fn.grain.name, method: fn.method.name, line: at.line, column: at.column, parallel, why });
}

/**
 * A loop planParallel accepted: its body becomes a function of (turn, captured values, i) that the warp's
 * lanes run for interleaved iterations (device.ts rg_coop_loop) when the turn is alone on its warp, the
 * start is an integer and the iterations fit the turn's budget; otherwise the sequential loop runs, the
 * same as without this. The bounds are evaluated once: the plan checked that nothing in the body changes them.
 */
function parallelFor(s: StmtOf<'for'>, fn: FnScope, plan: ParallelPlan<Local>, sequential: string): string | { why: string } {
  const method = fn.method;
  const types = fn.handlerTypes;
  if (!method || !types) return { why: 'not a handler' };
  fn.mayFail = false;
  const loV = lowerExpr(plan.lo, fn);
  const lo = asDouble(fn.site, s.loc, loV, 'loop start');
  // JS's first i is the start itself, -0 included (then `i * k`, `1 / i` see its sign); the lanes compute
  // start + k, +0 for k = 0. A start that may be -0 (a floating-point value) runs the lanes only when it is not.
  const loMayBeNegZero = loV.t.k !== 'num' || (ARITH[loV.t.n].held !== 'int' && ARITH[loV.t.n].held !== 'unsigned');
  const hi = asDouble(fn.site, s.loc, lowerExpr(plan.hi, fn), 'loop end');
  if (fn.mayFail) {
    fn.mayFail = false;
    return { why: 'its start or end can fail (an index or a checked conversion)' };
  }
  const inner = new FnScope(fn.unit, fn.site, fn.grain, method, fn.roles, 'return;', undefined);
  inner.handlerTypes = types;
  inner.loops = 1;
  const captures = plan.captures.map(({ name, local }) => {
    const ctype = local.t.k === 'bool' ? 'bool' : local.t.k === 'num' ? C_SCALAR[local.t.n] : undefined;
    if (!ctype) throw new Error(`parallel loop: capture ${name} is not a number or boolean`);
    inner.declare(name, { cname: local.cname, t: local.t, constant: true });
    return { cname: local.cname, ctype };
  });
  // Each lane reduces into its own partials red[j] (doubles, as the handler's let locals are); a sum must
  // add integers only, which any order adds exactly (checked on the terms' types as the body is lowered).
  let inexact: string | undefined;
  plan.reductions.forEach((r, j) =>
    inner.declare(r.name, {
      cname: `red[${j}]`,
      t: F64,
      constant: false,
      onTerm: (t) => {
        if (t.k !== 'num' || (ARITH[t.n].held !== 'int' && ARITH[t.n].held !== 'unsigned')) inexact ??= r.name;
      },
    }),
  );
  inner.declare(plan.v, { cname: `v_${plan.v}`, t: F64, constant: false });
  const bounds = new Set<string>();
  // The same iteration as an unsigned int: indices the compiler can tell apart (lane k's loads of iteration
  // i + 32 may then be issued before its stores of iteration i).
  inner.provenIndex = { cname: `v_${plan.v}`, index: `u_${plan.v}`, bounds };
  const body = lowerBlock(s.body, inner);
  if (inexact !== undefined) {
    return { why: `it sums into ${inexact} values that are not integers: another order would round differently (an integer sum is exact in any order, so it would run on the lanes)` };
  }
  const mayFail = body.includes('t->err');
  if (plan.writesState && mayFail) {
    return { why: "it stores into state and an iteration can fail (lanes would leave later iterations' stores, which JS never makes)" };
  }
  const fields = [`${types.state}* s;`, `${types.req}* m;`, ...captures.map((c) => `${c.ctype} ${c.cname};`)];
  const unpack = [...captures.map((c) => `const ${c.ctype} ${c.cname} = e->${c.cname};`), '(void)t; (void)e; (void)s; (void)m;'];
  const kinds = plan.reductions.map((r) => r.kind);
  const loop = fn.unit.parallelLoop(method.name, (n) => ({
    bulk: !mayFail && kinds.length === 0,
    c: [
      `struct ${n.env} {\n${indent(fields.join('\n'), 2)}\n};`,
      `/* ${fn.grain.name}.${method.name}: the body of the loop at line ${s.loc.line}, one iteration (element-parallel) */`,
      `RG_HD static void ${n.body}(rg_turn* t, const ${n.env}* e, ${types.state}* s, ${types.req}* m, double* red, double v_${plan.v}, unsigned int u_${plan.v}) {`,
      indent(`${unpack.join('\n')}\n(void)red; (void)v_${plan.v}; (void)u_${plan.v};\n${body}`, 2),
      '}',
      '#if defined(__CUDACC__) || defined(RG_HOST_COOP)',
      `static_assert(sizeof(${n.env}) <= RG_COOP_ENV_BYTES, "element-parallel loop: captured values fit rg_coop.env (parallel.ts checks)");`,
      laneRunner(n, kinds, mayFail),
      '#endif',
    ].join('\n'),
  }));
  const reduces = plan.reductions.map((r) => `${r.name} (${r.kind})`).join(', ');
  noteLoop(
    fn,
    s,
    true,
    `each iteration stores only into element ${plan.v} of what it stores into and reads nothing another iteration stores` +
      (reduces ? `; it reduces ${reduces} on the lanes, exactly (integer sums, min, max)` : '') +
      ": it runs on the warp's 32 lanes when the turn is alone on its warp",
  );
  const lo0 = fn.temp('lo');
  const hi0 = fn.temp('hi');
  const e = fn.temp('e');
  const fill = [`${e}->s = s;`, `${e}->m = m;`, ...captures.map((c) => `${e}->${c.cname} = ${c.cname};`)];
  // An integer sum is exact in any order while every partial sum stays within 2^53: the start within 2^52
  // and at most 2^20 terms of at most 2^32 each.
  const exact = plan.reductions
    .filter((r) => r.kind === 'sum')
    .map((r) => ` && ${r.local.cname} == trunc(${r.local.cname}) && fabs(${r.local.cname}) <= 4503599627370496.0 && ${hi0} - ${lo0} <= 1048576.0`)
    .join('');
  const cond =
    `t->co && ${lo0} == trunc(${lo0})${loMayBeNegZero ? ` && !rg_signbit(${lo0})` : ''} && ${lo0} >= -2147483648.0 && ${hi0} <= 2147483648.0 && ` +
    `${hi0} - ${lo0} >= (double)RG_COOP_MIN_ITERS && ceil(${hi0} - ${lo0}) <= (double)(t->budget - t->iters)` +
    (bounds.size ? ` && ${lo0} >= 0.0${[...bounds].map((b) => ` && ${hi0} <= (double)(${b})`).join('')}` : '') +
    exact;
  const combine = (k: string, a: string, b: string) => (k === 'sum' ? `RG_ADD(${a}, ${b})` : `rg_${k}(${a}, ${b})`);
  const coop = [
    `${loop.env}* ${e} = (${loop.env}*)t->co->env;`,
    ...fill,
    `rg_coop_loop(t, ${loop.id}u, ${lo0}, (unsigned int)ceil(${hi0} - ${lo0}));`,
    fn.check(),
    ...plan.reductions.map((r, j) => `${r.local.cname} = ${combine(r.kind, r.local.cname, `t->co->red[${j}]`)};`),
  ];
  const out = [
    `const double ${lo0} = ${lo};`,
    `const double ${hi0} = ${hi};`,
    `(void)${lo0}; (void)${hi0};`,
    '#if defined(__CUDA_ARCH__) || defined(RG_HOST_COOP)',
    `if (${cond}) {\n${indent(coop.join('\n'), 2)}\n} else`,
    '#endif',
    `{\n${indent(sequential, 2)}\n}`,
  ];
  return `{\n${indent(out.join('\n'), 2)}\n}`;
}

/**
 * One lane's share of a parallel loop (called from rg_coop_run): iterations lane, lane + 32, … in order
 * with its own partial reductions; then the warp combines the partials and agrees on the first failure in
 * JS order and on the iterations run. A body that cannot fail runs four iterations a step (their indices
 * differ, so the compiler may overlap their loads).
 */
function laneRunner(n: { env: string; body: string; runner: string; chunk: string }, kinds: readonly ('sum' | 'min' | 'max')[], mayFail: boolean): string {
  const R = kinds.length;
  if (!mayFail && R === 0) return chunkRunner(n);
  // A sum's partials start at -0, the identity of IEEE addition (-0 + x is x for every x, +0 included): a
  // start of -0 that the iterations leave at -0 in JS (nothing added, or only `-= 0`) stays -0.
  const init = kinds.map((k) => (k === 'sum' ? '-0.0' : k === 'min' ? 'rg_inf()' : '-rg_inf()'));
  const call = (k: string) => `${n.body}(&lt, e_, e_->s, e_->m, ${R ? 'red' : '(double*)0'}, lo_ + (double)(${k}), ulo + ${k});`;
  const loop = mayFail
    ? [
        'unsigned int fail = 0xffffffffu;',
        `for (unsigned int k = lane; k < n_; k += 32u) {\n  lt.iters++;\n  ${call('k')}\n  if (lt.err) { fail = k; break; }\n}`,
        'unsigned int first = fail, iters = lt.iters;',
        'for (unsigned int o = 16u; o != 0u; o >>= 1) {\n  first = min(first, __shfl_xor_sync(0xffffffffu, first, o));\n  iters += __shfl_xor_sync(0xffffffffu, iters, o);\n}',
        'if (first != 0xffffffffu && fail == first) { co->err = lt.err; co->msg = lt.msg; }',
        'if (lane == 0u) { co->failAt = first; co->iters = iters; }',
      ]
    : [
        'unsigned int k = lane;',
        `for (; k + 96u < n_; k += 128u) {\n  ${call('k')}\n  ${call('(k + 32u)')}\n  ${call('(k + 64u)')}\n  ${call('(k + 96u)')}\n}`,
        `for (; k < n_; k += 32u) ${call('k')}`,
        'if (lane == 0u) { co->failAt = 0xffffffffu; co->iters = n_; }',
      ];
  const reduce = kinds.map((k, j) => {
    const x = `__shfl_xor_sync(0xffffffffu, red[${j}], o)`;
    const c = k === 'sum' ? `RG_ADD(red[${j}], ${x})` : `rg_${k}(red[${j}], ${x})`;
    return `for (unsigned int o = 16u; o != 0u; o >>= 1) red[${j}] = ${c};\nif (lane == 0u) co->red[${j}] = red[${j}];`;
  });
  const body = [
    'rg_turn lt = co->turn;',
    `const ${n.env}* e_ = (const ${n.env}*)co->env;`,
    'const unsigned int n_ = co->n;',
    'const double lo_ = co->lo;',
    'const unsigned int ulo = lo_ >= 0.0 ? (unsigned int)lo_ : 0u;',
    ...(R ? [`double red[${R}] = {${init.join(', ')}};`] : []),
    ...loop,
    ...reduce,
  ];
  return `__device__ static void ${n.runner}(rg_coop* co, unsigned int lane) {\n${indent(body.join('\n'), 2)}\n}`;
}

/**
 * A loop that cannot fail and reduces nothing: its iterations [from, to) on one warp's lanes (iteration k
 * on lane k % 32), from the job's image alone, so that any warp of the kernel can run a range of it: the
 * posting warp's lanes (the whole range, from rg_coop_run) or an idle worker warp (a chunk of a bulk job,
 * device.ts rg_bulk_*; rg_coop_chunk is the switch). Nothing to agree on afterwards: lane 0 of the posting
 * warp reports no failure and every iteration run.
 */
function chunkRunner(n: { env: string; body: string; runner: string; chunk: string }): string {
  const call = (k: string) => `${n.body}(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)(${k}), ulo + ${k});`;
  const body = [
    'rg_turn lt = co->turn;',
    `const ${n.env}* e_ = (const ${n.env}*)co->env;`,
    'const double lo_ = co->lo;',
    'const unsigned int ulo = lo_ >= 0.0 ? (unsigned int)lo_ : 0u;',
    'unsigned int k = from + lane;',
    `for (; k + 96u < to; k += 128u) {\n  ${call('k')}\n  ${call('(k + 32u)')}\n  ${call('(k + 64u)')}\n  ${call('(k + 96u)')}\n}`,
    `for (; k < to; k += 32u) ${call('k')}`,
  ];
  return [
    `__device__ static void ${n.chunk}(const rg_coop* co, unsigned int lane, unsigned int from, unsigned int to) {\n${indent(body.join('\n'), 2)}\n}`,
    `__device__ static void ${n.runner}(rg_coop* co, unsigned int lane) {\n  ${n.chunk}(co, lane, 0u, co->n);\n  if (lane == 0u) { co->failAt = 0xffffffffu; co->iters = co->n; }\n}`,
  ].join('\n');
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
      'state arrays are live views without a setter in JS (the CPU backend throws TypeError: "Cannot set property … which has only a getter"); store the elements one by one: s.xs[0] = a; s.xs[1] = b (a t.vec: s.v.items[i] = a; then s.v.length = n)',
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
    if (s.value) unsupported(fn.site, s.loc, 'return value from a void helper', 'declare the return type: number or boolean');
    return 'return;';
  }
  if (!s.value) unsupported(fn.site, s.loc, 'return without a value', `return a ${fn.helperReturns}`);
  fn.mayFail = false;
  const v = lowerExpr(s.value, fn);
  const c = fn.helperReturns === 'boolean' ? needBool(fn.site, s.loc, v, 'return value') : asDouble(fn.site, s.loc, v, 'return value');
  if (!fn.mayFail) return `return ${c};`;
  const tmp = fn.temp('r');
  return `{\n  const ${fn.helperReturns === 'boolean' ? 'bool' : 'double'} ${tmp} = ${c};\n  ${fn.check()}\n  return ${tmp};\n}`;
}

function handlerReturn(s: StmtOf<'return'>, fn: FnScope): string {
  const method = fn.method;
  if (!method) throw new Error('handlerReturn outside a handler');
  const v = s.value;
  if (v && v.kind === 'call' && v.callee.kind === 'member' && v.callee.name === 'forward' && v.callee.object.kind === 'ident' && fn.roles.get(v.callee.object.name) === 'ctx') {
    if (HOOK_NAMES.includes(method.name) && method.id >= HOOK_METHOD.onActivate) unsupported(fn.site, v.loc, 'ctx.forward in an activation hook', `${fn.grain.name}.${method.name} has no message to forward: send one with ctx.send`);
    return `${k2k(fn, v, true)}\n${fn.check()}\nreturn RG_FORWARDED;`;
  }
  if (!method.reply) {
    if (v) unsupported(fn.site, s.loc, 'return value from a method without a reply schema', `${fn.grain.name}.${method.name} is a tell: write \`return;\`, or declare a reply schema`);
    return 'return RG_OK;';
  }
  if (!v) typeError(fn.site, s.loc, 'return without a reply', `${fn.grain.name}.${method.name} must reply ${describeSchema(method.reply)}`, 'return an object literal with every reply field');
  if (v.kind !== 'object') {
    unsupported(fn.site, v.loc, 'reply that is not an object literal', `write the reply out: return { ${method.reply.fieldNames.map((f) => `${f}: ...`).join(', ')} }`);
  }
  fn.mayFail = false;
  const fill = fillStruct(fn, v, method.reply, '(*r)', 'reply');
  // An out-of-range field fails once every field was evaluated (JS builds the object, then the host encodes it).
  if (fill.includes('rg_chk_')) return `{\n${indent(`bool rg_mis = false;\n${fill}\nif (rg_mis && !t->err) t->err = RG_E_REPLY_MISMATCH;\n${fn.check()}\nreturn RG_OK;`, 2)}\n}`;
  return fn.mayFail ? `${fill}\n${fn.check()}\nreturn RG_OK;` : `${fill}\nreturn RG_OK;`;
}

function field(base: string, name: string): string {
  return base === '(*r)' ? `r->${cMember(name)}` : `${base}.${cMember(name)}`;
}

/** Fills the C struct at `base` from an object literal, checking it against the schema. */
export function fillStruct(fn: FnScope, obj: Extract<Expr, { kind: 'object' }>, schema: StructSchema, base: string, what: string, path = ''): string {
  const names = new Set(schema.fieldNames);
  for (const p of obj.props) {
    if (!names.has(p.name)) {
      throw new CodegenError('CODEGEN_TYPE', `${what} field ${p.name}`, `the ${what} has no field "${p.name}" (schema ${describeSchema(schema)})`, siteAt(fn.site, p.loc), `write exactly the fields ${schema.fieldNames.join(', ') || '(none)'}`);
    }
  }
  for (const name of schema.fieldNames) {
    if (!obj.props.some((x) => x.name === name)) {
      throw new CodegenError('CODEGEN_TYPE', `${what} field ${name}`, `the ${what} misses field "${name}" (schema ${describeSchema(schema)})`, siteAt(fn.site, obj.loc), `write exactly the fields ${schema.fieldNames.join(', ')}`);
    }
  }
  // In the literal's order, as JS evaluates it (the first failure is the turn's error).
  return obj.props.map((p) => fillField(fn, p.value, schema.fields[p.name] as Schema, field(base, p.name), what, p.loc, path ? `${path}.${p.name}` : p.name)).join('\n');
}

function fillField(fn: FnScope, e: Expr, s: Schema, lv: string, what: string, loc: Loc, path: string): string {
  if (s.kind === 'struct' && e.kind === 'object') return fillStruct(fn, e, s, lv, what, path);
  if (e.kind === 'array') return fillArray(fn, e, s, lv, what, path);
  if (e.kind === 'cond' && s.kind !== 'scalar') {
    // `c ? [a, b] : []`, `c ? m.xs : m.ys`, `c ? { x: 1 } : m.p`: the branch taken fills the field, as JS picks one value.
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
  if (!src || describeSchema(src.s) !== describeSchema(s) || (src.k === 'vec' && src.origin === 'state') || (src.origin === 'state' && hasVec(s))) {
    return unsupported(
      fn.site,
      loc,
      `${what} field from ${describeVT(v.t)}`,
      `give it a value of the same schema (${describeSchema(s)}): a message or state field declared the same way, or an object literal; state vecs are copied element by element`,
    );
  }
  // A vec copies its length and the items in use, not its whole bound (a bound may be megabytes).
  // Into the reply (device memory), the warp may help; a K2K payload is a local of lane 0, which only it can write.
  const copy = lv.startsWith('r->') ? 'rg_copy_t(t, ' : 'rg_copy(';
  if (src.k === 'vec') return `${copy}&${lv}, &${v.c}, rg_minu((unsigned int)sizeof(${lv}), (unsigned int)((const unsigned char*)&(${v.c}).items[(${v.c}).length] - (const unsigned char*)&(${v.c}))));`;
  return `${copy}&${lv}, &${v.c}, sizeof(${lv}));`;
}

/**
 * An array literal into a fixed array (exactly `length` elements) or a bounded vec (at most `maxLength`;
 * sets its length), element by element with the conversions of a scalar field of the same kind.
 */
function fillArray(fn: FnScope, e: Extract<Expr, { kind: 'array' }>, s: Schema, lv: string, what: string, path: string): string {
  const n = e.elements.length;
  if (s.kind !== 'array' && s.kind !== 'vec') {
    return typeError(fn.site, e.loc, 'array literal', `the ${what} field ${path} is ${describeSchema(s)}, not an array`, 'array literals fill t.array / t.vec fields only');
  }
  if (s.kind === 'array' && n !== s.length) {
    typeError(fn.site, e.loc, 'array literal length', `the ${what} field ${path} is ${describeSchema(s)} but the array literal has ${n} element(s)`, `write exactly ${s.length} element(s): a t.array has a fixed length`);
  }
  if (s.kind === 'vec' && n > s.maxLength) {
    typeError(fn.site, e.loc, 'array literal length', `the ${what} field ${path} is ${describeSchema(s)} but the array literal has ${n} elements`, `write at most ${s.maxLength} element(s), or raise the vec's maximum length in the schema`);
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

/** ctx.send / ctx.forward: build the target's request struct, then hand it to the generated sender. */
function k2k(fn: FnScope, e: Extract<Expr, { kind: 'call' }>, forward: boolean): string {
  const name = forward ? 'ctx.forward' : 'ctx.send';
  const k2kError = (loc: Loc, detail: string, hint: string): never => {
    throw new CodegenError('CODEGEN_K2K', name, detail, siteAt(fn.site, loc), hint);
  };
  if (e.args.length !== 4) k2kError(e.loc, `${name} takes (GrainClass, key, 'method', payload), got ${e.args.length} arguments`, `write ${name}(Other, key, 'method', { ... })`);
  const [ge, ke, me, pe] = e.args as [Expr, Expr, Expr, Expr];
  const g = lowerExpr(ge, fn);
  if (g.t.k !== 'grain') {
    return k2kError(ge.loc, `${name} needs a grain class as its first argument`, 'pass the class itself (imported or declared in this module) and list it in generateKernel\'s grains');
  }
  const target = g.t;
  // String keys are interned per grain class on the host: a kernel knows only the ids of its own keys.
  const stringKey = target.def.keyKind === 'string';
  if (stringKey) {
    const hint = `a string key reaches the GPU as its host-interned id, unique only within its grain class, so a string-keyed grain is addressed only by its own ctx.key from a handler of the same class: ${name}(${target.def.name}, ctx.key, ...); give the target integer keys to reach it from elsewhere`;
    if (target.def.name !== fn.grain.name) k2kError(ge.loc, `${name} to ${target.def.name}, a grain with string keys, from another grain class (${fn.grain.name})`, hint);
    const ownKey = ke.kind === 'member' && ke.name === 'key' && ke.object.kind === 'ident' && fn.roles.get(ke.object.name) === 'ctx';
    if (!ownKey) k2kError(ke.loc, `${name} to ${target.def.name}, a grain with string keys, by a key other than ctx.key`, hint);
  }
  if (me.kind !== 'str') return k2kError(me.loc, `${name} needs the method name as a string literal`, `write '${target.def.methods[0]?.name ?? 'method'}'`);
  const method = target.def.methodByName.get(me.value);
  if (!method) return k2kError(me.loc, `${target.def.name} has no method "${me.value}"`, `use one of ${target.def.methods.map((m) => m.name).join(', ')}`);
  if (forward) {
    const mine = fn.method?.reply;
    if (!mine || !method.reply || describeSchema(mine) !== describeSchema(method.reply)) {
      k2kError(
        e.loc,
        `${name} to ${target.def.name}.${method.name} whose reply (${method.reply ? describeSchema(method.reply) : 'none'}) differs from ${fn.grain.name}.${fn.method?.name}'s (${mine ? describeSchema(mine) : 'none'})`,
        'forward only to a method that replies with the same schema',
      );
    }
  }
  if (pe.kind !== 'object') return k2kError(pe.loc, `${name} needs an object literal payload`, `write { ${method.request.fieldNames.map((f) => `${f}: ...`).join(', ')} }`);
  fn.mayFail = false;
  const key = stringKey ? 't->key' : asDouble(fn.site, ke.loc, lowerExpr(ke, fn), `${name} key`);
  const sender = fn.unit.sender(target.id, target.def, method);
  // JS evaluates the key before the payload; a key that fails (a helper's throw) sends nothing.
  const keyFails = fn.mayFail;
  const kt = keyFails ? fn.temp('k') : key;
  const tmp = fn.temp('m');
  const fill = fillStruct(fn, pe, method.request, tmp, 'payload');
  fn.mayFail = true;
  // As the CPU backend's send: the key and the payload's fields are evaluated, then the key is checked, then
  // the payload encoded; an out-of-range payload field (rg_mis) fails after an invalid key.
  const mis = fill.includes('rg_chk_');
  const misFail = !mis ? '' : stringKey ? 'if (rg_mis && !t->err) t->err = RG_E_REPLY_MISMATCH;\n' : `if (rg_mis && !t->err) {\n  long long rg_k;\n  t->err = rg_key_of(${kt}, &rg_k) ? RG_E_REPLY_MISMATCH : RG_E_INVALID_KEY;\n}\n`;
  return `{\n${indent(`${keyFails ? `const double ${kt} = ${key};\n` : ''}${sender.type} ${tmp};\nrg_zero(&${tmp}, sizeof(${tmp}));\n${mis ? 'bool rg_mis = false;\n' : ''}${fill}\n${misFail}if (!t->err) ${sender.name}(t, ${kt}, &${tmp}, ${forward});`, 2)}\n}`;
}

export { typeError, I32 };
