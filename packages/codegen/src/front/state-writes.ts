import { t, type Schema, type StructSchema } from '@ringgrain/core/backend';
import type { Expr, FunctionAst, Stmt } from './ast.ts';

/**
 * What a name or expression reached from the state is: a part of the state schema, a state vec's `.items`, or unknown.
 */
type Place = { readonly s: Schema } | { readonly items: Schema } | 'unknown';

const isScalar = (p: Place): boolean =>
  p !== 'unknown' && 's' in p && p.s.kind !== 'struct' && p.s.kind !== 'array' && p.s.kind !== 'vec';

/**
 * Whether a handler may store into its actor's state: an assignment or ++/-- whose target is reached
 * from the state parameter, directly or through a local bound to a part of it that is a live view
 * (`const p = s.pts[i]`: a struct, an array). Over-approximates, never under: an expression whose place
 * in the state schema cannot be told counts as a view, and a view used other than as the base of a
 * member or index (passed by name, returned whole) counts as written. A turn of a handler for which
 * this is false leaves the actor's dirty mark alone (codegen state-meta.ts), as the CPU backend leaves a
 * state whose bytes did not change.
 */
export function mayWriteState(ast: FunctionAst, state: StructSchema): boolean {
  const param = ast.params[0]?.name;
  if (param === undefined) return false;
  const views = new Map<string, Place>([[param, { s: state }]]);
  let writes = false;

  /** The place of a member/index chain from a view (undefined: not reached from the state). */
  const place = (e: Expr): Place | undefined => {
    if (e.kind === 'ident') return views.get(e.name);
    if (e.kind === 'cond') {
      const a = place(e.then);
      const b = place(e.otherwise);
      return (a && !isScalar(a)) || (b && !isScalar(b)) ? 'unknown' : undefined;
    }
    if (e.kind !== 'member' && e.kind !== 'index') return undefined;
    const base = place(e.object);
    if (base === undefined || base === 'unknown') return base;
    if (e.kind === 'index') {
      if ('items' in base) return { s: base.items };
      return base.s.kind === 'array' ? { s: base.s.element } : 'unknown';
    }
    if ('items' in base) return 'unknown';
    const s = base.s;
    if (s.kind === 'struct') {
      const f = (s.fields as Record<string, Schema>)[e.name];
      return f ? { s: f } : 'unknown';
    }
    if (s.kind === 'vec' && e.name === 'items') return { items: s.element };
    if ((s.kind === 'vec' || s.kind === 'array') && e.name === 'length') return { s: t.u32 };
    return 'unknown';
  };
  const isView = (e: Expr): boolean => {
    const p = place(e);
    return p !== undefined && !isScalar(p);
  };
  const root = (e: Expr): string | undefined =>
    e.kind === 'ident' ? e.name : e.kind === 'member' || e.kind === 'index' ? root(e.object) : undefined;

  /** Reads in an expression; a view named other than as a chain's base counts as written. */
  const expr = (e: Expr, asBase = false): void => {
    switch (e.kind) {
      case 'ident':
        if (!asBase && views.has(e.name) && isView(e)) writes = true;
        return;
      case 'member':
        expr(e.object, true);
        return;
      case 'index':
        expr(e.object, true);
        expr(e.index);
        return;
      case 'call':
        // A method called on a view (s.xs.fill(...)) may store through it.
        if ((e.callee.kind === 'member' || e.callee.kind === 'index') && isView(e.callee.object)) writes = true;
        expr(e.callee, true);
        // Arguments are read: helpers take numbers and booleans, payloads are copied.
        for (const a of e.args) expr(a);
        return;
      case 'unary':
        expr(e.arg);
        return;
      case 'binary':
      case 'logical':
        expr(e.left);
        expr(e.right);
        return;
      case 'cond':
        expr(e.test);
        expr(e.then, asBase);
        expr(e.otherwise, asBase);
        return;
      case 'object':
        for (const p of e.props) expr(p.value);
        return;
      case 'array':
        for (const x of e.elements) expr(x);
        return;
      default:
        return;
    }
  };
  const target = (t: Expr): void => {
    const r = root(t);
    if (r !== undefined && views.has(r)) writes = true;
    if (t.kind === 'member' || t.kind === 'index') expr(t.object, true);
    if (t.kind === 'index') expr(t.index);
  };
  const stmts = (body: readonly Stmt[]): void => {
    for (const s of body) stmt(s);
  };
  const stmt = (s: Stmt): void => {
    switch (s.kind) {
      case 'let': {
        const view = isView(s.init);
        expr(s.init, view);
        if (view) views.set(s.name, place(s.init) ?? 'unknown');
        return;
      }
      case 'assign': {
        target(s.target);
        const view = isView(s.value);
        if (s.target.kind === 'ident' && view) views.set(s.target.name, place(s.value) ?? 'unknown');
        expr(s.value, view);
        return;
      }
      case 'update':
        target(s.target);
        return;
      case 'expr':
        expr(s.expr);
        return;
      case 'if':
        expr(s.test);
        stmts(s.then);
        if (s.otherwise) stmts(s.otherwise);
        return;
      case 'for':
        if (s.init) stmt(s.init);
        if (s.test) expr(s.test);
        if (s.update) stmt(s.update);
        stmts(s.body);
        return;
      case 'while':
        expr(s.test);
        stmts(s.body);
        return;
      case 'return':
        if (s.value) expr(s.value);
        return;
      case 'block':
        stmts(s.body);
        return;
      default:
        return;
    }
  };
  stmts(ast.body);
  return writes;
}
