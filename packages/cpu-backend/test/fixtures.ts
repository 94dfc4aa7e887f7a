import { Grain, t, type TypesOf } from '@ringgrain/core';

/** CPU-backend-only fixtures: handlers that misbehave the way only JavaScript can. */
export class Crashy extends Grain({
  name: 'Crashy',
  module: import.meta.url,
  state: t.struct({ n: t.u32 }),
  methods: {
    ping: { request: t.struct({}), reply: t.struct({ n: t.u32 }) },
    /** Ends the worker thread: the backend must report a fault, and pending asks must fail typed. */
    exit: { request: t.struct({}), reply: t.struct({ n: t.u32 }) },
    /** Never returns: the heartbeat stops while an ask waits. */
    spin: { request: t.struct({}), reply: t.struct({ n: t.u32 }) },
    /** Sends to a grain that is not on this backend. */
    stray: { request: t.struct({}), reply: t.struct({ n: t.u32 }) },
    /** A tell that counts, and ends the worker thread where `die` is 1 (mid tellMany column image). */
    count: { request: t.struct({ die: t.u32 }) },
    /** Ends the worker thread, whose teardown an 'exit' listener of its own then holds for `ms`. */
    slowExit: { request: t.struct({ ms: t.u32 }), reply: t.struct({ n: t.u32 }) },
  },
}) {
  ping(s: C['state']): C['reply']['ping'] {
    s.n += 1;
    return { n: s.n };
  }
  exit(): C['reply']['exit'] {
    process.exit(3);
  }
  spin(s: C['state']): C['reply']['spin'] {
    for (;;) s.n += 1;
  }
  count(s: C['state'], m: C['req']['count']): void {
    if (m.die === 1) process.exit(3);
    s.n += 1;
  }
  slowExit(_s: C['state'], m: C['req']['slowExit']): C['reply']['slowExit'] {
    process.on('exit', () => {
      const until = Date.now() + m.ms;
      while (Date.now() < until);
    });
    process.exit(3);
  }
  stray(_s: C['state'], _m: C['req']['stray'], ctx: C['ctx']): C['reply']['stray'] {
    ctx.send(Elsewhere, 1, 'ping', {});
    return { n: 0 };
  }
}
type C = TypesOf<typeof Crashy>;

export class Elsewhere extends Grain({
  name: 'Elsewhere',
  module: import.meta.url,
  state: t.struct({ n: t.u32 }),
  methods: { ping: { request: t.struct({}) } },
}) {
  ping(s: E['state']): void {
    s.n += 1;
  }
}
type E = TypesOf<typeof Elsewhere>;

/** Its spec names a module that does not export it: loading must fail with GrainModuleError. */
export const Misplaced = Grain({
  name: 'Misplaced',
  module: new URL('../src/errors.ts', import.meta.url).href,
  state: t.struct({ n: t.u32 }),
  methods: { ping: { request: t.struct({}) } },
});
