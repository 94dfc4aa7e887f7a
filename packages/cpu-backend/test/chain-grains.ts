/**
 * A grain for chains across pool threads (chains.test.ts, issue 37). Workers import this module by URL,
 * so the class lives here, never in a test file.
 */
import { Grain, t, type TypesOf } from '@ringgrain/core';

/**
 * A link of a ring of `n` keys: each turn passes the token on to key + 1 (mod n). Every send is numbered
 * by its sender (`no`: 1, 2, ...); a key hears only from the key before it, so each message must carry
 * the number after the last one it got: any other is a FIFO violation (per sender → actor).
 */
export class ChainLink extends Grain({
  name: 'ChainLink',
  module: import.meta.url,
  state: t.struct({ turns: t.u32, sent: t.u32, lastIn: t.u32, violations: t.u32, inTurn: t.u32, overlaps: t.u32 }),
  methods: {
    pass: { request: t.struct({ n: t.u32, left: t.u32, no: t.u32 }) },
    stats: { request: t.struct({}), reply: t.struct({ turns: t.u32, violations: t.u32, overlaps: t.u32 }) },
  },
}) {
  pass(s: C['state'], m: C['req']['pass'], ctx: C['ctx']): void {
    if (s.inTurn !== 0) s.overlaps += 1;
    s.inTurn = 1;
    s.turns += 1;
    // no 0: a tell from the host, which starts a token.
    if (m.no !== 0) {
      if (m.no !== s.lastIn + 1) s.violations += 1;
      s.lastIn = m.no;
    }
    if (m.left > 0) {
      s.sent += 1;
      ctx.send(ChainLink, (ctx.key + 1) % m.n, 'pass', { n: m.n, left: m.left - 1, no: s.sent });
    }
    s.inTurn = 0;
  }

  stats(s: C['state']): C['reply']['stats'] {
    return { turns: s.turns, violations: s.violations, overlaps: s.overlaps };
  }
}
type C = TypesOf<typeof ChainLink>;
