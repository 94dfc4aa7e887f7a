import { createRequire } from 'node:module';
import type ts from 'typescript';
import {
  AST_VERSION,
  type AssignOp,
  type BinaryOp,
  type Expr,
  type FunctionAst,
  type Loc,
  type ParamType,
  type Stmt,
} from './ast.ts';
import { CodegenError, type SourceSite } from './errors.ts';

let compiler: typeof ts | undefined;
/**
 * The TypeScript compiler, loaded at its first use: loading it costs a process about 1.2 s of CPU (Node 20,
 * the 2-core development machine), and a program that imports the code generator without translating a
 * handler (the CUDA backend on a machine with no GPU, whose probe fails) never needs it.
 */
export const TS: typeof ts = new Proxy({} as typeof ts, {
  get: (_, key) => Reflect.get((compiler ??= createRequire(import.meta.url)('typescript') as typeof ts), key),
});

/** What the parser needs to name a construct's place in an error. */
export interface ParseSite {
  readonly sf: ts.SourceFile;
  readonly grain: string;
  readonly method: string;
  readonly file: string;
}

export function locOf(site: ParseSite, node: ts.Node): Loc {
  const p = site.sf.getLineAndCharacterOfPosition(node.getStart(site.sf));
  return { line: p.line + 1, column: p.character + 1 };
}

export function siteAt(site: ParseSite, loc: Loc): SourceSite {
  return { grain: site.grain, method: site.method, file: site.file, line: loc.line, column: loc.column };
}

/** Constructs the parser refuses, with what to write instead. Keyed by a short construct name. */
const HINTS: Record<string, string> = {
  'arrow function':
    'closures are not translated; move the logic into a module-level `function` helper that takes numbers',
  'function expression':
    'closures are not translated; move the logic into a module-level `function` helper that takes numbers',
  spread: 'write each field out: { a: x.a, b: x.b }',
  'try/catch': 'handlers cannot catch on the GPU; check the condition before the operation instead',
  throw:
    "throw new Error('a constant message') ends the turn with that message on both backends; other thrown " +
    'values are not translated',
  'Error message that is not a constant string':
    "write the message as one string literal, throw new Error('amount must be positive'), and return " +
    'values in the reply instead',
  await: 'handlers are synchronous turns; send a one-way message with ctx.send instead',
  'async function': 'handlers are synchronous turns; drop `async`',
  'new': 'no allocation on the GPU; use fixed arrays in the state or message schema (t.array / t.vec)',
  'array literal':
    'no allocation on the GPU: an array literal is translated only as the value of a t.array / t.vec field ' +
    'in a reply or a ctx.send/ctx.forward payload; elsewhere use fixed arrays in the state or message ' +
    'schema',
  'template literal': 'strings exist only as method names of ctx.send/ctx.forward',
  string: 'strings exist only as method names of ctx.send/ctx.forward',
  'for..of': 'write an index loop: for (let i = 0; i < xs.length; i++)',
  'for..in': 'write an index loop: for (let i = 0; i < xs.length; i++)',
  switch: 'write if / else if chains',
  var: 'use const or let',
  destructuring: 'read each field through its full path: msg.a, msg.b',
  'labeled statement': 'restructure the loop with a flag variable',
  '==': 'use === (no coercion)',
  '!=': 'use !== (no coercion)',
  '??': 'fields always have a value; remove the ?? fallback',
  'optional chaining': 'fields always exist; write a.b',
  typeof: 'types are known from the schemas; remove the typeof test',
  delete: 'state fields always exist; set the field to 0 instead',
  this: 'handlers are translated as functions of (state, msg, ctx); call module-level helpers instead of methods',
  'comma expression': 'write separate statements',
  'assignment in expression': 'assign in its own statement',
  'increment in expression': 'write i++ / i += 1 as its own statement',
  class: 'declare data in schemas; only handler methods and module-level functions are translated',
  'nested function': 'declare helpers at module level with `function name(x: number): number { ... }`',
  'default parameter': 'pass every argument explicitly',
  'rest parameter': 'pass every argument explicitly',
  'regular expression': 'strings are not available on the GPU',
  'exponent operator': 'use Math.pow(a, b)',
  'operator **=': 'write x = Math.pow(x, y)',
  'operator &&=': 'write if (x) x = y',
  'operator ||=': 'write if (!x) x = y',
  'operator ??=': 'fields always have a value; remove the ??= fallback',
  'in operator': 'fields always exist; remove the test',
  instanceof: 'types are known from the schemas; remove the test',
  'void operator': 'remove it',
  bigint: 'use numbers (i32/u32/f64 fields)',
  'getter/setter': 'use plain fields',
  debugger: 'remove it',
  with: 'remove it',
  null: 'fields always have a value; use 0 or false',
  undefined: 'fields always have a value; use 0 or false',
};

export function unsupported(site: ParseSite, node: ts.Node | Loc, construct: string, hint?: string): never {
  const loc = 'line' in node ? node : locOf(site, node);
  throw new CodegenError(
    'CODEGEN_UNSUPPORTED',
    construct,
    `${construct} is not supported in code translated to CUDA`,
    siteAt(site, loc),
    hint ?? HINTS[construct] ?? 'rewrite it with the documented subset (packages/codegen/README.md)',
  );
}

// Built at the first parse, so that importing the code generator does not load the compiler (typescript.ts).
let binaryOps: Partial<Record<ts.SyntaxKind, BinaryOp | '&&' | '||'>> | undefined;
let assignOps: Partial<Record<ts.SyntaxKind, AssignOp>> | undefined;
const BINARY = (): Partial<Record<ts.SyntaxKind, BinaryOp | '&&' | '||'>> => (binaryOps ??= {
  [TS.SyntaxKind.PlusToken]: '+',
  [TS.SyntaxKind.MinusToken]: '-',
  [TS.SyntaxKind.AsteriskToken]: '*',
  [TS.SyntaxKind.SlashToken]: '/',
  [TS.SyntaxKind.PercentToken]: '%',
  [TS.SyntaxKind.LessThanToken]: '<',
  [TS.SyntaxKind.LessThanEqualsToken]: '<=',
  [TS.SyntaxKind.GreaterThanToken]: '>',
  [TS.SyntaxKind.GreaterThanEqualsToken]: '>=',
  [TS.SyntaxKind.EqualsEqualsEqualsToken]: '===',
  [TS.SyntaxKind.ExclamationEqualsEqualsToken]: '!==',
  [TS.SyntaxKind.BarToken]: '|',
  [TS.SyntaxKind.AmpersandToken]: '&',
  [TS.SyntaxKind.CaretToken]: '^',
  [TS.SyntaxKind.LessThanLessThanToken]: '<<',
  [TS.SyntaxKind.GreaterThanGreaterThanToken]: '>>',
  [TS.SyntaxKind.GreaterThanGreaterThanGreaterThanToken]: '>>>',
  [TS.SyntaxKind.AmpersandAmpersandToken]: '&&',
  [TS.SyntaxKind.BarBarToken]: '||',
});

const ASSIGN = (): Partial<Record<ts.SyntaxKind, AssignOp>> => (assignOps ??= {
  [TS.SyntaxKind.EqualsToken]: '=',
  [TS.SyntaxKind.PlusEqualsToken]: '+=',
  [TS.SyntaxKind.MinusEqualsToken]: '-=',
  [TS.SyntaxKind.AsteriskEqualsToken]: '*=',
  [TS.SyntaxKind.SlashEqualsToken]: '/=',
  [TS.SyntaxKind.PercentEqualsToken]: '%=',
  [TS.SyntaxKind.BarEqualsToken]: '|=',
  [TS.SyntaxKind.AmpersandEqualsToken]: '&=',
  [TS.SyntaxKind.CaretEqualsToken]: '^=',
  [TS.SyntaxKind.LessThanLessThanEqualsToken]: '<<=',
  [TS.SyntaxKind.GreaterThanGreaterThanEqualsToken]: '>>=',
  [TS.SyntaxKind.GreaterThanGreaterThanGreaterThanEqualsToken]: '>>>=',
});

function strip(e: ts.Expression): ts.Expression {
  // Type-only wrappers (parentheses, `as`, `satisfies`, `!`) carry no run-time meaning.
  while (
    TS.isParenthesizedExpression(e) ||
    TS.isAsExpression(e) ||
    TS.isSatisfiesExpression(e) ||
    TS.isTypeAssertionExpression(e) ||
    TS.isNonNullExpression(e)
  )
    e = e.expression;
  return e;
}

function expr(site: ParseSite, node: ts.Expression): Expr {
  const e = strip(node);
  const loc = locOf(site, e);
  if (TS.isNumericLiteral(e)) return { kind: 'num', loc, value: Number(e.text), raw: e.getText(site.sf) };
  if (e.kind === TS.SyntaxKind.TrueKeyword) return { kind: 'bool', loc, value: true };
  if (e.kind === TS.SyntaxKind.FalseKeyword) return { kind: 'bool', loc, value: false };
  if (TS.isStringLiteral(e) || TS.isNoSubstitutionTemplateLiteral(e)) return { kind: 'str', loc, value: e.text };
  if (TS.isIdentifier(e)) {
    if (e.text === 'undefined') unsupported(site, e, 'undefined');
    return { kind: 'ident', loc, name: e.text };
  }
  if (TS.isPropertyAccessExpression(e)) {
    if (e.questionDotToken) unsupported(site, e, 'optional chaining');
    if (TS.isPrivateIdentifier(e.name)) unsupported(site, e, 'private field', 'use plain state fields');
    return { kind: 'member', loc, object: expr(site, e.expression), name: e.name.text };
  }
  if (TS.isElementAccessExpression(e)) {
    if (e.questionDotToken) unsupported(site, e, 'optional chaining');
    return { kind: 'index', loc, object: expr(site, e.expression), index: expr(site, e.argumentExpression) };
  }
  if (TS.isCallExpression(e)) {
    if (e.questionDotToken) unsupported(site, e, 'optional chaining');
    for (const a of e.arguments) if (TS.isSpreadElement(a)) unsupported(site, a, 'spread');
    return { kind: 'call', loc, callee: expr(site, e.expression), args: e.arguments.map((a) => expr(site, a)) };
  }
  if (TS.isPrefixUnaryExpression(e)) {
    const op = e.operator;
    if (op === TS.SyntaxKind.PlusPlusToken || op === TS.SyntaxKind.MinusMinusToken)
      unsupported(site, e, 'increment in expression');
    const u =
      op === TS.SyntaxKind.MinusToken
        ? '-'
        : op === TS.SyntaxKind.PlusToken
          ? '+'
          : op === TS.SyntaxKind.ExclamationToken
            ? '!'
            : '~';
    return { kind: 'unary', loc, op: u, arg: expr(site, e.operand) };
  }
  if (TS.isPostfixUnaryExpression(e)) unsupported(site, e, 'increment in expression');
  if (TS.isBinaryExpression(e)) {
    const k = e.operatorToken.kind;
    if (ASSIGN()[k]) unsupported(site, e, 'assignment in expression');
    if (k === TS.SyntaxKind.CommaToken) unsupported(site, e, 'comma expression');
    if (k === TS.SyntaxKind.EqualsEqualsToken) unsupported(site, e.operatorToken, '==');
    if (k === TS.SyntaxKind.ExclamationEqualsToken) unsupported(site, e.operatorToken, '!=');
    if (k === TS.SyntaxKind.QuestionQuestionToken) unsupported(site, e.operatorToken, '??');
    if (k === TS.SyntaxKind.AsteriskAsteriskToken) unsupported(site, e.operatorToken, 'exponent operator');
    if (k === TS.SyntaxKind.InKeyword) unsupported(site, e.operatorToken, 'in operator');
    if (k === TS.SyntaxKind.InstanceOfKeyword) unsupported(site, e.operatorToken, 'instanceof');
    const op = BINARY()[k];
    if (!op) unsupported(site, e.operatorToken, `operator ${e.operatorToken.getText(site.sf)}`);
    const left = expr(site, e.left);
    const right = expr(site, e.right);
    if (op === '&&' || op === '||') return { kind: 'logical', loc, op, left, right };
    return { kind: 'binary', loc, op, left, right };
  }
  if (TS.isConditionalExpression(e)) {
    return {
      kind: 'cond',
      loc,
      test: expr(site, e.condition),
      then: expr(site, e.whenTrue),
      otherwise: expr(site, e.whenFalse),
    };
  }
  if (TS.isArrayLiteralExpression(e)) {
    const elements = e.elements.map((x) => {
      if (TS.isSpreadElement(x)) unsupported(site, x, 'spread');
      if (TS.isOmittedExpression(x))
        unsupported(site, e, 'array literal with a hole', 'write every element: [a, 0, c]');
      return expr(site, x);
    });
    return { kind: 'array', loc, elements };
  }
  if (TS.isObjectLiteralExpression(e)) {
    const props: { name: string; value: Expr; loc: Loc }[] = [];
    for (const p of e.properties) {
      if (TS.isSpreadAssignment(p)) unsupported(site, p, 'spread');
      if (TS.isShorthandPropertyAssignment(p)) {
        props.push({
          name: p.name.text,
          value: { kind: 'ident', loc: locOf(site, p), name: p.name.text },
          loc: locOf(site, p),
        });
        continue;
      }
      if (!TS.isPropertyAssignment(p))
        unsupported(site, p, 'method or accessor in object literal', 'write plain `name: value` properties');
      if (!TS.isIdentifier(p.name) && !TS.isStringLiteral(p.name))
        unsupported(site, p.name, 'computed property name', 'write the field name literally');
      props.push({ name: p.name.text, value: expr(site, p.initializer), loc: locOf(site, p) });
    }
    return { kind: 'object', loc, props };
  }
  return unsupported(site, e, describe(e));
}

/** A short name of an unsupported node, used as the construct in the error. */
function describe(n: ts.Node): string {
  if (TS.isArrowFunction(n)) return 'arrow function';
  if (TS.isFunctionExpression(n)) return 'function expression';
  if (TS.isAwaitExpression(n)) return 'await';
  if (TS.isNewExpression(n)) return 'new';
  if (TS.isTemplateExpression(n) || TS.isTaggedTemplateExpression(n)) return 'template literal';
  if (TS.isSpreadElement(n)) return 'spread';
  if (TS.isTypeOfExpression(n)) return 'typeof';
  if (TS.isDeleteExpression(n)) return 'delete';
  if (TS.isVoidExpression(n)) return 'void operator';
  if (TS.isRegularExpressionLiteral(n)) return 'regular expression';
  if (TS.isBigIntLiteral(n)) return 'bigint';
  if (TS.isClassExpression(n)) return 'class';
  if (TS.isYieldExpression(n)) return 'yield';
  if (n.kind === TS.SyntaxKind.ThisKeyword) return 'this';
  if (n.kind === TS.SyntaxKind.NullKeyword) return 'null';
  if (n.kind === TS.SyntaxKind.SuperKeyword) return 'super';
  return TS.SyntaxKind[n.kind];
}

function block(site: ParseSite, s: ts.Statement): Stmt[] {
  if (TS.isBlock(s)) return s.statements.flatMap((x) => stmt(site, x));
  return stmt(site, s);
}

/** Assignment-like expressions are statements in the subset: `a = b`, `a += b`, `i++`. */
function exprStmt(site: ParseSite, node: ts.Expression): Stmt {
  const e = strip(node);
  const loc = locOf(site, e);
  if (TS.isBinaryExpression(e) && ASSIGN()[e.operatorToken.kind]) {
    if (TS.isObjectLiteralExpression(e.left) || TS.isArrayLiteralExpression(e.left))
      unsupported(site, e.left, 'destructuring');
    return {
      kind: 'assign',
      loc,
      op: ASSIGN()[e.operatorToken.kind] as AssignOp,
      target: expr(site, e.left),
      value: expr(site, e.right),
    };
  }
  if (
    (TS.isPrefixUnaryExpression(e) || TS.isPostfixUnaryExpression(e)) &&
    (e.operator === TS.SyntaxKind.PlusPlusToken || e.operator === TS.SyntaxKind.MinusMinusToken)
  ) {
    return {
      kind: 'update',
      loc,
      op: e.operator === TS.SyntaxKind.PlusPlusToken ? '++' : '--',
      target: expr(site, e.operand),
    };
  }
  return { kind: 'expr', loc, expr: expr(site, e) };
}

function declarations(site: ParseSite, list: ts.VariableDeclarationList): Stmt[] {
  const flags = list.flags;
  if (!(flags & TS.NodeFlags.Const) && !(flags & TS.NodeFlags.Let)) unsupported(site, list, 'var');
  return list.declarations.map((d) => {
    if (!TS.isIdentifier(d.name)) unsupported(site, d.name, 'destructuring');
    if (!d.initializer) unsupported(site, d, 'declaration without initializer', 'initialise every local: let x = 0');
    return {
      kind: 'let',
      loc: locOf(site, d),
      constant: (flags & TS.NodeFlags.Const) !== 0,
      name: d.name.text,
      init: expr(site, d.initializer),
    } satisfies Stmt;
  });
}

function stmt(site: ParseSite, s: ts.Statement): Stmt[] {
  const loc = locOf(site, s);
  if (TS.isVariableStatement(s)) return declarations(site, s.declarationList);
  if (TS.isExpressionStatement(s)) return [exprStmt(site, s.expression)];
  if (TS.isIfStatement(s)) {
    return [
      {
        kind: 'if',
        loc,
        test: expr(site, s.expression),
        then: block(site, s.thenStatement),
        otherwise: s.elseStatement ? block(site, s.elseStatement) : null,
      },
    ];
  }
  if (TS.isForStatement(s)) {
    let init: Stmt | null = null;
    if (s.initializer) {
      if (TS.isVariableDeclarationList(s.initializer)) {
        const ds = declarations(site, s.initializer);
        if (ds.length !== 1)
          unsupported(site, s.initializer, 'several declarations in a for header', 'declare one loop variable');
        init = ds[0] as Stmt;
      } else init = exprStmt(site, s.initializer);
    }
    return [
      {
        kind: 'for',
        loc,
        init,
        test: s.condition ? expr(site, s.condition) : null,
        update: s.incrementor ? exprStmt(site, s.incrementor) : null,
        body: block(site, s.statement),
      },
    ];
  }
  if (TS.isWhileStatement(s))
    return [{ kind: 'while', loc, test: expr(site, s.expression), body: block(site, s.statement), doWhile: false }];
  if (TS.isDoStatement(s))
    return [{ kind: 'while', loc, test: expr(site, s.expression), body: block(site, s.statement), doWhile: true }];
  if (TS.isReturnStatement(s)) return [{ kind: 'return', loc, value: s.expression ? expr(site, s.expression) : null }];
  if (TS.isBreakStatement(s)) {
    if (s.label) unsupported(site, s, 'labeled statement');
    return [{ kind: 'break', loc }];
  }
  if (TS.isContinueStatement(s)) {
    if (s.label) unsupported(site, s, 'labeled statement');
    return [{ kind: 'continue', loc }];
  }
  if (TS.isBlock(s)) return [{ kind: 'block', loc, body: s.statements.flatMap((x) => stmt(site, x)) }];
  if (TS.isEmptyStatement(s)) return [];
  if (TS.isTryStatement(s)) unsupported(site, s, 'try/catch');
  if (TS.isThrowStatement(s)) return [throwStmt(site, s, loc)];
  if (TS.isForOfStatement(s)) unsupported(site, s, 'for..of');
  if (TS.isForInStatement(s)) unsupported(site, s, 'for..in');
  if (TS.isSwitchStatement(s)) unsupported(site, s, 'switch');
  if (TS.isLabeledStatement(s)) unsupported(site, s, 'labeled statement');
  if (TS.isFunctionDeclaration(s)) unsupported(site, s, 'nested function');
  if (TS.isClassDeclaration(s)) unsupported(site, s, 'class');
  if (s.kind === TS.SyntaxKind.DebuggerStatement) unsupported(site, s, 'debugger');
  if (TS.isWithStatement(s)) unsupported(site, s, 'with');
  return unsupported(site, s, TS.SyntaxKind[s.kind]);
}

/** `throw new Error('constant')` (or "..." or a template literal without substitutions); nothing else. */
function throwStmt(site: ParseSite, s: ts.ThrowStatement, loc: Loc): Stmt {
  const e = strip(s.expression);
  if (!TS.isNewExpression(e) || !TS.isIdentifier(e.expression))
    return unsupported(site, e, 'throw of a value other than new Error(...)', HINTS['throw']);
  if (e.expression.text !== 'Error') return unsupported(site, e, `throw new ${e.expression.text}(...)`, HINTS['throw']);
  const args = e.arguments ?? [];
  const a = args[0] === undefined ? undefined : strip(args[0]);
  if (args.length !== 1 || !a || !(TS.isStringLiteral(a) || TS.isNoSubstitutionTemplateLiteral(a))) {
    return unsupported(site, a && args.length === 1 ? a : e, 'Error message that is not a constant string');
  }
  if (a.text.includes('\0'))
    return unsupported(site, a, 'NUL character in an Error message', 'remove it: the message travels as a C string');
  return { kind: 'throw', loc, message: a.text };
}

function paramType(site: ParseSite, t: ts.TypeNode | undefined): ParamType {
  if (!t) return 'unknown';
  if (t.kind === TS.SyntaxKind.NumberKeyword) return 'number';
  if (t.kind === TS.SyntaxKind.BooleanKeyword) return 'boolean';
  return 'unknown';
}

type FnNode = ts.MethodDeclaration | ts.FunctionDeclaration | FnLike;
/** A handler written as a class property: `go = (s, m) => { ... }` (the CPU backend calls it the same way). */
export type FnLike = ts.MethodDeclaration | ts.ArrowFunction | ts.FunctionExpression;

/** Parses a handler method or a module-level helper into the versioned tree. */
export function parseFunction(site: ParseSite, fn: FnNode, helper: boolean): FunctionAst {
  if (fn.modifiers?.some((m) => m.kind === TS.SyntaxKind.AsyncKeyword)) unsupported(site, fn, 'async function');
  if (fn.asteriskToken) unsupported(site, fn, 'generator', 'handlers are synchronous turns');
  if (!fn.body) unsupported(site, fn, 'function without body', 'give the method a body');
  const params = fn.parameters.map((p) => {
    if (!TS.isIdentifier(p.name)) unsupported(site, p.name, 'destructuring');
    if (p.initializer) unsupported(site, p, 'default parameter');
    if (p.dotDotDotToken) unsupported(site, p, 'rest parameter');
    const type = paramType(site, p.type);
    if (helper && type === 'unknown') {
      unsupported(site, p, 'helper parameter without a number or boolean type', `annotate it: ${p.name.text}: number`);
    }
    return { name: p.name.text, type, loc: locOf(site, p) };
  });
  let returns: ParamType | 'void' = 'unknown';
  if (helper) {
    const r = fn.type;
    if (r && r.kind === TS.SyntaxKind.VoidKeyword) returns = 'void';
    else {
      returns = paramType(site, r);
      if (returns === 'unknown')
        unsupported(
          site,
          fn,
          'helper without a number, boolean or void return type',
          'annotate it: function f(x: number): number',
        );
    }
  }
  return {
    version: AST_VERSION,
    name: fn.name && TS.isIdentifier(fn.name) ? fn.name.text : site.method,
    params,
    returns,
    // An arrow function with an expression body returns that expression.
    body: TS.isBlock(fn.body)
      ? fn.body.statements.flatMap((s) => stmt(site, s))
      : [{ kind: 'return', loc: locOf(site, fn.body), value: expr(site, fn.body) }],
    loc: locOf(site, fn),
  };
}
