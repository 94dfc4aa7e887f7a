/**
 * The small, versioned syntax tree handlers are parsed into (version 2: version 1 plus the `array`
 * expression and the `throw` statement). Only the translatable subset has node types; everything else
 * is rejected while parsing. Lowering to C has one dispatch table per node family (lower-expr.ts,
 * lower-stmt.ts), keyed by `kind`.
 */
export const AST_VERSION = 2 as const;

export interface Loc {
  readonly line: number;
  readonly column: number;
}

export type BinaryOp =
  | '+'
  | '-'
  | '*'
  | '/'
  | '%'
  | '<'
  | '<='
  | '>'
  | '>='
  | '==='
  | '!=='
  | '|'
  | '&'
  | '^'
  | '<<'
  | '>>'
  | '>>>';
export type LogicalOp = '&&' | '||';
export type UnaryOp = '-' | '+' | '!' | '~';
export type AssignOp = '=' | '+=' | '-=' | '*=' | '/=' | '%=' | '|=' | '&=' | '^=' | '<<=' | '>>=' | '>>>=';

export type Expr =
  | { readonly kind: 'num'; readonly loc: Loc; readonly value: number; readonly raw: string }
  | { readonly kind: 'bool'; readonly loc: Loc; readonly value: boolean }
  | { readonly kind: 'str'; readonly loc: Loc; readonly value: string }
  | { readonly kind: 'ident'; readonly loc: Loc; readonly name: string }
  | { readonly kind: 'member'; readonly loc: Loc; readonly object: Expr; readonly name: string }
  | { readonly kind: 'index'; readonly loc: Loc; readonly object: Expr; readonly index: Expr }
  | { readonly kind: 'call'; readonly loc: Loc; readonly callee: Expr; readonly args: readonly Expr[] }
  | { readonly kind: 'unary'; readonly loc: Loc; readonly op: UnaryOp; readonly arg: Expr }
  | { readonly kind: 'binary'; readonly loc: Loc; readonly op: BinaryOp; readonly left: Expr; readonly right: Expr }
  | { readonly kind: 'logical'; readonly loc: Loc; readonly op: LogicalOp; readonly left: Expr; readonly right: Expr }
  | { readonly kind: 'cond'; readonly loc: Loc; readonly test: Expr; readonly then: Expr; readonly otherwise: Expr }
  | {
      readonly kind: 'object';
      readonly loc: Loc;
      readonly props: readonly { readonly name: string; readonly value: Expr; readonly loc: Loc }[];
    }
  /** `[a, b, c]`: only as the value of an array/vec field of a reply or K2K payload (filled element by element). */
  | { readonly kind: 'array'; readonly loc: Loc; readonly elements: readonly Expr[] };

export type Stmt =
  | { readonly kind: 'let'; readonly loc: Loc; readonly constant: boolean; readonly name: string; readonly init: Expr }
  | { readonly kind: 'assign'; readonly loc: Loc; readonly op: AssignOp; readonly target: Expr; readonly value: Expr }
  | { readonly kind: 'update'; readonly loc: Loc; readonly op: '++' | '--'; readonly target: Expr }
  | { readonly kind: 'expr'; readonly loc: Loc; readonly expr: Expr }
  | {
      readonly kind: 'if';
      readonly loc: Loc;
      readonly test: Expr;
      readonly then: readonly Stmt[];
      readonly otherwise: readonly Stmt[] | null;
    }
  | {
      readonly kind: 'for';
      readonly loc: Loc;
      readonly init: Stmt | null;
      readonly test: Expr | null;
      readonly update: Stmt | null;
      readonly body: readonly Stmt[];
    }
  | {
      readonly kind: 'while';
      readonly loc: Loc;
      readonly test: Expr;
      readonly body: readonly Stmt[];
      readonly doWhile: boolean;
    }
  | { readonly kind: 'return'; readonly loc: Loc; readonly value: Expr | null }
  /** `throw new Error('constant')`: ends the turn with that message (turn error RG_E_THROW). */
  | { readonly kind: 'throw'; readonly loc: Loc; readonly message: string }
  | { readonly kind: 'break'; readonly loc: Loc }
  | { readonly kind: 'continue'; readonly loc: Loc }
  | { readonly kind: 'block'; readonly loc: Loc; readonly body: readonly Stmt[] };

export type ParamType = 'number' | 'boolean' | 'unknown';

export interface FunctionAst {
  readonly version: typeof AST_VERSION;
  readonly name: string;
  readonly params: readonly { readonly name: string; readonly type: ParamType; readonly loc: Loc }[];
  /** Declared return type of a helper ('unknown' for handlers, whose reply comes from the schema). */
  readonly returns: ParamType | 'void';
  readonly body: readonly Stmt[];
  readonly loc: Loc;
}
