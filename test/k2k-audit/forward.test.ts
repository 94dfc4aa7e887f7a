/**
 * Forward chains of 1–50 hops across threads and key kinds (int Fwd, string FwdS), including hops to the
 * same actor and back and forth between two; forwards mixed with sends in one turn; a chain whose end
 * throws or forwards to a method it may not; string-keyed grains sending to int-keyed ones and back.
 */
import { HandlerError, type GrainSystem } from '@ringgrain/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fwd, FwdS, MODE, Tally, TallyS } from './grains.ts';
import { CONFIGS, guard, rng, settle, startSystem } from './helpers.ts';

const INTS = 30;
const STRS = 20;

/** Path element → the id a hop adds (Fwd key k → k; FwdS `s<n>` → -(n + 1), the element itself). */
const idOf = (v: number) => v;

function randomPath(r: ReturnType<typeof rng>, len: number): Int32Array {
  const p = new Int32Array(len);
  const kind = r.int(4);
  const a = r.next() < 0.5 ? r.int(INTS) : -1 - r.int(STRS);
  const b = r.next() < 0.5 ? r.int(INTS) : -1 - r.int(STRS);
  for (let i = 0; i < len; i++) {
    if (kind === 0)
      p[i] = i % 2 === 0 ? a : b; // back and forth between two actors
    else if (kind === 1)
      p[i] = a; // the same actor again and again (a forward to itself)
    else p[i] = r.next() < 0.5 ? r.int(INTS) : -1 - r.int(STRS);
  }
  return p;
}

describe.each(CONFIGS)('$name', (cfg) => {
  let system: GrainSystem;
  beforeAll(async () => {
    system = await startSystem(cfg.backend, [[Fwd, { slotSize: 512 }], [FwdS, { slotSize: 512 }], Tally, TallyS], {
      threads: cfg.threads,
    });
  });
  afterAll(() => system?.shutdown());

  // Visits per actor, and tallies per tag, over every test of this describe.
  const visitsInt = new Array<number>(INTS).fill(0);
  const visitsStr = new Array<number>(STRS).fill(0);
  const tallyInt = new Map<number, number>();
  const tallyStr = new Map<number, number>();
  const add = (m: Map<number, number>, k: number, by: number) => m.set(k, (m.get(k) ?? 0) + by);
  const visit = (v: number) => (v >= 0 ? visitsInt[v]!++ : visitsStr[-v - 1]!++);

  async function checkVisits(): Promise<void> {
    const ints = await Promise.all(Array.from({ length: INTS }, (_, k) => system.grain(Fwd, k).seen({})));
    const strs = await Promise.all(Array.from({ length: STRS }, (_, k) => system.grain(FwdS, `s${k}`).seen({})));
    expect(ints.map((x) => x.seen)).toEqual(visitsInt);
    expect(strs.map((x) => x.seen)).toEqual(visitsStr);
    for (const [tag, n] of tallyInt) expect([tag, (await system.grain(Tally, tag).read({})).n]).toEqual([tag, n]);
    for (const [tag, n] of tallyStr)
      expect([tag, await system.grain(TallyS, `t${tag}`).read({})]).toEqual([tag, { n, keyOk: true }]);
  }

  it(
    '200 chains of 1–50 hops in flight at once (self, ping-pong, random; int and string keys) each answer ' +
      'their asker with the right value',
    async () => {
      const r = rng(17 + cfg.threads);
      const asks: Array<Promise<unknown>> = [];
      const want: unknown[] = [];
      for (let c = 0; c < 200; c++) {
        const len = 1 + r.int(50);
        const path = randomPath(r, len);
        const start = r.next() < 0.5 ? r.int(INTS) : -1 - r.int(STRS);
        const mode = r.int(4); // sendBefore / sendAfter in any mix
        const tag = 1000 + c;
        let acc = 0.5 + idOf(start);
        visit(start);
        for (const v of path) {
          acc += idOf(v);
          visit(v);
        }
        // Every hop sends one Tally inc before its forward (mode 1) and, mode 2, one TallyS inc after it
        // (the last hop replies, and sends after computing the reply).
        if (mode & MODE.sendBefore) add(tallyInt, tag, len + 1);
        if (mode & MODE.sendAfter) add(tallyStr, tag, len + 1);
        want.push({ acc, at: path[len - 1], hops: len, tag });
        const req = { path, i: 0, acc: 0.5, mode, tag };
        asks.push(start >= 0 ? system.grain(Fwd, start).hop(req) : system.grain(FwdS, `s${-start - 1}`).hop(req));
      }
      const got = await guard(Promise.all(asks), 'chains');
      expect(got).toEqual(want);
      expect(await settle(system, 'chains')).toEqual([]);
      await checkVisits();
    },
  );

  it('a chain of 0 hops replies itself; a chain that ends where it started replies from there', async () => {
    const empty = new Int32Array(0);
    visit(3);
    expect(await system.grain(Fwd, 3).hop({ path: empty, i: 0, acc: 1, mode: 0, tag: 0 })).toEqual({
      acc: 4,
      at: 3,
      hops: 0,
      tag: 0,
    });
    visit(-2);
    expect(await system.grain(FwdS, 's1').hop({ path: empty, i: 0, acc: 1, mode: 0, tag: 0 })).toEqual({
      acc: -1,
      at: -2,
      hops: 0,
      tag: 0,
    });
    const loop = Int32Array.of(-5, 7, -5, 7, 3);
    for (const v of [3, ...loop]) visit(v);
    expect(await system.grain(Fwd, 3).hop({ path: loop, i: 0, acc: 0, mode: 0, tag: 0 })).toEqual({
      acc: 3 - 5 + 7 - 5 + 7 + 3,
      at: 3,
      hops: 5,
      tag: 0,
    });
    expect(await settle(system, 'short chains')).toEqual([]);
    await checkVisits();
  });

  it(
    "the last hop throws: the asker gets HandlerError with that handler's message; forwarding to a tell-only " +
      'method or another reply schema fails the turn, typed',
    async () => {
      const r = rng(5 + cfg.threads);
      for (let c = 0; c < 30; c++) {
        const len = 1 + r.int(50);
        const path = randomPath(r, len);
        const start = r.int(INTS);
        visit(start);
        for (const v of path) visit(v);
        const last = path[len - 1]!;
        const lastKey = last >= 0 ? String(last) : `s${-last - 1}`;
        const mode = [MODE.throwLast, MODE.forwardToTell, MODE.forwardToOtherSchema][c % 3]! | MODE.sendBefore;
        add(tallyInt, 5000 + c, len + 1);
        const e = await guard(
          system
            .grain(Fwd, start)
            .hop({ path, i: 0, acc: 0, mode, tag: 5000 + c })
            .then(
              (v) => v,
              (x: unknown) => x,
            ),
          `failing chain ${c}`,
        );
        expect(e).toBeInstanceOf(HandlerError);
        const lastClass = last >= 0 ? 'Fwd' : 'FwdS';
        if (mode & MODE.throwLast)
          expect((e as Error).message).toBe(`${lastClass}.hop failed: chain end ${lastKey} tag ${5000 + c}`);
        else if (mode & MODE.forwardToTell)
          expect((e as Error).message).toMatch(new RegExp(`^${lastClass}\\.hop failed: .*forward needs Tally\\.inc`));
        else
          expect((e as Error).message).toMatch(new RegExp(`^${lastClass}\\.hop failed: .*forward needs Tally\\.read`));
      }
      expect(await settle(system, 'failing chains')).toEqual([]);
      await checkVisits();
    },
  );

  it(
    'forward from a turn that is a tell (no asker) sends on: ' + 'the chain runs to its end, no reply, no error',
    async () => {
      const r = rng(41 + cfg.threads);
      const errors: unknown[] = [];
      const onErr = (e: unknown) => errors.push(e);
      system.on('tellError', onErr);
      for (let c = 0; c < 40; c++) {
        const path = randomPath(r, 1 + r.int(50));
        const start = r.int(INTS);
        visit(start);
        for (const v of path) visit(v);
        add(tallyInt, 7000 + c, path.length + 1);
        system.grain(Fwd, start).tell.hop({ path, i: 0, acc: 0, mode: MODE.sendBefore, tag: 7000 + c });
      }
      expect(await settle(system, 'told chains')).toEqual([]);
      system.off('tellError', onErr);
      expect(errors).toEqual([]);
      await checkVisits();
    },
  );

  it(
    'a handler that throws after it forwarded: the asker gets the forwarded reply (the obligation moved), ' +
      'the throw is a tellError event; the same on every backend',
    async () => {
      const errors: Array<{ grain: string; method: string; error: Error }> = [];
      const onErr = (e: { grain: string; method: string; error: Error }) => errors.push(e);
      system.on('tellError', onErr);
      const path = Int32Array.of(4, -3, 4);
      for (const v of [2, ...path]) visit(v);
      const got = await guard(
        system.grain(Fwd, 2).hop({ path, i: 0, acc: 0, mode: MODE.throwAfterForward, tag: 1 }),
        'throw after forward',
      );
      expect(got).toEqual({ acc: 2 + 4 - 3 + 4, at: 4, hops: 3, tag: 1 });
      expect(await settle(system, 'throw after forward')).toEqual([]);
      system.off('tellError', onErr);
      // Every hop but the last forwarded, then threw: three events, from Fwd 2, FwdS s2, Fwd 4.
      expect(errors.map((e) => `${e.grain}.${e.method}: ${e.error.message}`).sort()).toEqual(
        ['Fwd.hop: after forward at 2', 'Fwd.hop: after forward at 4', 'FwdS.hop: after forward at s2'].map((m) =>
          expect.stringContaining(m.split(': ')[1]!),
        ),
      );
      await checkVisits();
    },
  );

  it(
    'string-keyed grains send to int-keyed ones and back ' + '(TallyS → Tally → TallyS), ctx.key right in each',
    async () => {
      const r = rng(77 + cfg.threads);
      for (let i = 0; i < 400; i++) {
        const from = r.int(10);
        const to = r.int(10);
        const by = 1 + r.int(5);
        // TallyS t<from>.relay → Tally <to>.back (+by) → TallyS t<to>.inc (+by).
        add(tallyInt, 9000 + to, by);
        add(tallyStr, 9000 + to, by);
        system.grain(TallyS, `t${9000 + from}`).tell.relay({ to: 9000 + to, by });
      }
      expect(await settle(system, 'string/int relays')).toEqual([]);
      await checkVisits();
    },
  );
});
