/**
 * The argument checks ctx.startTimer / ctx.stopTimer (timers.ts) and ctx.setReminder / ctx.clearReminder
 * (reminders.ts) share. What the translator can check it refuses with CODEGEN_TIMER (outside a handler, a
 * name that is not a string literal, the wrong arguments, options that are not an object literal); what core
 * checks at run time (byName: an undeclared name; startArgs: a bad periodMs or dueMs) fails the turn on the
 * GPU with core's TimerArgumentError text, compiled into the unit, as it fails the turn on the CPU backend.
 */
import { TimerArgumentError, byName } from '@ringgrain/core/backend';
import type { Expr, Loc } from '../front/ast.ts';
import { CodegenError } from '../front/errors.ts';
import { siteAt } from '../front/parse.ts';
import { lowerExpr } from './lower-expr.ts';
import type { FnScope } from './scope.ts';
import { asDouble } from './values.ts';

/** C string literal (UTF-8 bytes escaped: the texts hold quotes and the hints' ≥; '?' too, against trigraphs). */
export function cStr(text: string): string {
  let out = '"';
  for (const b of new TextEncoder().encode(text)) {
    const ch = String.fromCharCode(b);
    if (b === 0x22 || b === 0x5c) out += `\\${ch}`;
    else if (b >= 0x20 && b < 0x7f && ch !== '?') out += ch;
    else out += `\\${b.toString(8).padStart(3, '0')}`;
  }
  return `${out}"`;
}

/** The text core's TimerArgumentError has for a bad number: split around the number. */
function argumentText(where: string, field: 'periodMs' | 'dueMs'): { pre: string; post: string } {
  const mark = '\u0001';
  const detail =
    field === 'periodMs' ? `periodMs ${mark} is not a finite number > 0` : `dueMs ${mark} is not a finite number ≥ 0`;
  const msg = new TimerArgumentError(where, field === 'periodMs' ? 'bad-period' : 'bad-due', detail).message;
  const [pre, post] = msg.split(mark) as [string, string];
  return { pre, post };
}

/**
 * The last four arguments of rg_tm_start and rg_rem_set: core's texts for a bad periodMs and a bad dueMs of
 * `where`, each as the C literals before and after the number (the turn writes the number in).
 */
export function badNumberTexts(where: string): string {
  const bp = argumentText(where, 'periodMs');
  const bd = argumentText(where, 'dueMs');
  return `${cStr(bp.pre)}, ${cStr(bp.post)}, ${cStr(bd.pre)}, ${cStr(bd.post)}`;
}

/** The C of a turn that fails with core's text (an undeclared name, a period left out). */
export function failTurn(message: string): string {
  return `t->msg = ${cStr(message)};\nt->err = RG_E_THROW;`;
}

type CallExpr = Extract<Expr, { kind: 'call' }>;
type Fail = (loc: Loc, detail: string, hint: string) => never;

/** What differs between the timer and the reminder calls. */
export interface NamedCallSpec<T extends { readonly name: string }> {
  /** 'startTimer', 'stopTimer', 'setReminder', 'clearReminder'. */
  readonly op: string;
  readonly noun: 'timer' | 'reminder';
  /** The class's declared timers or reminders. */
  readonly declared: readonly T[];
  /** The hint for a call outside a handler: 'start and stop timers'. */
  readonly verbs: string;
  /** Why the name must be a literal: 'the GPU table has one column per declared timer'. */
  readonly literalWhy: string;
  /** Whether the call takes the options object. */
  readonly opts: 'none' | 'optional' | 'required';
  /** A refusal of the whole class, checked after the handler check (reminders: string keys). */
  readonly refuse?: { readonly detail: string; readonly hint: string } | undefined;
}

/** A call that passed the translator's checks: its declared entry, or the C that fails the turn (undeclared name). */
export interface NamedCall<T> {
  readonly name: string;
  readonly opts: Expr | undefined;
  /** `Class.op("name")`, how core's texts name the call. */
  readonly where: string;
  readonly entry: T | undefined;
  /** With no entry: the turn's failure with core's byName text. */
  readonly undeclared: string;
  readonly fail: Fail;
}

/** The checks in the order core and the CPU backend make them: handler, name literal, arguments, declared name. */
export function checkNamedCall<T extends { readonly name: string }>(
  fn: FnScope,
  e: CallExpr,
  spec: NamedCallSpec<T>,
): NamedCall<T> {
  const { op, noun } = spec;
  const fail: Fail = (loc, detail, hint) => {
    throw new CodegenError('CODEGEN_TIMER', `ctx.${op}`, detail, siteAt(fn.site, loc), hint);
  };
  if (!fn.method) fail(e.loc, `ctx.${op} outside a handler`, `${spec.verbs} in a handler (helpers have no ctx)`);
  if (spec.refuse) fail(e.loc, spec.refuse.detail, spec.refuse.hint);
  const optsHint = spec.opts === 'none' ? '' : ', { periodMs, dueMs }';
  const [ne, oe, ...rest] = e.args;
  if (!ne) {
    const first = spec.declared[0]?.name ?? 'name';
    return fail(e.loc, `ctx.${op} needs the ${noun}'s name`, `write ctx.${op}('${first}'${optsHint})`);
  }
  if (ne.kind !== 'str') {
    const declared = spec.declared.map((t) => t.name).join(', ') || '(none)';
    return fail(
      ne.loc,
      `ctx.${op} needs the ${noun}'s name as a string literal ` +
        `(${spec.literalWhy}, chosen when the handler is translated)`,
      `write one of ${declared} literally; branch with if/else to choose between ${noun}s`,
    );
  }
  if (rest.length > 0 || (spec.opts === 'none' && oe) || (spec.opts === 'required' && !oe)) {
    const takes = spec.opts === 'none' ? '(name)' : spec.opts === 'optional' ? '(name, opts?)' : '(name, opts)';
    const hint = `write ctx.${op}('${ne.value}'${optsHint})`;
    fail(e.loc, `ctx.${op} takes ${takes}, got ${e.args.length} arguments`, hint);
  }
  const where = `${fn.grain.name}.${op}(${JSON.stringify(ne.value)})`;
  // An undeclared name fails the turn at run time, with core's TimerArgumentError text, as on the CPU.
  fn.mayFail = true;
  try {
    const entry = byName(where, noun, spec.declared, ne.value);
    return { name: ne.value, opts: oe, where, entry, undeclared: '', fail };
  } catch (err) {
    return { name: ne.value, opts: oe, where, entry: undefined, undeclared: failTurn((err as Error).message), fail };
  }
}

/**
 * The options object of ctx.startTimer / ctx.setReminder: periodMs and dueMs lowered as doubles (undefined
 * where left out). `leftOut` says which fields may be left out, for the hint.
 */
export function lowerTimeOptions(
  fn: FnScope,
  call: NamedCall<unknown>,
  op: string,
  oe: Expr,
  leftOut: string,
): { period?: string; due?: string } {
  if (oe.kind !== 'object') {
    return call.fail(
      oe.loc,
      `ctx.${op} needs its options as an object literal`,
      `write ctx.${op}('${call.name}', { periodMs: ..., dueMs: ... }) (${leftOut}); ` +
        'choose between two option sets with if/else',
    );
  }
  const out: { period?: string; due?: string } = {};
  for (const p of oe.props) {
    if (p.name !== 'periodMs' && p.name !== 'dueMs') {
      call.fail(p.loc, `ctx.${op} has no option "${p.name}"`, 'the options are periodMs and dueMs');
    }
    const v = asDouble(fn.site, p.value.loc, lowerExpr(p.value, fn), `ctx.${op} ${p.name}`);
    if (p.name === 'periodMs') out.period = v;
    else out.due = v;
  }
  return out;
}
