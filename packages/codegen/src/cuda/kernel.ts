import {
  ControlBlock,
  HOOK_METHOD,
  HOOK_NAMES,
  RingHeader,
  SlotHeader,
  t as schema,
  type GrainDef,
  type MethodDef,
} from '@ringgrain/core/backend';
import {
  BulkBoard,
  DeviceGlobals,
  DirEntry,
  OverflowHeader,
  OverflowNode,
  RouteEntry,
  makeAbi,
  scratchLayout,
  type Abi,
} from './abi.ts';
import type { FunctionAst } from '../front/ast.ts';
import { indent } from './codecs.ts';
import { constantsSection, grainSection, loopSection } from './device.ts';
import { CodegenError } from '../front/errors.ts';
import { lowerBlock } from './lower-stmt.ts';
import { kindAssertsC, kindChecksC, kindNumberC } from './kind-arith.ts';
import { kindReadersC, kindWritersC } from './kind-codecs.ts';
import { includeRuntime as rt, inlineRuntime } from './runtime.ts';
import { FnScope } from './scope.ts';
import type { LoopNote } from '../front/parallel.ts';
import { hasMethod, loadModule, parseHandler, siteFor } from '../front/source.ts';
import { Unit } from './unit.ts';
import { GatherHeader, StateMeta } from './state-meta.ts';
import { EvictRow, LoadRequest, ResidencyGlobals, ResidencyHostBlock, residencyConstants } from './residency.ts';
import { mayWriteState } from '../front/state-writes.ts';
import { TimerEntry, TimerGlobals, TimerHostBlock, TimerLaneStats, TimerRowHeader } from './abi.ts';
import { timerDefine, timerDeviceSection, timerHandlerSection } from './timers.ts';
import { reminderDefine, reminderDeviceSection, reminderHandlerSection } from './reminders.ts';
import { columnImageSection } from './column-image.ts';
import { ColumnDesc, ColumnImageHeader } from './abi.ts';

export interface GenerateOptions {
  /** Every grain class on this backend, by id (K2K targets); defaults to [def]. */
  readonly grains?: ReadonlyArray<GrainDef | undefined>;
}

export interface GeneratedKernel {
  /**
   * One CUDA C++ translation unit (NVRTC- and nvcc-compilable; codecs and handlers also build with g++): grainSource
   * with the runtime files inlined.
   */
  readonly source: string;
  /**
   * The unit as generated: the grain's own C, with `#include "<file>"` lines naming the runtime files (runtime.ts;
   * compile with -I RUNTIME_DIR).
   */
  readonly grainSource: string;
  readonly abi: Abi;
  /** The parsed syntax trees (version 1), by `method:<name>`, `hook:<name>` (activation hooks) and `helper:<name>`. */
  readonly trees: ReadonlyMap<string, FunctionAst>;
  /** Every top-level loop of the handlers: whether it runs element-parallel on the warp, and why (not). */
  readonly loops: readonly LoopNote[];
}

const ROLES = ['state', 'msg', 'ctx'] as const;

/** Translates grain class `def` (its handlers read from `def.module`) into one CUDA translation unit. */
export function generateKernel(def: GrainDef, opts: GenerateOptions = {}): GeneratedKernel {
  const grains = opts.grains ?? [def];
  const selfId = grains.indexOf(def);
  if (selfId < 0) {
    throw new CodegenError(
      'CODEGEN_SOURCE',
      'grains',
      `grain ${def.name} is not in the grains list`,
      undefined,
      'pass the same GrainDef objects the backend places, by id',
    );
  }
  const G = def.name;
  const mod = loadModule(def.module);
  const unit = new Unit(def, mod, grains);
  const types = unit.types;

  // Protocol structs come from core's schemas through the same emitter as user schemas.
  types.named(RingHeader, 'rg_RingHeader');
  types.named(SlotHeader, 'rg_SlotHeader');
  types.named(ControlBlock, 'rg_ControlBlock');
  types.named(RouteEntry, 'rg_RouteEntry');
  types.named(BulkBoard, 'rg_BulkBoard');
  types.named(DeviceGlobals, 'rg_DeviceGlobals');
  types.named(DirEntry, 'rg_DirEntry');
  types.named(OverflowHeader, 'rg_OverflowHeader');
  types.named(OverflowNode, 'rg_OverflowNode');
  types.named(StateMeta, 'rg_StateMeta');
  types.named(GatherHeader, 'rg_GatherHeader');
  types.named(ResidencyGlobals, 'rg_ResidencyGlobals');
  types.named(ResidencyHostBlock, 'rg_ResidencyHostBlock');
  types.named(LoadRequest, 'rg_LoadRequest');
  types.named(EvictRow, 'rg_EvictRow');
  types.named(TimerEntry, 'rg_TimerEntry');
  types.named(TimerRowHeader, 'rg_TimerRowHeader');
  types.named(TimerGlobals, 'rg_TimerGlobals');
  types.named(TimerLaneStats, 'rg_TimerLaneStats');
  types.named(TimerHostBlock, 'rg_TimerHostBlock');
  types.named(ColumnImageHeader, 'rg_ColumnImageHeader');
  types.named(ColumnDesc, 'rg_ColumnDesc');
  const protocolTypes = types.defs.length;

  const stateType = types.named(def.state, `rg_${G}_state`);
  const reqTypes = def.methods.map((m) => unit.typeOfRequest(def, m));
  const repTypes = def.methods.map((m) => (m.reply ? types.named(m.reply, `rg_${G}_${m.name}_rep`) : 'unsigned char'));
  const decoders = def.methods.map((m) => unit.codecs.decoder(m.request));
  const encoders = def.methods.map((m) => (m.reply ? unit.codecs.encoder(m.reply) : undefined));
  // Request encoders too: K2K self-sends use them, and the host harness re-encodes decoded requests.
  const reqEncoders = def.methods.map((m) => unit.codecs.encoder(m.request));

  const handlers = def.methods.map((m, i) => {
    const ast = parseHandler(mod, G, m.name);
    unit.trees.set(`method:${m.name}`, ast);
    const site = siteFor(mod, G, m.name);
    const roles = new Map<string, 'state' | 'msg' | 'ctx'>();
    ast.params.forEach((p, j) => {
      const role = ROLES[j];
      if (!role) {
        throw new CodegenError(
          'CODEGEN_UNSUPPORTED',
          'extra parameter',
          `handler ${G}.${m.name} has ${ast.params.length} parameters`,
          { grain: G, method: m.name, file: mod.file, line: p.loc.line, column: p.loc.column },
          'handlers take (state, msg, ctx)',
        );
      }
      roles.set(p.name, role);
    });
    const fn = new FnScope(unit, site, def, m, roles, 'return t->err;', undefined);
    fn.handlerTypes = { state: stateType, req: reqTypes[i] as string };
    const body = lowerBlock(ast.body, fn);
    const last = ast.body[ast.body.length - 1];
    const tail =
      last?.kind === 'return' || last?.kind === 'throw'
        ? ''
        : m.reply
          ? '\nt->err = RG_E_NO_REPLY;\nreturn t->err;'
          : '\nreturn RG_OK;';
    return (
      `/* ${G}.${m.name} (${mod.file}:${ast.loc.line}) */\n` +
      `RG_HD static int rg_h_${G}_${m.name}(rg_turn* t, ${stateType}* s, ${reqTypes[i]}* m, ${repTypes[i]}* r) {\n` +
      `  (void)t; (void)s; (void)m; (void)r;\n${indent(`${body}${tail}`, 2)}\n}`
    );
  });

  // Activation hooks (state, ctx): translated like handlers, run by the kernel as turns of the actor
  // (onActivate when it activates one). A hook is a tell without a message: its request is empty.
  const hookDefs: MethodDef[] = HOOK_NAMES.flatMap((name) =>
    hasMethod(mod, G, name)
      ? [{ id: HOOK_METHOD[name as keyof typeof HOOK_METHOD], name, request: schema.struct({}), reply: undefined }]
      : [],
  );
  const hooks = hookDefs.map((m) => {
    const ast = parseHandler(mod, G, m.name);
    unit.trees.set(`hook:${m.name}`, ast);
    const site = siteFor(mod, G, m.name);
    const roles = new Map<string, 'state' | 'msg' | 'ctx'>();
    ast.params.forEach((p, j) => {
      const role = j === 0 ? 'state' : j === 1 ? 'ctx' : undefined;
      if (!role) {
        throw new CodegenError(
          'CODEGEN_UNSUPPORTED',
          'extra parameter',
          `activation hook ${G}.${m.name} has ${ast.params.length} parameters`,
          { grain: G, method: m.name, file: mod.file, line: p.loc.line, column: p.loc.column },
          'hooks take (state, ctx)',
        );
      }
      roles.set(p.name, role);
    });
    const req = unit.typeOfRequest(def, m);
    const fn = new FnScope(unit, site, def, m, roles, 'return t->err;', undefined);
    fn.handlerTypes = { state: stateType, req };
    const body = lowerBlock(ast.body, fn);
    const last = ast.body[ast.body.length - 1];
    const tail = last?.kind === 'return' || last?.kind === 'throw' ? '' : '\nreturn RG_OK;';
    return (
      `/* ${G}.${m.name} (${mod.file}:${ast.loc.line}): activation hook */\n` +
      `RG_HD static int rg_hk_${G}_${m.name}(rg_turn* t, ${stateType}* s, ${req}* m) {\n` +
      `  (void)t; (void)s; (void)m; /* m: none (0), a hook reads only state and ctx */\n` +
      `${indent(`${body}${tail}`, 2)}\n}`
    );
  });
  const hookWriters = hookDefs.filter((m) => mayWriteState(unit.trees.get(`hook:${m.name}`)!, def.state));

  const scratch = scratchLayout(
    def.methods.map((m) => m.request),
    def.methods.map((m) => m.reply),
  );
  // Methods whose turns may change the state (the others only note the actor's last turn: state-meta.ts).
  const writers = def.methods.flatMap((m, i) =>
    mayWriteState(unit.trees.get(`method:${m.name}`)!, def.state) ? [i] : [],
  );
  const dispatch = [
    `union rg_${G}_req {\n${reqTypes.map((t, i) => `  ${t} m${i};`).join('\n')}\n};`,
    `union rg_${G}_rep {\n${repTypes.map((t, i) => `  ${t} m${i};`).join('\n')}\n};`,
    `/* Decodes exactly [p, p + len) as method's request; false for anything malformed. */\n` +
      `RG_HD static bool rg_${G}_decode(unsigned int method, const unsigned char* p, unsigned int len, ` +
      `rg_${G}_req* u, rg_coop* co = 0) {\n` +
      `  rg_rd r = {p, 0u, len, co};\n#if !defined(__CUDA_ARCH__)\n` +
      `  rg_zero(u, sizeof(*u)); /* on the device the worker warp zeroed its scratch */\n#endif\n` +
      `  switch (method) {\n` +
      decoders.map((d, i) => `    case ${i}u: if (!${d}(&r, &u->m${i})) return false; break;`).join('\n') +
      `\n    default: return false;\n  }\n  return r.pos == r.end;\n}`,
    `/* Re-encodes a decoded request (what the host encoder would write for it). */\n` +
      `RG_HD static bool rg_${G}_encode_request(unsigned int method, const rg_${G}_req* u, rg_wr* w) {\n` +
      `  switch (method) {\n` +
      reqEncoders.map((e, i) => `    case ${i}u: return ${e}(&u->m${i}, w);`).join('\n') +
      `\n    default: return false;\n  }\n}`,
    `RG_HD static int rg_${G}_handle(rg_turn* t, rg_${G}_state* s, rg_${G}_req* u, rg_${G}_rep* out) {\n` +
      `  switch (t->method) {\n` +
      def.methods
        .map((m, i) => `    case ${i}u: return rg_h_${G}_${m.name}(t, s, &u->m${i}, &out->m${i});`)
        .join('\n') +
      `\n    default: return RG_E_NO_REPLY;\n  }\n}`,
    `/* The reply payload; methods without a reply schema answer asks with an empty str, ` +
      `as the CPU backend does. */\n` +
      `RG_HD static bool rg_${G}_encode_reply(unsigned int method, const rg_${G}_rep* v, rg_wr* w) {\n` +
      `  switch (method) {\n` +
      encoders
        .map((e, i) => `    case ${i}u: return ${e ? `${e}(&v->m${i}, w)` : 'rg_wr_str(w, "", 0u)'};`)
        .join('\n') +
      `\n    default: return false;\n  }\n}`,
    `/* Whether a method's handler may store into the state (front/state-writes.ts): only its turns set the ` +
      `dirty mark. */\n` +
      `RG_HD static inline bool rg_${G}_writes_state(unsigned int method) {\n  switch (method) {\n` +
      writers.map((i) => `    case ${i}u:`).join('\n') +
      (writers.length ? '\n      return true;\n' : '') +
      `    default: return false;\n  }\n}`,
    `#define RG_HOOK_ON_ACTIVATE ${HOOK_METHOD.onActivate}u\n` +
      `#define RG_HOOK_ON_DEACTIVATE ${HOOK_METHOD.onDeactivate}u\n` +
      `#define RG_${G}_HAS_ON_ACTIVATE ${hookDefs.some((m) => m.name === 'onActivate') ? 1 : 0}\n` +
      `#define RG_HAS_ON_ACTIVATE RG_${G}_HAS_ON_ACTIVATE\n` +
      `#define RG_${G}_HAS_ON_DEACTIVATE ${hookDefs.some((m) => m.name === 'onDeactivate') ? 1 : 0}\n` +
      `#define RG_HAS_ON_DEACTIVATE RG_${G}_HAS_ON_DEACTIVATE\n` +
      `/* Runs activation hook 'which' (RG_HOOK_*) of the class; RG_OK where the class does not define it. */\n` +
      `RG_HD static int rg_${G}_hook(rg_turn* t, rg_${G}_state* s, unsigned int which) {\n  (void)t; (void)s;\n` +
      `  switch (which) {\n` +
      hookDefs.map((m) => `    case ${m.id}u: return rg_hk_${G}_${m.name}(t, s, 0);`).join('\n') +
      (hookDefs.length ? '\n' : '') +
      `    default: return RG_OK;\n  }\n}`,
    `/* Whether an activation hook may store into the state (front/state-writes.ts). */\n` +
      `RG_HD static inline bool rg_${G}_hook_writes(unsigned int which) {\n  switch (which) {\n` +
      hookWriters.map((m) => `    case ${m.id}u:`).join('\n') +
      (hookWriters.length ? '\n      return true;\n' : '') +
      `    default: return false;\n  }\n}`,
  ];

  const protocol = types.defs.slice(0, protocolTypes);
  const user = types.defs.slice(protocolTypes);
  const stringKeys = def.keyKind === 'string';
  const grainSource = [
    `/* Generated by @ringgrain/codegen from ${mod.file}: grain ${G} (id ${selfId}). Do not edit.
   Kernel entry: extern "C" rg_${G}_main (runtime/entry.cuh, named RG_G(main) there). */`,
    timerDefine(def),
    reminderDefine(def),
    grainSection(G, selfId, def.methods.length, stringKeys),
    constantsSection(),
    rt('prelude.cuh'),
    '/* Per scalar kind (codegen kind-arith.ts): C types as laid out, integer ranges, narrowing stores. */',
    kindAssertsC(),
    kindNumberC(),
    rt('numbers.cuh'),
    rt('turn.cuh'),
    '/* A reply or K2K payload field of an integer kind: an integer in the kind\'s range, or REPLY_MISMATCH. */',
    kindChecksC(),
    rt('msgpack-read.cuh'),
    '/* Per scalar kind (codegen kind-codecs.ts): rg_rd_<kind>, and rg_rd_a<kind> for numeric arrays. */',
    kindReadersC(),
    rt('msgpack-write.cuh'),
    '/* Per scalar kind (codegen kind-codecs.ts): rg_wr_<kind>, and rg_wr_a<kind> for numeric arrays. */',
    kindWritersC(),
    '/* ---- protocol structs (core protocol.ts schemas via layoutOf) ---------------------------------- */',
    protocol.join('\n'),
    residencyConstants(),
    rt('ring.cuh'),
    rt('k2k.cuh'),
    rt('coop.cuh'),
    '/* ---- schema structs ------------------------------------------------------------------------------ */',
    user.join('\n'),
    stateType === `rg_${G}_state` ? "" : `typedef ${stateType} rg_${G}_state;`,
    '/* ---- msgpack codecs ------------------------------------------------------------------------------ */',
    unit.codecs.defs.join('\n'),
    timerHandlerSection(def),
    reminderHandlerSection(def),
    '/* ---- K2K senders ---------------------------------------------------------------------------------- */',
    unit.senderDefs.join('\n'),
    '/* ---- helpers and handlers ---------------------------------------------------------------------- */',
    unit.helperProtos.join('\n'),
    unit.helperDefs.join('\n'),
    unit.loopDefs.join('\n'),
    handlers.join('\n'),
    hooks.join('\n'),
    dispatch.join('\n'),
    columnImageSection(def, selfId, reqTypes),
    loopSection(scratch, unit.loopFns),
    rt('host-coop.cuh'),
    rt('worker-config.cuh'),
    rt('kernel-state.cuh'),
    rt('state-meta.cuh'),
    rt('reply.cuh'),
    `#if defined(__CUDACC__)\n${reminderDeviceSection(def)}\n#endif`,
    rt('directory.cuh'),
    `#if defined(__CUDACC__)\n${timerDeviceSection(G, selfId, def, stringKeys)}\n#endif`,
    rt('turn-run.cuh'),
    rt('residency.cuh'),
    rt('worker.cuh'),
    rt('ingress.cuh'),
    rt('control.cuh'),
    rt('entry.cuh'),
  ]
    .filter((x) => x !== '')
    .join('\n');
  const source = inlineRuntime(grainSource);
  return { source, grainSource, abi: makeAbi(G, selfId, def.state, scratch), trees: unit.trees, loops: unit.loopNotes };
}
