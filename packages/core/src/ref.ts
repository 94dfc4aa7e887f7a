import type { AnyGrainClass, GrainDef, MethodName, ReplyOf, RequestInput, SpecOf } from './grain.ts';

/** Typed reference to one actor. Methods ask (a Promise of the typed reply); `tell` is one-way. */
export type GrainRef<C extends AnyGrainClass> = {
  readonly [M in MethodName<SpecOf<C>>]: (payload: RequestInput<SpecOf<C>, M>) => Promise<ReplyOf<SpecOf<C>, M>>;
} & {
  readonly key: SpecOf<C>['key'] extends 'string' ? string : number;
  /**
   * One-way sends. Returns undefined once the message is in the ring, or a Promise that settles once a
   * full ring made room for it (rejects with QueueFullError, also a tellError event): backpressure,
   * never a silent drop.
   */
  readonly tell: { readonly [M in MethodName<SpecOf<C>>]: (payload: RequestInput<SpecOf<C>, M>) => Promise<void> | undefined };
};

/** What refs need of the system; the route is opaque here (resolved once per method, passed back on send). */
interface Sender<R> {
  route(def: GrainDef, method: string): R;
  sendRoute(route: R, key: number | string, payload: unknown, ask: boolean): Promise<unknown> | undefined;
}

/** One prototype per grain class; a ref is then a single small object. */
export function makeRefFactory<R>(def: GrainDef, sys: Sender<R>): (key: number | string) => unknown {
  const proto: Record<string, unknown> = {};
  const tellProto: Record<string, unknown> = {};
  for (const m of def.methods) {
    const name = m.name;
    const route = sys.route(def, name);
    proto[name] = function (this: { key: number | string }, payload: unknown) {
      try {
        return sys.sendRoute(route, this.key, payload, true);
      } catch (e) {
        return Promise.reject(e);
      }
    };
    tellProto[name] = function (this: { key: number | string }, payload: unknown) {
      return sys.sendRoute(route, this.key, payload, false);
    };
  }
  return (key) => {
    const tell = Object.create(tellProto) as { key: number | string };
    tell.key = key;
    const ref = Object.create(proto) as { key: number | string; tell: unknown };
    ref.key = key;
    ref.tell = tell;
    return ref;
  };
}
