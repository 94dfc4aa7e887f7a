import type { GrainDef, MethodDef } from '@ringgrain/core/backend';
import type { FunctionAst, Loc, ParamType } from '../front/ast.ts';
import { Codecs, indent } from './codecs.ts';
import { CTypes } from './ctypes.ts';
import { CodegenError } from '../front/errors.ts';
import { lowerBlock } from './lower-stmt.ts';
import { siteAt, type ParseSite } from '../front/parse.ts';
import { FnScope, type HelperSig, type UnitServices } from './scope.ts';
import type { LoopNote } from '../front/parallel.ts';
import { parseHelper, siteFor, type GrainModule } from '../front/source.ts';

export type { HelperSig } from './scope.ts';

/** Everything one translation unit accumulates: C types, codecs, helpers, K2K senders. */
export class Unit implements UnitServices {
  readonly types = new CTypes();
  readonly codecs = new Codecs(this.types);
  readonly helperDefs: string[] = [];
  readonly helperProtos: string[] = [];
  readonly senderDefs: string[] = [];
  /** Parsed trees, for inspection (`generateKernel(...).trees`). */
  readonly trees = new Map<string, FunctionAst>();
  private readonly helpers = new Map<string, HelperSig>();
  private readonly inProgress: string[] = [];
  private readonly senders = new Map<string, { name: string; type: string }>();
  /** Element-parallel loops: C definitions (captured-values structs and body functions), ids and names, notes. */
  readonly loopDefs: string[] = [];
  readonly loopFns: { id: number; env: string; body: string; runner: string; chunk: string; bulk: boolean }[] = [];
  readonly loopNotes: LoopNote[] = [];

  constructor(
    readonly grain: GrainDef,
    readonly mod: GrainModule,
    readonly grains: ReadonlyArray<GrainDef | undefined>,
  ) {}

  /** A grain class named in ctx.send/forward: by class identifier (same module) or by grain name. */
  resolveGrain(ident: string): { def: GrainDef; id: number } | undefined {
    const name = this.mod.classToGrain.get(ident) ?? ident;
    const id = this.grains.findIndex((g) => g?.name === name);
    const def = this.grains[id];
    return def ? { def, id } : undefined;
  }

  typeOfRequest(def: GrainDef, m: MethodDef): string {
    return this.types.named(m.request, `rg_${def.name}_${m.name}_req`);
  }

  /**
   * The C sender of K2K messages to `def.method` (emitted once). Integer keys arrive as JS numbers and
   * must be safe integers; a string-keyed target takes the interned id of the sender's own key (t->key).
   */
  sender(id: number, def: GrainDef, m: MethodDef): { name: string; type: string } {
    const key = `${id}.${m.id}`;
    const hit = this.senders.get(key);
    if (hit) return hit;
    const type = this.typeOfRequest(def, m);
    const enc = this.codecs.encoder(m.request);
    const name = `rg_send_${def.name}_${m.name}`;
    const s = { name, type };
    this.senders.set(key, s);
    const stringKey = def.keyKind === 'string';
    this.senderDefs.push(
      `RG_HD static void ${name}(rg_turn* t, ${stringKey ? 'long long k' : 'double key'}, const ${type}* m, ` +
        `bool forward) {\n` +
        indent(
          [
            ...(stringKey ? [] : ['long long k;', 'if (!rg_key_of(key, &k)) { t->err = RG_E_INVALID_KEY; return; }']),
            'rg_wr measure = {0, 0u, 0xffffffffu};',
            `if (!${enc}(m, &measure)) { t->err = RG_E_REPLY_MISMATCH; return; }`,
            'rg_k2k_ticket tk;',
            `unsigned char* p = rg_k2k_claim(t, ${id}u, k, measure.pos, &tk);`,
            'if (!p) return;',
            'rg_wr w = {p, 0u, measure.pos};',
            `${enc}(m, &w);`,
            `rg_k2k_publish(t, &tk, ${id}u, ${m.id}u, k, measure.pos, forward, ${stringKey});`,
          ].join('\n'),
          2,
        ) +
        '\n}',
    );
    return s;
  }

  /**
   * `defs` returns the loop's C definitions, and whether it defined the range runner `chunk` (a bulk-eligible loop).
   */
  parallelLoop(
    method: string,
    defs: (n: { env: string; body: string; runner: string; chunk: string }) => { c: string; bulk: boolean },
  ): { id: number; env: string; body: string; runner: string; chunk: string; bulk: boolean } {
    const id = this.loopFns.length;
    const stem = `${this.grain.name}_${method}_${id}`;
    const names = { env: `rg_env_${stem}`, body: `rg_lp_${stem}`, runner: `rg_run_${stem}`, chunk: `rg_rch_${stem}` };
    const d = defs(names);
    const fn = { id, ...names, bulk: d.bulk };
    this.loopDefs.push(d.c);
    this.loopFns.push(fn);
    return fn;
  }

  loopNote(note: LoopNote): void {
    this.loopNotes.push(note);
  }

  /** A module-level helper function, translated on first use; undefined if there is none by that name. */
  helper(name: string, loc: Loc, caller: ParseSite): HelperSig | undefined {
    if (this.inProgress.includes(name)) {
      throw new CodegenError(
        'CODEGEN_UNSUPPORTED',
        'recursion',
        `recursion is not supported in code translated to CUDA (${[...this.inProgress, name].join(' → ')})`,
        siteAt(caller, loc),
        'write the recursion as a loop',
      );
    }
    const hit = this.helpers.get(name);
    if (hit) return hit;
    const ast = parseHelper(this.mod, this.grain.name, name);
    if (!ast) return undefined;
    this.trees.set(`helper:${name}`, ast);
    const sig: HelperSig = { cname: `rg_f_${name}`, params: ast.params.map((p) => p.type), returns: ast.returns };
    this.inProgress.push(name);
    const ret = ast.returns === 'number' ? 'double' : ast.returns === 'boolean' ? 'bool' : 'void';
    const abort = ast.returns === 'void' ? 'return;' : ast.returns === 'boolean' ? 'return false;' : 'return 0.0;';
    const fn = new FnScope(
      this,
      siteFor(this.mod, this.grain.name, name),
      this.grain,
      undefined,
      new Map(),
      abort,
      ast.returns === 'unknown' ? 'number' : ast.returns,
    );
    const params = ast.params.map((p) => {
      const t = p.type === 'boolean' ? { k: 'bool' as const } : { k: 'num' as const, n: 'f64' as const };
      fn.declare(p.name, { cname: `v_${p.name}`, t, constant: false });
      return `${p.type === 'boolean' ? 'bool' : 'double'} v_${p.name}`;
    });
    const body = lowerBlock(ast.body, fn);
    const tail =
      ast.returns === 'void'
        ? ''
        : ast.returns === 'boolean'
          ? '\nreturn false;'
          : '\nreturn rg_nan(); /* falling off the end: undefined, NaN in arithmetic */';
    const head = `RG_HD static ${ret} ${sig.cname}(${['rg_turn* t', ...params].join(', ')})`;
    this.helperProtos.push(`${head};`);
    this.helperDefs.push(`${head} {\n  (void)t;\n${indent(body + tail, 2)}\n}`);
    this.inProgress.pop();
    this.helpers.set(name, sig);
    return sig;
  }
}
