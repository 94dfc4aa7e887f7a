/** ctx.send and ctx.forward in a handler: the target's request struct, then the generated sender (kernel-to-kernel). */
import { describeSchema } from '@ringgrain/core/backend';
import type { Expr, Loc } from '../front/ast.ts';
import { CodegenError } from '../front/errors.ts';
import { siteAt } from '../front/parse.ts';
import { indent } from './codecs.ts';
import { fillStruct } from './lower-fill.ts';
import { lowerExpr } from './lower-expr.ts';
import type { FnScope } from './scope.ts';
import { asDouble } from './values.ts';

/** ctx.send / ctx.forward: build the target's request struct, then hand it to the generated sender. */
export function k2k(fn: FnScope, e: Extract<Expr, { kind: 'call' }>, forward: boolean): string {
  const name = forward ? 'ctx.forward' : 'ctx.send';
  const k2kError = (loc: Loc, detail: string, hint: string): never => {
    throw new CodegenError('CODEGEN_K2K', name, detail, siteAt(fn.site, loc), hint);
  };
  if (e.args.length !== 4)
    k2kError(
      e.loc,
      `${name} takes (GrainClass, key, 'method', payload), got ${e.args.length} arguments`,
      `write ${name}(Other, key, 'method', { ... })`,
    );
  const [ge, ke, me, pe] = e.args as [Expr, Expr, Expr, Expr];
  const g = lowerExpr(ge, fn);
  if (g.t.k !== 'grain') {
    return k2kError(
      ge.loc,
      `${name} needs a grain class as its first argument`,
      "pass the class itself (imported or declared in this module) and list it in generateKernel's grains",
    );
  }
  const target = g.t;
  // String keys are interned per grain class on the host: a kernel knows only the ids of its own keys.
  const stringKey = target.def.keyKind === 'string';
  if (stringKey) {
    const hint =
      `a string key reaches the GPU as its host-interned id, unique only within its grain class, so a ` +
      `string-keyed grain is addressed only by its own ctx.key from a handler of the same class: ` +
      `${name}(${target.def.name}, ctx.key, ...); give the target integer keys to reach it from elsewhere`;
    if (target.def.name !== fn.grain.name)
      k2kError(
        ge.loc,
        `${name} to ${target.def.name}, a grain with string keys, from another grain class (${fn.grain.name})`,
        hint,
      );
    const ownKey =
      ke.kind === 'member' && ke.name === 'key' && ke.object.kind === 'ident' && fn.roles.get(ke.object.name) === 'ctx';
    if (!ownKey)
      k2kError(ke.loc, `${name} to ${target.def.name}, a grain with string keys, by a key other than ctx.key`, hint);
  }
  if (me.kind !== 'str')
    return k2kError(
      me.loc,
      `${name} needs the method name as a string literal`,
      `write '${target.def.methods[0]?.name ?? 'method'}'`,
    );
  const method = target.def.methodByName.get(me.value);
  if (!method)
    return k2kError(
      me.loc,
      `${target.def.name} has no method "${me.value}"`,
      `use one of ${target.def.methods.map((m) => m.name).join(', ')}`,
    );
  if (forward) {
    const mine = fn.method?.reply;
    if (!mine || !method.reply || describeSchema(mine) !== describeSchema(method.reply)) {
      k2kError(
        e.loc,
        `${name} to ${target.def.name}.${method.name} whose reply ` +
          `(${method.reply ? describeSchema(method.reply) : 'none'}) differs from ` +
          `${fn.grain.name}.${fn.method?.name}'s (${mine ? describeSchema(mine) : 'none'})`,
        'forward only to a method that replies with the same schema',
      );
    }
  }
  if (pe.kind !== 'object')
    return k2kError(
      pe.loc,
      `${name} needs an object literal payload`,
      `write { ${method.request.fieldNames.map((f) => `${f}: ...`).join(', ')} }`,
    );
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
  const misFail = !mis
    ? ''
    : stringKey
      ? 'if (rg_mis && !t->err) t->err = RG_E_REPLY_MISMATCH;\n'
      : `if (rg_mis && !t->err) {\n  long long rg_k;\n` +
        `  t->err = rg_key_of(${kt}, &rg_k) ? RG_E_REPLY_MISMATCH : RG_E_INVALID_KEY;\n}\n`;
  const body =
    `${keyFails ? `const double ${kt} = ${key};\n` : ''}${sender.type} ${tmp};\nrg_zero(&${tmp}, sizeof(${tmp}));\n` +
    `${mis ? 'bool rg_mis = false;\n' : ''}${fill}\n` +
    `${misFail}if (!t->err) ${sender.name}(t, ${kt}, &${tmp}, ${forward});`;
  return `{\n${indent(body, 2)}\n}`;
}
