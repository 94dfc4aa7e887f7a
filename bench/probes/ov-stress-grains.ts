import { Grain, t, type TypesOf } from '../../packages/core/src/index.ts';

/** Senders whose per-target order the targets check (keys 0..TRACKED-1; the handler uses the literal 32). */
export const TRACKED = 32;

/**
 * The K2K overflow stress of bench/probes/ov-stress.ts. A `fire` turn sends `fan` `hit`s to targets taken
 * round-robin from the request's list; a target counts what it got, sums a value that names the message,
 * and checks per-sender order (seq strictly increasing) for the first 32 senders. With small partition
 * queues almost every hit goes through the target kernel's overflow lists, appended to by every worker
 * warp (and lane) at once.
 */
export class Blast extends Grain({
  name: 'Blast',
  module: import.meta.url,
  state: t.struct({ got: t.u32, sum: t.u32, bad: t.u32, last: t.array(t.u32, TRACKED) }),
  methods: {
    fire: { request: t.struct({ round: t.u32, fan: t.u32, targets: t.vec(t.i32, 32) }) },
    hit: { request: t.struct({ from: t.i32, seq: t.u32, v: t.u32 }) },
    read: { request: t.struct({}), reply: t.struct({ got: t.u32, sum: t.u32, bad: t.u32 }) },
  },
}) {
  fire(_s: B['state'], m: B['req']['fire'], ctx: B['ctx']): void {
    const n = m.targets.length;
    for (let i = 0; i < m.fan; i++) {
      const to = m.targets[(ctx.key + i) % n]!;
      // blastValue(key, round, i), written out: handlers cannot call module functions.
      const v = ((ctx.key * 40503) ^ (m.round * 2654435) ^ (i * 97)) >>> 0;
      ctx.send(Blast, to, 'hit', { from: ctx.key, seq: m.round * m.fan + i + 1, v: v });
    }
  }

  hit(s: B['state'], m: B['req']['hit']): void {
    s.got = s.got + 1;
    s.sum = (s.sum + m.v) >>> 0;
    if (m.from < 32) {
      if (m.seq <= s.last[m.from]!) s.bad = s.bad + 1;
      s.last[m.from] = m.seq;
    }
  }

  read(s: B['state']): B['reply']['read'] {
    return { got: s.got, sum: s.sum, bad: s.bad };
  }
}
type B = TypesOf<typeof Blast>;

/** What the handler computes for message i of sender `key` in `round` (the JS side of the check). */
export function blastValue(key: number, round: number, i: number): number {
  return ((key * 40503) ^ (round * 2654435) ^ (i * 97)) >>> 0;
}
