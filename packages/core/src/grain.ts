import { SchemaDefinitionError } from './errors.ts';
import type { Infer, Input, StructSchema } from './schema/types.ts';
import type { StateView } from './schema/view.ts';

/**
 * A grain class is a TS class built on `Grain(spec)`: the spec holds schemas (plain data the code
 * generator walks), the subclass holds handler methods `(state, msg, ctx) => reply`.
 */
export interface MethodSpec {
  readonly request: StructSchema;
  /** Present for methods that answer; absent for tell-only methods (an ask then resolves to void). */
  readonly reply?: StructSchema;
}

export type KeyKind = 'int' | 'string';

export interface GrainSpec {
  readonly name: string;
  /** `import.meta.url` of the module that exports the class: workers import it, codegen parses it. */
  readonly module: string;
  readonly key?: KeyKind;
  readonly state: StructSchema;
  readonly methods: Readonly<Record<string, MethodSpec>>;
}

export interface MethodDef {
  readonly id: number;
  readonly name: string;
  readonly request: StructSchema;
  readonly reply: StructSchema | undefined;
}

/** The runtime description of a grain class: what backends and the code generator consume. */
export interface GrainDef<S extends GrainSpec = GrainSpec> {
  readonly spec: S;
  readonly name: string;
  readonly module: string;
  readonly keyKind: KeyKind;
  readonly state: StructSchema;
  readonly methods: readonly MethodDef[];
  readonly methodByName: ReadonlyMap<string, MethodDef>;
}

export type KeyOf<S extends GrainSpec> = S['key'] extends 'string' ? string : number;
export type MethodName<S extends GrainSpec> = Extract<keyof S['methods'], string>;
export type RequestOf<S extends GrainSpec, M extends MethodName<S>> = Infer<S['methods'][M]['request']>;
export type RequestInput<S extends GrainSpec, M extends MethodName<S>> = Input<S['methods'][M]['request']>;
export type ReplyOf<S extends GrainSpec, M extends MethodName<S>> = S['methods'][M]['reply'] extends StructSchema
  ? Infer<S['methods'][M]['reply']>
  : void;
export type ReplyInput<S extends GrainSpec, M extends MethodName<S>> = S['methods'][M]['reply'] extends StructSchema
  ? Input<S['methods'][M]['reply']>
  : void;

/** Returned by `ctx.forward`: the reply obligation moved to another grain. */
export interface Forwarded {
  readonly __forwarded: true;
}

/** What a handler may do besides computing its reply. Everything with a side effect goes through here. */
export interface GrainContext<K = number | string> {
  /** This actor's key. */
  readonly key: K;
  /** Milliseconds from the system's clock (injectable, so tests are deterministic). */
  now(): number;
  /** One-way message to another actor (same or other class), delivered inside the backend. */
  send<C extends AnyGrainClass, M extends MethodName<SpecOf<C>>>(
    grain: C,
    key: KeyOf<SpecOf<C>>,
    method: M,
    payload: RequestInput<SpecOf<C>, M>,
  ): void;
  /** Hand this ask to another actor: its reply goes to the original asker. Return the result. */
  forward<C extends AnyGrainClass, M extends MethodName<SpecOf<C>>>(
    grain: C,
    key: KeyOf<SpecOf<C>>,
    method: M,
    payload: RequestInput<SpecOf<C>, M>,
  ): Forwarded;
}

export type Handler<S extends GrainSpec, M extends MethodName<S>> = (
  state: StateView<S['state']>,
  msg: RequestOf<S, M>,
  ctx: GrainContext<KeyOf<S>>,
) => ReplyInput<S, M> | Forwarded;

export type Handlers<S extends GrainSpec> = { [M in MethodName<S>]: Handler<S, M> };

/**
 * Optional activation hooks of a grain class, run as turns of the actor: `onActivate` after its state
 * was loaded (or zeroed) and before its first message; `onDeactivate` before it is deactivated (idle
 * collection, terminate, shutdown) and before its final state is written. Not message methods: the
 * code generator translates only the methods the spec names.
 */
export interface GrainHooks<S extends GrainSpec> {
  onActivate?(state: StateView<S['state']>, ctx: GrainContext<KeyOf<S>>): void;
  onDeactivate?(state: StateView<S['state']>, ctx: GrainContext<KeyOf<S>>): void;
}

/** The method ids a hook's failure is reported under (never a message method's id). */
export const HOOK_METHOD = { onActivate: 0xfffffff0, onDeactivate: 0xfffffff1 } as const;
/** Hook names, which a grain spec may not use as message method names. */
export const HOOK_NAMES: readonly string[] = ['onActivate', 'onDeactivate'];

/** Types a handler signature can name: `deposit(s: A['state'], m: A['req']['deposit'], ctx: A['ctx'])`. */
export interface GrainTypes<S extends GrainSpec> {
  state: StateView<S['state']>;
  req: { [M in MethodName<S>]: RequestOf<S, M> };
  reply: { [M in MethodName<S>]: ReplyInput<S, M> | Forwarded };
  ctx: GrainContext<KeyOf<S>>;
  key: KeyOf<S>;
}

export interface GrainClass<S extends GrainSpec = GrainSpec> {
  readonly grain: GrainDef<S>;
  new (): Handlers<S>;
}
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyGrainClass = { readonly grain: GrainDef<any>; new (): object };
export type SpecOf<C> = C extends { readonly grain: GrainDef<infer S> } ? S : never;
export type TypesOf<C extends AnyGrainClass> = GrainTypes<SpecOf<C>>;

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function defineGrain<const S extends GrainSpec>(spec: S): GrainDef<S> {
  if (!NAME.test(spec.name)) {
    throw new SchemaDefinitionError(`grain name "${spec.name}" must be an identifier`, {
      hint: 'the name becomes a CUDA kernel symbol and a log field',
    });
  }
  if (typeof spec.module !== 'string' || !spec.module.startsWith('file:')) {
    throw new SchemaDefinitionError(`grain "${spec.name}": module must be the file URL of its module`, {
      hint: 'write module: import.meta.url in the spec',
    });
  }
  if (spec.state?.kind !== 'struct') {
    throw new SchemaDefinitionError(`grain "${spec.name}": state must be a t.struct(...)`);
  }
  const methods: MethodDef[] = [];
  for (const [name, m] of Object.entries(spec.methods)) {
    if (!NAME.test(name)) throw new SchemaDefinitionError(`grain "${spec.name}": method name "${name}" must be an identifier`);
    if (HOOK_NAMES.includes(name)) throw new SchemaDefinitionError(`grain "${spec.name}": "${name}" is an activation hook, not a message method`, { hint: 'define it as a class method (state, ctx) and leave it out of methods' });
    if (m.request?.kind !== 'struct') throw new SchemaDefinitionError(`${spec.name}.${name}: request must be a t.struct(...)`);
    if (m.reply !== undefined && m.reply.kind !== 'struct') throw new SchemaDefinitionError(`${spec.name}.${name}: reply must be a t.struct(...)`);
    methods.push({ id: methods.length, name, request: m.request, reply: m.reply });
  }
  if (methods.length === 0) throw new SchemaDefinitionError(`grain "${spec.name}" declares no methods`);
  return Object.freeze({
    spec,
    name: spec.name,
    module: spec.module,
    keyKind: spec.key ?? 'int',
    state: spec.state,
    methods,
    methodByName: new Map(methods.map((m) => [m.name, m])),
  });
}

/**
 * Base class factory. `class Account extends Grain({...}) { deposit(state, msg, ctx) { ... } }`.
 * Handler parameter types: `this['$']['state']`, or `TypesOf<typeof Account>`.
 */
export function Grain<const S extends GrainSpec>(spec: S) {
  const def = defineGrain(spec);
  abstract class GrainBase {
    static readonly grain: GrainDef<S> = def;
    /** Type carrier for handler signatures; never set at run time. */
    declare readonly $: GrainTypes<S>;
  }
  return GrainBase;
}
