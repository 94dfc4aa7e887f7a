import type { Expr, Loc, Stmt } from './ast.ts';

/**
 * Element-parallel loops: which `for` loops of a handler may run across the 32 lanes of the worker warp
 * (device.ts rg_coop_loop) when the turn is alone on its warp. The check is conservative and works on the
 * syntax tree: a loop qualifies only when its iterations cannot observe one another, so any order gives
 * the state, reply and error JS gives. Everything it does not understand keeps the loop sequential, with
 * the reason (`ringgrain codegen --explain` prints them).
 */
type ForStmt = Extract<Stmt, { kind: 'for' }>;

/** A local as the check sees it (a target's lowering scope has more). */
export interface LocalView {
  readonly t: { readonly k: string };
  readonly constant: boolean;
}
/** What the check reads of the scope a loop is lowered in (the CUDA target's FnScope has these). */
export interface ScopeView<L extends LocalView> {
  /** The handler's method; undefined in a helper function. */
  readonly method: unknown;
  /** Loops the statement is nested in. */
  readonly loops: number;
  readonly roles: ReadonlyMap<string, 'state' | 'msg' | 'ctx'>;
  lookup(name: string): L | undefined;
}

export interface ParallelPlan<Local extends LocalView = LocalView> {
  readonly ok: true;
  /** The loop variable. */
  readonly v: string;
  readonly lo: Expr;
  readonly hi: Expr;
  /** Locals of the handler the body reads (passed by value to the lanes). */
  readonly captures: readonly { readonly name: string; readonly local: Local }[];
  /** The body stores into state (then it must not be able to fail: see lower-stmt.ts). */
  readonly writesState: boolean;
  /** Handler locals the body only reduces into (each lane keeps a partial, the warp combines them). */
  readonly reductions: readonly Reduction<Local>[];
}

/** `acc += x`, `acc -= x`, `acc++`, `acc--` (sum), `acc = Math.min(acc, x)` (min), `Math.max` (max). */
export interface Reduction<Local extends LocalView = LocalView> {
  readonly name: string;
  readonly local: Local;
  readonly kind: 'sum' | 'min' | 'max';
  /** What a sum adds (the lowering checks these are integers: then any order gives JS's exact result). */
  readonly terms: readonly Expr[];
}

/** Reductions one loop may carry (device.ts rg_coop.red). */
export const MAX_REDUCTIONS = 8;

/**
 * An integer sum is exact in any order only while every partial sum stays within 2^53. The lowering runs a
 * sum on the lanes when its start is within 2^52 and there are at most 2^20 iterations, and it accepts only
 * terms of integer kinds (|term| <= 2^32); a lane's iterations spend the turn budget (a u32), so inner-loop
 * iterations total at most 32 * 2^32 over the warp. So the terms may add at most 2^52 in all:
 * 2^20 * (what one iteration adds outside nested loops, on its worst path) + 2^37 * (what one inner
 * iteration adds) <= 2^52.
 */
const SUM_TERM = 2 ** 32;
const SUM_ITERATIONS = 2 ** 20;
const SUM_INNER_ITERATIONS = 32 * 2 ** 32;
const SUM_ROOM = 2 ** 52;
export type Plan<Local extends LocalView> = ParallelPlan<Local> | { readonly ok: false; readonly why: string };

/** What `--explain` says of one loop of a handler. */
export interface LoopNote {
  readonly grain: string;
  readonly method: string;
  readonly line: number;
  readonly column: number;
  readonly parallel: boolean;
  readonly why: string;
}

type Step = { readonly kind: 'member'; readonly name: string } | { readonly kind: 'index'; readonly index: Expr };
interface Chain {
  readonly root: string;
  readonly steps: readonly Step[];
}
interface Access {
  /** Root and member names, indices left out: two accesses with overlapping signatures may touch the same bytes. */
  readonly sig: string;
  /** The first index on the path is the loop variable (iteration i touches element i only). */
  readonly byLoopVar: boolean;
  /** `X.length` of an array or vec: unchanged by element stores. */
  readonly length: boolean;
  readonly loc: Loc;
}

class Reject extends Error {}

/** Member/index chain rooted at an identifier (`m.a[i].x`), or undefined. */
function chainOf(e: Expr): Chain | undefined {
  const steps: Step[] = [];
  let x = e;
  for (;;) {
    if (x.kind === 'member') {
      steps.unshift({ kind: 'member', name: x.name });
      x = x.object;
    } else if (x.kind === 'index') {
      steps.unshift({ kind: 'index', index: x.index });
      x = x.object;
    } else break;
  }
  return x.kind === 'ident' ? { root: x.name, steps } : undefined;
}

function access(c: Chain, v: string, loc: Loc): Access {
  const names = c.steps.flatMap((s) => (s.kind === 'member' ? [s.name] : []));
  const first = c.steps.find((s) => s.kind === 'index');
  const last = c.steps[c.steps.length - 1];
  return {
    sig: [c.root, ...names].join('.'),
    byLoopVar: first?.kind === 'index' && first.index.kind === 'ident' && first.index.name === v,
    length: last?.kind === 'member' && last.name === 'length' && !c.steps.some((s) => s.kind === 'index'),
    loc,
  };
}

const overlaps = (a: string, b: string) => a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`);

/** Decides whether handler loop `s` may run element-parallel, and what it captures (at most maxCaptures locals). */
export function planParallel<Local extends LocalView>(
  s: ForStmt,
  fn: ScopeView<Local>,
  maxCaptures: number,
): Plan<Local> {
  try {
    return plan(s, fn, maxCaptures);
  } catch (e) {
    if (e instanceof Reject) return { ok: false, why: e.message };
    throw e;
  }
}

function plan<Local extends LocalView>(s: ForStmt, fn: ScopeView<Local>, maxCaptures: number): ParallelPlan<Local> {
  const no = (why: string): never => {
    throw new Reject(why);
  };
  if (!fn.method) no('a loop in a helper function (only handler loops run on the warp)');
  if (fn.loops > 0) no('a loop inside another loop (only the outermost loop of a handler runs on the warp)');
  const init = s.init;
  if (!init || init.kind !== 'let' || init.constant) no('its header does not start with `let i = <start>`');
  const v = (init as Extract<Stmt, { kind: 'let' }>).name;
  const test = s.test;
  if (!test || test.kind !== 'binary' || test.op !== '<' || test.left.kind !== 'ident' || test.left.name !== v)
    no(`its condition is not \`${v} < <end>\``);
  const hi = (test as Extract<Expr, { kind: 'binary' }>).right;
  const u = s.update;
  const step1 =
    u &&
    ((u.kind === 'update' && u.op === '++' && u.target.kind === 'ident' && u.target.name === v) ||
      (u.kind === 'assign' &&
        u.op === '+=' &&
        u.target.kind === 'ident' &&
        u.target.name === v &&
        u.value.kind === 'num' &&
        u.value.value === 1));
  if (!step1) no(`its update is not \`${v}++\``);
  const lo = (init as Extract<Stmt, { kind: 'let' }>).init;

  const bodyLocals = new Set<string>();
  const writes: Access[] = [];
  const reads: Access[] = [];
  const captures = new Map<string, Local>();
  const outerReads = new Set<string>();
  /** Locals the bounds read: JS evaluates the end before every iteration, the lanes once. */
  const boundReadsOf = new Set<string>();
  const reductions = new Map<string, { local: Local; kind: Reduction['kind']; terms: Expr[] }>();
  /** Sum statements outside nested loops, with the largest magnitude each adds. */
  const sumStmts = new Map<Stmt, { name: string; mag: number }>();
  /** Per sum local: what one iteration of nested loops may add (every such statement counted). */
  const innerSums = new Map<string, number>();
  let writesState = false;

  /** An outer `let` local the statement reduces into, with the reduction's kind and term; else undefined. */
  const reductionOf = (st: Stmt): { name: string; kind: Reduction['kind']; term: Expr | undefined } | undefined => {
    const outer = (e: Expr) =>
      e.kind === 'ident' && e.name !== v && !bodyLocals.has(e.name) && !fn.roles.has(e.name) && fn.lookup(e.name)
        ? e.name
        : undefined;
    if (st.kind === 'update') {
      const name = outer(st.target);
      return name ? { name, kind: 'sum', term: undefined } : undefined;
    }
    if (st.kind !== 'assign') return undefined;
    const name = outer(st.target);
    if (!name) return undefined;
    if (st.op === '+=' || st.op === '-=') return { name, kind: 'sum', term: st.value };
    const c = st.value;
    if (
      st.op !== '=' ||
      c.kind !== 'call' ||
      c.args.length !== 2 ||
      c.callee.kind !== 'member' ||
      c.callee.object.kind !== 'ident' ||
      c.callee.object.name !== 'Math'
    )
      return undefined;
    if (c.callee.name !== 'min' && c.callee.name !== 'max') return undefined;
    const [a, b] = c.args as [Expr, Expr];
    const self = (e: Expr) => e.kind === 'ident' && e.name === name;
    if (self(a) === self(b)) return undefined;
    return { name, kind: c.callee.name, term: self(a) ? b : a };
  };

  const readExpr = (e: Expr, where: 'bound' | 'body'): void => {
    switch (e.kind) {
      case 'num':
      case 'bool':
      case 'str':
        return;
      case 'ident': {
        if (e.name === v) {
          if (where === 'bound') no(`its end reads ${v}`);
          return;
        }
        if (bodyLocals.has(e.name) || fn.roles.has(e.name)) return;
        const local = fn.lookup(e.name);
        if (!local) return; // Math, module constants, helpers, NaN, Infinity
        if (where === 'body') outerReads.add(e.name);
        else boundReadsOf.add(e.name);
        if (local.t.k !== 'num' && local.t.k !== 'bool')
          no(`it reads ${e.name}, a local naming a struct (lanes get numbers and booleans only)`);
        if (where === 'body') captures.set(e.name, local);
        return;
      }
      case 'member':
      case 'index': {
        const c = chainOf(e);
        if (c) {
          reads.push(access(c, v, e.loc));
          for (const st of c.steps) if (st.kind === 'index') readExpr(st.index, where);
          readExpr({ kind: 'ident', loc: e.loc, name: c.root }, where);
          return;
        }
        readExpr(e.object, where);
        if (e.kind === 'index') readExpr(e.index, where);
        return;
      }
      case 'call': {
        const callee = e.callee;
        const ok =
          (callee.kind === 'member' &&
            callee.object.kind === 'ident' &&
            (callee.object.name === 'Math' || (fn.roles.get(callee.object.name) === 'ctx' && callee.name === 'now'))) ||
          (callee.kind === 'ident' && !fn.lookup(callee.name) && !fn.roles.has(callee.name));
        if (!ok) no('it calls something other than Math functions, ctx.now() and helper functions');
        for (const a of e.args) readExpr(a, where);
        return;
      }
      case 'unary':
        return readExpr(e.arg, where);
      case 'binary':
      case 'logical':
        readExpr(e.left, where);
        return readExpr(e.right, where);
      case 'cond':
        readExpr(e.test, where);
        readExpr(e.then, where);
        return readExpr(e.otherwise, where);
      case 'object':
      case 'array':
        return no('it builds an object or array literal');
    }
  };

  const writeTarget = (t: Expr, loc: Loc): void => {
    if (t.kind === 'ident') {
      if (t.name === v) no(`it assigns its variable ${v}`);
      if (bodyLocals.has(t.name)) return;
      no(`it assigns ${t.name}, declared outside the loop (a reduction or a carried value: iterations would race)`);
    }
    const c = chainOf(t);
    if (!c) return no('it stores through an expression that is not a field path');
    const role = fn.roles.get(c.root);
    if (role !== 'state' && role !== 'msg') no(`it stores into ${c.root}`);
    const a = access(c, v, loc);
    if (!a.byLoopVar) no(`it stores into ${a.sig} at an index other than ${v} (iterations may touch the same element)`);
    if (role === 'state') writesState = true;
    writes.push(a);
    for (const st of c.steps) if (st.kind === 'index') readExpr(st.index, 'body');
  };

  const walk = (body: readonly Stmt[], depth: number): void => {
    for (const st of body) {
      switch (st.kind) {
        case 'let':
          if (st.name === v || fn.lookup(st.name) || fn.roles.has(st.name))
            no(`it declares ${st.name}, which shadows a name outside the loop`);
          readExpr(st.init, 'body');
          bodyLocals.add(st.name);
          break;
        case 'assign':
        case 'update': {
          const red = reductionOf(st);
          if (red) {
            const local = fn.lookup(red.name) as Local;
            if (local.constant || local.t.k !== 'num') no(`it reduces into ${red.name}, which is not a let number`);
            const had = reductions.get(red.name);
            if (had && had.kind !== red.kind)
              no(`it reduces into ${red.name} both as a ${had.kind} and as a ${red.kind}`);
            const r = had ?? { local, kind: red.kind, terms: [] };
            reductions.set(red.name, r);
            if (red.term) {
              r.terms.push(red.term);
              readExpr(red.term, 'body');
            }
            if (red.kind === 'sum') {
              const mag = termMagnitude(red.term);
              if (depth === 0) sumStmts.set(st, { name: red.name, mag });
              else innerSums.set(red.name, (innerSums.get(red.name) ?? 0) + mag);
            }
            break;
          }
          if (st.kind === 'assign') readExpr(st.value, 'body');
          writeTarget(st.target, st.loc);
          break;
        }
        case 'expr':
          no('it has an expression statement (a call: K2K sends keep their order only when sequential)');
          break;
        case 'if':
          readExpr(st.test, 'body');
          walk(st.then, depth);
          if (st.otherwise) walk(st.otherwise, depth);
          break;
        case 'for':
          if (st.init) walk([st.init], depth + 1);
          if (st.test) readExpr(st.test, 'body');
          if (st.update) walk([st.update], depth + 1);
          walk(st.body, depth + 1);
          break;
        case 'while':
          readExpr(st.test, 'body');
          walk(st.body, depth + 1);
          break;
        case 'block':
          walk(st.body, depth);
          break;
        case 'break':
        case 'continue':
          if (depth === 0) no(`it has ${st.kind} (iterations would depend on one another)`);
          break;
        case 'return':
        case 'throw':
          no(`it has ${st.kind} (the turn would end at an iteration the lanes do not agree on)`);
      }
    }
  };

  readExpr(lo, 'bound');
  readExpr(hi, 'bound');
  const boundReads = reads.length;
  walk(s.body, 0);
  for (const w of writes) {
    for (const r of reads.slice(boundReads)) {
      if (r.length || !overlaps(r.sig, w.sig)) continue;
      if (!r.byLoopVar)
        no(
          `it stores into ${w.sig}[${v}] and reads ${r.sig} at another index (line ${r.loc.line}): an ` +
            'iteration may read what another writes',
        );
    }
    for (const r of reads.slice(0, boundReads)) {
      if (!r.length && overlaps(r.sig, w.sig)) no(`its bounds read ${r.sig}, which the body stores into`);
    }
  }
  for (const name of reductions.keys()) {
    if (outerReads.has(name)) no(`it reduces into ${name} and also reads it (an iteration would see a partial result)`);
    if (boundReadsOf.has(name))
      no(`it reduces into ${name}, which its bounds read (JS re-tests the end after every iteration)`);
  }
  const outerSums = sumPerIteration(s.body, sumStmts);
  for (const [name, r] of reductions) {
    if (r.kind !== 'sum') continue;
    const outer = outerSums.get(name) ?? 0;
    const inner = innerSums.get(name) ?? 0;
    if (outer * SUM_ITERATIONS + inner * SUM_INNER_ITERATIONS <= SUM_ROOM) continue;
    no(
      inner > 0
        ? `it sums into ${name} inside a nested loop, whose terms only the turn budget bounds: partial sums ` +
            `could pass 2^53, where a double rounds and the lanes' order would round differently from JS's`
        : `it sums into ${name} more than one integer term an iteration: over 2^20 iterations partial sums ` +
            `could pass 2^53, where a double rounds and the lanes' order would round differently from JS's`,
    );
  }
  if (reductions.size > MAX_REDUCTIONS) no(`it reduces into ${reductions.size} locals (at most ${MAX_REDUCTIONS})`);
  const list = [...captures].map(([name, local]) => ({ name, local }));
  if (list.length > maxCaptures)
    no(`it reads ${list.length} locals of the handler (at most ${maxCaptures} fit the lanes' shared block)`);
  const reds = [...reductions].map(([name, r]) => ({ name, local: r.local, kind: r.kind, terms: r.terms }));
  return { ok: true, v, lo, hi, captures: list, writesState, reductions: reds };
}

/** The largest magnitude a sum term adds: 1 for ++/--, a literal's own, else an integer kind's (2^32). */
function termMagnitude(term: Expr | undefined): number {
  if (term === undefined) return 1;
  if (term.kind === 'num') return Math.abs(term.value);
  if (term.kind === 'unary' && term.op === '-' && term.arg.kind === 'num') return Math.abs(term.arg.value);
  return SUM_TERM;
}

/** Per sum local, the most that one iteration's statements outside nested loops add (the larger branch of an if). */
function sumPerIteration(
  body: readonly Stmt[],
  sums: ReadonlyMap<Stmt, { name: string; mag: number }>,
): Map<string, number> {
  const out = new Map<string, number>();
  const add = (name: string, v: number) => out.set(name, (out.get(name) ?? 0) + v);
  for (const st of body) {
    const r = sums.get(st);
    if (r) add(r.name, r.mag);
    else if (st.kind === 'if') {
      const a = sumPerIteration(st.then, sums);
      const b = sumPerIteration(st.otherwise ?? [], sums);
      for (const name of new Set([...a.keys(), ...b.keys()])) add(name, Math.max(a.get(name) ?? 0, b.get(name) ?? 0));
    } else if (st.kind === 'block') for (const [name, v] of sumPerIteration(st.body, sums)) add(name, v);
  }
  return out;
}
