/**
 * Element-parallel loops: a `for` loop of a handler that planParallel (front/parallel.ts) accepts runs on the
 * warp's 32 lanes when the turn is alone on its warp (device.ts rg_coop_loop), with the sequential loop as
 * the fallback; each loop's note (parallel or not, and why) goes to the unit's loop report.
 */
import type { Stmt } from '../front/ast.ts';
import { siteAt } from '../front/parse.ts';
import { planParallel, type ParallelPlan } from '../front/parallel.ts';
import { COOP_ENV_BYTES } from './abi.ts';
import { indent } from './codecs.ts';
import { C_SCALAR } from './ctypes.ts';
import { ARITH } from './kind-arith.ts';
import { lowerExpr } from './lower-expr.ts';
import { FnScope, type Local } from './scope.ts';
import { F64, asDouble } from './values.ts';

type StmtOf<K extends Stmt['kind']> = Extract<Stmt, { kind: K }>;

type LowerBody = (body: readonly Stmt[], fn: FnScope) => string;

/**
 * A handler's `for` loop, lowered as `sequential`: the parallel form with the sequential one as its fallback
 * where planParallel and parallelFor accept it, otherwise the sequential loop with the note of why not.
 */
export function forLoop(s: StmtOf<'for'>, fn: FnScope, sequential: string, lowerBody: LowerBody): string {
  const plan = planParallel(s, fn, (COOP_ENV_BYTES - 16) / 8);
  if (plan.ok) {
    const out = parallelFor(s, fn, plan, sequential, lowerBody);
    if (typeof out === 'string') return out;
    noteLoop(fn, s, false, out.why);
    return sequential;
  }
  noteLoop(fn, s, false, plan.why);
  return sequential;
}

/** Records whether a handler's outermost loop runs on the warp, and why (or why not). */
export function noteLoop(fn: FnScope, s: Stmt, parallel: boolean, why: string): void {
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
function parallelFor(
  s: StmtOf<'for'>,
  fn: FnScope,
  plan: ParallelPlan<Local>,
  sequential: string,
  lowerBody: LowerBody,
): string | { why: string } {
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
  const body = lowerBody(s.body, inner);
  if (inexact !== undefined) {
    return {
      why:
        `it sums into ${inexact} values that are not integers: another order would round differently (an ` +
        `integer sum is exact in any order, so it would run on the lanes)`,
    };
  }
  const mayFail = body.includes('t->err');
  if (plan.writesState && mayFail) {
    return {
      why:
        "it stores into state and an iteration can fail (lanes would leave later iterations' stores, which JS " +
        'never makes)',
    };
  }
  const fields = [`${types.state}* s;`, `${types.req}* m;`, ...captures.map((c) => `${c.ctype} ${c.cname};`)];
  const unpack = [
    ...captures.map((c) => `const ${c.ctype} ${c.cname} = e->${c.cname};`),
    '(void)t; (void)e; (void)s; (void)m;',
  ];
  const kinds = plan.reductions.map((r) => r.kind);
  const loop = fn.unit.parallelLoop(method.name, (n) => ({
    bulk: !mayFail && kinds.length === 0,
    c: [
      `struct ${n.env} {\n${indent(fields.join('\n'), 2)}\n};`,
      `/* ${fn.grain.name}.${method.name}: the body of the loop at line ${s.loc.line}, ` +
        `one iteration (element-parallel) */`,
      `RG_HD static void ${n.body}(rg_turn* t, const ${n.env}* e, ${types.state}* s, ${types.req}* m, ` +
        `double* red, double v_${plan.v}, unsigned int u_${plan.v}) {`,
      indent(`${unpack.join('\n')}\n(void)red; (void)v_${plan.v}; (void)u_${plan.v};\n${body}`, 2),
      '}',
      '#if defined(__CUDACC__) || defined(RG_HOST_COOP)',
      `static_assert(sizeof(${n.env}) <= RG_COOP_ENV_BYTES, "element-parallel loop: captured values fit ` +
        `rg_coop.env (parallel.ts checks)");`,
      laneRunner(n, kinds, mayFail),
      '#endif',
    ].join('\n'),
  }));
  const reduces = plan.reductions.map((r) => `${r.name} (${r.kind})`).join(', ');
  noteLoop(
    fn,
    s,
    true,
    `each iteration stores only into element ${plan.v} of what it stores into and reads nothing another ` +
      `iteration stores` +
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
    .map(
      (r) =>
        ` && ${r.local.cname} == trunc(${r.local.cname}) && fabs(${r.local.cname}) <= 4503599627370496.0 && ` +
        `${hi0} - ${lo0} <= 1048576.0`,
    )
    .join('');
  const cond =
    `t->co && ${lo0} == trunc(${lo0})${loMayBeNegZero ? ` && !rg_signbit(${lo0})` : ''} && ` +
    `${lo0} >= -2147483648.0 && ${hi0} <= 2147483648.0 && ` +
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
function laneRunner(
  n: { env: string; body: string; runner: string; chunk: string },
  kinds: readonly ('sum' | 'min' | 'max')[],
  mayFail: boolean,
): string {
  const R = kinds.length;
  if (!mayFail && R === 0) return chunkRunner(n);
  // A sum's partials start at -0, the identity of IEEE addition (-0 + x is x for every x, +0 included): a
  // start of -0 that the iterations leave at -0 in JS (nothing added, or only `-= 0`) stays -0.
  const init = kinds.map((k) => (k === 'sum' ? '-0.0' : k === 'min' ? 'rg_inf()' : '-rg_inf()'));
  const call = (k: string) =>
    `${n.body}(&lt, e_, e_->s, e_->m, ${R ? 'red' : '(double*)0'}, lo_ + (double)(${k}), ulo + ${k});`;
  const loop = mayFail
    ? [
        'unsigned int fail = 0xffffffffu;',
        `for (unsigned int k = lane; k < n_; k += 32u) {\n  lt.iters++;\n  ${call('k')}\n` +
          `  if (lt.err) { fail = k; break; }\n}`,
        'unsigned int first = fail, iters = lt.iters;',
        'for (unsigned int o = 16u; o != 0u; o >>= 1) {\n' +
          '  first = min(first, __shfl_xor_sync(0xffffffffu, first, o));\n' +
          '  iters += __shfl_xor_sync(0xffffffffu, iters, o);\n}',
        'if (first != 0xffffffffu && fail == first) { co->err = lt.err; co->msg = lt.msg; }',
        'if (lane == 0u) { co->failAt = first; co->iters = iters; }',
      ]
    : [
        ...strided(call, 'lane', 'n_'),
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
 * One lane's iterations k = start, start + 32, … below `end`, four a step where they fit (their indices
 * differ, so the compiler may overlap their loads).
 */
function strided(call: (k: string) => string, start: string, end: string): string[] {
  return [
    `unsigned int k = ${start};`,
    `for (; k + 96u < ${end}; k += 128u) {\n  ${call('k')}\n  ${call('(k + 32u)')}\n  ${call('(k + 64u)')}\n` +
      `  ${call('(k + 96u)')}\n}`,
    `for (; k < ${end}; k += 32u) ${call('k')}`,
  ];
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
    ...strided(call, 'from + lane', 'to'),
  ];
  return [
    `__device__ static void ${n.chunk}(const rg_coop* co, unsigned int lane, unsigned int from, unsigned int to) {\n` +
      `${indent(body.join('\n'), 2)}\n}`,
    `__device__ static void ${n.runner}(rg_coop* co, unsigned int lane) {\n  ${n.chunk}(co, lane, 0u, co->n);\n` +
      `  if (lane == 0u) { co->failAt = 0xffffffffu; co->iters = co->n; }\n}`,
  ].join('\n');
}
