import type { GrainDef, MethodDef } from '@ringgrain/core/backend';
import type { Loc, ParamType } from '../front/ast.ts';
import type { ParseSite } from '../front/parse.ts';
import type { CTypes } from './ctypes.ts';
import type { GrainModule } from '../front/source.ts';
import type { VT } from './values.ts';
import type { LoopNote } from '../front/parallel.ts';

export interface Local {
  readonly cname: string;
  readonly t: VT;
  readonly constant: boolean;
  /** Told the type of each value added to or taken from this local (`+=`, `-=`): a parallel loop's sum checks them. */
  readonly onTerm?: (t: VT) => void;
}

/** A translated helper function's C name and signature. */
export interface HelperSig {
  readonly cname: string;
  readonly params: readonly ParamType[];
  readonly returns: ParamType | 'void';
}

/** What lowering asks of the translation unit (unit.ts implements it; kept here so lowering never imports the unit). */
export interface UnitServices {
  readonly types: CTypes;
  readonly mod: GrainModule;
  resolveGrain(ident: string): { def: GrainDef; id: number } | undefined;
  sender(id: number, def: GrainDef, m: MethodDef): { name: string; type: string };
  helper(name: string, loc: Loc, caller: ParseSite): HelperSig | undefined;
  /** Registers an element-parallel loop's captured-values struct and body function (C text); its id and names. */
  parallelLoop(
    method: string,
    defs: (names: { env: string; body: string; runner: string; chunk: string }) => { c: string; bulk: boolean },
  ): { id: number; env: string; body: string; runner: string; chunk: string; bulk: boolean };
  /** Records what became of a handler loop (`ringgrain codegen --explain`). */
  loopNote(note: LoopNote): void;
}

/** Per-function lowering state: scopes, roles of the handler's parameters, and failure tracking. */
export class FnScope {
  readonly scopes: Map<string, Local>[] = [new Map()];
  /** Set when the expression or statement just lowered can set t->err (index, helper, K2K, checks). */
  mayFail = false;
  loops = 0;
  private tmp = 0;
  /** A handler's C types of its state and request (element-parallel loops pass pointers to them). */
  handlerTypes: { readonly state: string; readonly req: string } | undefined;
  /**
   * In an element-parallel loop's body: the loop variable's C name, and the array lengths it indexes
   * unchecked (collected while lowering; the loop checks start >= 0 and end <= each before it goes parallel).
   */
  provenIndex: { readonly cname: string; readonly index: string; readonly bounds: Set<string> } | undefined;

  constructor(
    readonly unit: UnitServices,
    readonly site: ParseSite,
    readonly grain: GrainDef,
    /** Handler method; undefined in a helper. */
    readonly method: MethodDef | undefined,
    /** JS parameter name → role (handlers) */
    readonly roles: ReadonlyMap<string, 'state' | 'msg' | 'ctx'>,
    /** How the function leaves when t->err is set. */
    readonly abort: string,
    readonly helperReturns: 'number' | 'boolean' | 'void' | undefined,
  ) {}

  lookup(name: string): Local | undefined {
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const l = this.scopes[i]?.get(name);
      if (l) return l;
    }
    return undefined;
  }

  declare(name: string, local: Local): void {
    (this.scopes[this.scopes.length - 1] as Map<string, Local>).set(name, local);
  }

  push(): void {
    this.scopes.push(new Map());
  }

  pop(): void {
    this.scopes.pop();
  }

  temp(prefix: string): string {
    return `_${prefix}${this.tmp++}`;
  }

  check(): string {
    return `if (RG_UNLIKELY(t->err)) ${this.abort}`;
  }

  /**
   * An iteration spent; past the budget the turn fails, unless it failed already: a loop of a helper
   * evaluated after an operand that failed (an operand order lambda evaluates both) keeps the first error.
   */
  budget(): string {
    return `if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; ${this.abort} }`;
  }
}
