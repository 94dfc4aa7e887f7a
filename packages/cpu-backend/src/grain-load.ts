import type { AnyGrainClass, GrainContext, GrainDef } from '@ringgrain/core/backend';

/** A handler method of a grain class: a pure turn `(state, message, ctx)`. */
export type HandlerFn = (state: unknown, msg: unknown, ctx: GrainContext) => unknown;

/** An activation hook (onActivate, onDeactivate). */
export type HookFn = (state: unknown, ctx: GrainContext) => unknown;

export interface LoadedGrain {
  readonly def: GrainDef;
  readonly handlers: ReadonlyArray<HandlerFn>;
  readonly instance: object;
  /** The class's activation hooks, where it defines them. */
  readonly onActivate: HookFn | undefined;
  readonly onDeactivate: HookFn | undefined;
}

/**
 * One instance of a grain class and its handler methods by method id; `missing` is the error for a method
 * with no handler.
 */
export function loadedGrain(cls: AnyGrainClass, missing: (method: string) => Error): LoadedGrain {
  const def = cls.grain as GrainDef;
  const instance = new (cls as unknown as new () => Record<string, unknown>)();
  const handlers = def.methods.map((m) => {
    const fn = instance[m.name];
    if (typeof fn !== 'function') throw missing(m.name);
    return fn as HandlerFn;
  });
  const hook = (name: string) => (typeof instance[name] === 'function' ? (instance[name] as HookFn) : undefined);
  return { def, handlers, instance, onActivate: hook('onActivate'), onDeactivate: hook('onDeactivate') };
}
