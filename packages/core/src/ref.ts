import type { AnyGrainClass, GrainDef, MethodName, ReplyOf, RequestInput, SpecOf } from './grain.ts';

/** A reply's typed-array fields (its numeric arrays), each optional. */
export type ReplyArrays<R> = R extends object
  ? { readonly [K in keyof R as R[K] extends ArrayBufferView ? K : never]?: R[K] }
  : never;

/** Options of one ask. */
export interface AskOptions<R> {
  /**
   * Caller-owned arrays to decode the reply's numeric array fields into, instead of new arrays: the
   * reply's field is then this array (or a view of its first n elements when longer), so a loop of
   * large asks allocates nothing and touches no fresh memory. The array belongs to this ask until it
   * settles; reusing it for another ask before then mixes their replies. A wrong kind throws
   * ReplyTargetError at the call; one shorter than the reply's array rejects the ask with it.
   */
  readonly into?: ReplyArrays<R>;
}

/** Typed reference to one actor. Methods ask (a Promise of the typed reply); `tell` is one-way. */
export type GrainRef<C extends AnyGrainClass> = {
  readonly [M in MethodName<SpecOf<C>>]: (
    payload: RequestInput<SpecOf<C>, M>,
    opts?: AskOptions<ReplyOf<SpecOf<C>, M>>,
  ) => Promise<ReplyOf<SpecOf<C>, M>>;
} & {
  readonly key: SpecOf<C>['key'] extends 'string' ? string : number;
  /**
   * One-way sends. Returns undefined once the message is in the ring, or a Promise that settles once a
   * full ring made room for it (rejects with QueueFullError, also a tellError event): backpressure,
   * never a silent drop.
   */
  readonly tell: {
    readonly [M in MethodName<SpecOf<C>>]: (payload: RequestInput<SpecOf<C>, M>) => Promise<void> | undefined;
  };
};

/** What refs need of the system; the route is opaque here (resolved once per method, passed back on send). */
interface Sender<R> {
  route(def: GrainDef, method: string): R;
  sendRoute(
    route: R,
    key: number | string,
    payload: unknown,
    ask: boolean,
    into?: Readonly<Record<string, unknown>>,
  ): Promise<unknown> | undefined;
}

/** One prototype per grain class; a ref is then a single small object. */
export function makeRefFactory<R>(def: GrainDef, sys: Sender<R>): (key: number | string) => unknown {
  const proto: Record<string, unknown> = {};
  const tellProto: Record<string, unknown> = {};
  for (const m of def.methods) {
    const name = m.name;
    const route = sys.route(def, name);
    proto[name] = function (
      this: { key: number | string },
      payload: unknown,
      opts?: { readonly into?: Readonly<Record<string, unknown>> },
    ) {
      try {
        return sys.sendRoute(route, this.key, payload, true, opts?.into);
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
