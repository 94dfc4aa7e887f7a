import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import type ts from 'typescript';
import type { FunctionAst } from './ast.ts';
import { CodegenError } from './errors.ts';
import { TS, parseFunction, unsupported, type FnLike, type ParseSite } from './parse.ts';

/** A grain module parsed once: its grain classes (by spec name) and its module-level helpers. */
export interface GrainModule {
  readonly file: string;
  readonly sf: ts.SourceFile;
  /** Spec name → class declaration. */
  readonly classes: ReadonlyMap<string, ts.ClassDeclaration>;
  /** Class identifier → spec name (a class may be named differently from its grain). */
  readonly classToGrain: ReadonlyMap<string, string>;
  readonly helpers: ReadonlyMap<string, ts.FunctionDeclaration>;
  /** Module-level `const NAME = <number literal>`: inlined where handlers read them. */
  readonly consts: ReadonlyMap<string, number>;
}

function numericLiteral(e: ts.Expression | undefined): number | undefined {
  if (!e) return undefined;
  // Type-only wrappers: `const K = 5 as const`, `(5)`, `5 satisfies number`.
  while (
    TS.isParenthesizedExpression(e) ||
    TS.isAsExpression(e) ||
    TS.isSatisfiesExpression(e) ||
    TS.isTypeAssertionExpression(e)
  )
    e = e.expression;
  if (TS.isPrefixUnaryExpression(e) && e.operator === TS.SyntaxKind.MinusToken) {
    const v = numericLiteral(e.operand);
    return v === undefined ? undefined : -v;
  }
  if (TS.isNumericLiteral(e)) return Number(e.text);
  return undefined;
}

const cache = new Map<string, GrainModule>();

/** The spec name of a class extending `Grain({ name: '...' })`; '' when it extends Grain(<expression>). */
function grainSpecName(cls: ts.ClassDeclaration): string | undefined {
  for (const h of cls.heritageClauses ?? []) {
    if (h.token !== TS.SyntaxKind.ExtendsKeyword) continue;
    for (const t of h.types) {
      const call = t.expression;
      if (!TS.isCallExpression(call) || !TS.isIdentifier(call.expression) || call.expression.text !== 'Grain') continue;
      const spec = call.arguments[0];
      if (!spec || !TS.isObjectLiteralExpression(spec)) return '';
      for (const p of spec.properties) {
        if (
          TS.isPropertyAssignment(p) &&
          TS.isIdentifier(p.name) &&
          p.name.text === 'name' &&
          TS.isStringLiteral(p.initializer)
        ) {
          return p.initializer.text;
        }
      }
      return '';
    }
  }
  return undefined;
}

export function loadModule(moduleUrl: string): GrainModule {
  const hit = cache.get(moduleUrl);
  if (hit) return hit;
  let path: string;
  let text: string;
  try {
    path = moduleUrl.startsWith('file:') ? fileURLToPath(moduleUrl) : moduleUrl;
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new CodegenError(
      'CODEGEN_SOURCE',
      'module',
      `cannot read grain module ${moduleUrl}: ${(e as Error).message}`,
      undefined,
      "the spec's module must be import.meta.url of a readable .ts file",
    );
  }
  const sf = TS.createSourceFile(path, text, TS.ScriptTarget.ES2022, true, TS.ScriptKind.TS);
  const classes = new Map<string, ts.ClassDeclaration>();
  const classToGrain = new Map<string, string>();
  const helpers = new Map<string, ts.FunctionDeclaration>();
  const consts = new Map<string, number>();
  for (const s of sf.statements) {
    if (TS.isClassDeclaration(s)) {
      const name = grainSpecName(s);
      // A spec that is not an object literal: the class is found by its own name.
      const key = name === '' ? s.name?.text : name;
      if (key !== undefined) {
        if (!classes.has(key)) classes.set(key, s);
        if (s.name) classToGrain.set(s.name.text, key);
      }
    } else if (TS.isFunctionDeclaration(s) && s.name && s.body) {
      helpers.set(s.name.text, s);
    } else if (TS.isVariableStatement(s) && s.declarationList.flags & TS.NodeFlags.Const) {
      for (const d of s.declarationList.declarations) {
        const v = numericLiteral(d.initializer);
        if (TS.isIdentifier(d.name) && v !== undefined) consts.set(d.name.text, v);
      }
    }
  }
  const mod: GrainModule = { file: basename(path), sf, classes, classToGrain, helpers, consts };
  cache.set(moduleUrl, mod);
  return mod;
}

export function siteFor(mod: GrainModule, grain: string, method: string): ParseSite {
  return { sf: mod.sf, grain, method, file: mod.file };
}

/** The handler method `method` of grain `grain`, parsed. */
export function parseHandler(mod: GrainModule, grain: string, method: string): FunctionAst {
  const cls = mod.classes.get(grain);
  if (!cls) {
    throw new CodegenError(
      'CODEGEN_SOURCE',
      'class',
      `no exported class extending Grain({ name: '${grain}', ... }) in ${mod.file}`,
      undefined,
      'declare the grain class in the module its spec names (module: import.meta.url)',
    );
  }
  const m = handlerNode(mod, grain, cls, method);
  if (!m) {
    throw new CodegenError(
      'CODEGEN_SOURCE',
      'method',
      `class for grain ${grain} in ${mod.file} has no method ${method}`,
      undefined,
      `add a method ${method}(state, msg, ctx) to the class`,
    );
  }
  return parseFunction(siteFor(mod, grain, method), m, false);
}

/** A class member's name when it is written literally (`go`, `'go'`, `['go']`). */
function memberName(n: ts.PropertyName | undefined): string | undefined {
  if (!n) return undefined;
  if (TS.isIdentifier(n) || TS.isStringLiteral(n) || TS.isNoSubstitutionTemplateLiteral(n)) return n.text;
  if (
    TS.isComputedPropertyName(n) &&
    (TS.isStringLiteral(n.expression) || TS.isNoSubstitutionTemplateLiteral(n.expression))
  )
    return n.expression.text;
  return undefined;
}

/**
 * The instance member that handles `method`, as the CPU backend finds it (`new Class()[method]`): a method
 * with a body (overload signatures skipped), or a property initialised with an arrow or function
 * expression. A static method is not on the instance: the CPU backend has no handler, so it is refused.
 */
function handlerNode(mod: GrainModule, grain: string, cls: ts.ClassDeclaration, method: string): FnLike | undefined {
  const site = siteFor(mod, grain, method);
  const isStatic = (x: ts.ClassElement) =>
    TS.canHaveModifiers(x) && (TS.getModifiers(x) ?? []).some((k) => k.kind === TS.SyntaxKind.StaticKeyword);
  for (const x of cls.members) {
    if (memberName(x.name) !== method) continue;
    if (isStatic(x))
      unsupported(
        site,
        x,
        `static handler ${method}`,
        `the CPU backend calls handlers on an instance: drop \`static\``,
      );
    if (TS.isMethodDeclaration(x) && x.body) return x;
    if (TS.isPropertyDeclaration(x) && x.initializer) {
      const init = x.initializer;
      if (TS.isArrowFunction(init) || TS.isFunctionExpression(init)) return init;
      unsupported(
        site,
        x,
        `handler ${method} as a property that is not a function`,
        `write it as a method: ${method}(state, msg, ctx) { ... }`,
      );
    }
    if (TS.isGetAccessorDeclaration(x) || TS.isSetAccessorDeclaration(x)) unsupported(site, x, 'getter/setter');
  }
  return undefined;
}

/** Whether the class of grain `grain` defines a method `name` (an optional activation hook). */
export function hasMethod(mod: GrainModule, grain: string, name: string): boolean {
  const cls = mod.classes.get(grain);
  return cls !== undefined && handlerNode(mod, grain, cls, name) !== undefined;
}

export function parseHelper(mod: GrainModule, grain: string, name: string): FunctionAst | undefined {
  const f = mod.helpers.get(name);
  return f ? parseFunction(siteFor(mod, grain, name), f, true) : undefined;
}
