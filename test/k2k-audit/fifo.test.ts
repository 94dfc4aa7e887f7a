/**
 * FIFO per sender → actor under seeded random workloads (host senders, actors of two classes fanning out
 * across threads), with small rings so K2K sends wait in the overflow path; a handler that throws in the
 * middle of a fan-out; the receiving kernel deactivated and activated while K2K flows into it.
 */
import { HandlerError, type GrainSystem } from '@ringgrain/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAN, Gate, HOSTS, SENDERS, SINK0, SINKS, SRC0, SRCS, Sink, Src } from './grains.ts';
import { CONFIGS, guard, rng, settle, startSystem, tick } from './helpers.ts';

/** expected[target][sender]: how many numbered messages that sender sent that target (= the last number). */
type Model = number[][];
const newModel = (): Model => Array.from({ length: SINKS }, () => new Array<number>(SENDERS).fill(0));

async function readSinks(system: GrainSystem, cls: typeof Sink | typeof Gate = Sink) {
  return Promise.all(
    Array.from({ length: SINKS }, (_, k) => guard(system.grain(cls as typeof Sink, k).read({}), `read ${k}`)),
  );
}

/** Compares what every receiver saw with the model: per sender the last number, no violation, the total. */
async function checkAgainst(system: GrainSystem, model: Model, cls: typeof Sink | typeof Gate = Sink): Promise<void> {
  const got = await readSinks(system, cls);
  const diffs: string[] = [];
  for (let t = 0; t < SINKS; t++) {
    const r = got[t]!;
    const want = model[t]!;
    const total = want.reduce((a, b) => a + b, 0);
    if (r.bad !== 0)
      diffs.push(
        `${cls.grain.name} ${t}: ${r.bad} order violations, first sender ${Math.floor(r.first / 1e6)} ` +
          `n ${r.first % 1e6}`,
      );
    if (r.count !== total) diffs.push(`${cls.grain.name} ${t}: count ${r.count} != ${total}`);
    for (let s = 0; s < SENDERS; s++)
      if (r.last[s] !== want[s]) diffs.push(`${cls.grain.name} ${t} sender ${s}: last ${r.last[s]} != ${want[s]}`);
  }
  expect(diffs.slice(0, 20)).toEqual([]);
}

function targets(r: ReturnType<typeof rng>, max = FAN): Int32Array {
  const n = 1 + r.int(max);
  const to = new Int32Array(n);
  for (let i = 0; i < n; i++) to[i] = r.next() < 0.3 ? r.int(4) : r.int(SINKS); // hot targets 0..3
  return to;
}

describe.each(CONFIGS)('$name', (cfg) => {
  let system: GrainSystem;
  const tellErrors: Array<{ grain: string; method: string; message: string }> = [];
  beforeAll(async () => {
    // 16 slots a lane: bursts of K2K fill the rings, so sends wait in the senders' overflow queues;
    // host tells into the same small inbound rings wait too (backpressure).
    system = await startSystem(
      cfg.backend,
      [
        [Sink, { ringCapacity: 16, slotSize: 512 }],
        [Src, { ringCapacity: 16, slotSize: 512 }],
        [Gate, { ringCapacity: 16, slotSize: 512 }],
      ],
      { threads: cfg.threads },
    );
    system.on('tellError', (e: { grain: string; method: string; error: Error }) =>
      tellErrors.push({ grain: e.grain, method: e.method, message: e.error.message }),
    );
  });
  afterAll(() => system?.shutdown());

  // One model for the whole describe: every test adds to it, and each checks the totals so far.
  const model = newModel();
  const srcNext: number[][] = Array.from({ length: SRCS }, () => new Array<number>(SINKS).fill(0));

  function srcFan(k: number, to: ArrayLike<number>): void {
    for (let i = 0; i < to.length; i++) {
      srcNext[k]![to[i]!]! += 1;
      model[to[i]!]![SRC0 + k]! += 1;
    }
  }

  it.each([1, 2, 3])(
    'seeded random workload %i: host and actor senders, random fan-out; every actor sees each sender in ' +
      'order, totals equal the model',
    async (seed) => {
      const r = rng(seed * 7919 + cfg.threads);
      const waits: Promise<unknown>[] = [];
      for (let op = 0; op < 1500; op++) {
        const x = r.next();
        if (x < 0.4) {
          const h = r.int(HOSTS);
          const t = r.next() < 0.3 ? r.int(4) : r.int(SINKS);
          const n = ++model[t]![h]!;
          const p = system.grain(Sink, t).tell.seq({ s: h, n });
          if (p) waits.push(p);
        } else if (x < 0.65) {
          const k = r.int(SRCS);
          const to = targets(r);
          srcFan(k, to);
          const p = system.grain(Src, k).tell.fan({ to });
          if (p) waits.push(p);
        } else if (x < 0.9) {
          const k = r.int(SINKS);
          const to = targets(r);
          for (const t of to) model[t]![SINK0 + k]! += 1;
          const p = system.grain(Sink, k).tell.fan({ to });
          if (p) waits.push(p);
        } else if (x < 0.95) {
          // A burst larger than the ring from one actor to one target.
          const t = r.int(SINKS);
          const n = 20 + r.int(80);
          if (r.next() < 0.5) {
            const k = r.int(SRCS);
            srcFan(k, new Array<number>(n).fill(t));
            const p = system.grain(Src, k).tell.burst({ to: t, n });
            if (p) waits.push(p);
          } else {
            const k = r.int(SINKS);
            model[t]![SINK0 + k]! += n;
            const p = system.grain(Sink, k).tell.burst({ to: t, n });
            if (p) waits.push(p);
          }
        } else if (x < 0.965) {
          // Host rows in bulk (64 rows or more go as column images on the CPU backend), in order with the
          // same host sender's plain tells; or as asks of a tell-only method.
          const h = r.int(HOSTS);
          const rows = 1 + r.int(r.next() < 0.5 ? 63 : 200);
          const key = new Int32Array(rows);
          const sc = new Int32Array(rows).fill(h);
          const n = new Int32Array(rows);
          for (let i = 0; i < rows; i++) {
            const t = r.next() < 0.3 ? r.int(4) : r.int(SINKS);
            key[i] = t;
            n[i] = ++model[t]![h]!;
          }
          if (r.next() < 0.7) {
            // Rows past the ring's room wait in order (idle() counts them as busy until written).
            system.tellMany(Sink, 'seq', { key, s: sc, n });
          } else waits.push(system.askMany(Sink, 'seqAck', { key, s: sc, n }));
        } else if (x < 0.975) {
          // A send, a forward and a send to one target in one turn: the target sees them in that order,
          // and the forward's reply (the target's count) reaches this asker.
          const k = r.int(SRCS);
          const t = r.int(SINKS);
          srcFan(k, [t, t, t]);
          waits.push(
            system
              .grain(Src, k)
              .mix({ to: t })
              .then((v) => {
                if (!(v.count >= 2)) throw new Error(`mix answered ${JSON.stringify(v)}`);
              }),
          );
        } else if (x < 0.985) {
          await tick();
        } else {
          // An ask in the middle: answered in order after this actor's earlier messages from the host.
          await guard(system.grain(Sink, r.int(SINKS)).read({}), 'read mid-run');
        }
      }
      await guard(Promise.all(waits), 'waiting tells');
      expect(await settle(system, `seed ${seed}`)).toEqual([]);
      await checkAgainst(system, model);
      const m = system.metrics();
      expect(m['Sink']!.k2kReceived).toBeGreaterThan(0);
      expect(m['Sink']!.overflow!.inUse).toBe(0);
      expect(m['Src']!.rejected + m['Sink']!.rejected + m['Sink']!.hostRejected).toBe(0);
      const nexts = await Promise.all(Array.from({ length: SRCS }, (_, k) => system.grain(Src, k).next({})));
      for (let k = 0; k < SRCS; k++) expect(Array.from(nexts[k]!.next)).toEqual(srcNext[k]);
    },
  );

  it(
    'bursts into 16-slot rings from every sender at once: nothing lost, order kept, overflow figures move ' +
      'and return to 0 in use',
    async () => {
      const before = system.metrics()['Sink']!.overflow!;
      const waits: Promise<unknown>[] = [];
      for (let round = 0; round < 3; round++) {
        for (let k = 0; k < SRCS; k++) {
          const t = (k + round) % 4;
          srcFan(k, new Array<number>(300).fill(t));
          const p = system.grain(Src, k).tell.burst({ to: t, n: 300 });
          if (p) waits.push(p);
        }
        for (let k = 0; k < SINKS; k += 3) {
          const t = (k + round) % 4;
          model[t]![SINK0 + k]! += 200;
          const p = system.grain(Sink, k).tell.burst({ to: t, n: 200 });
          if (p) waits.push(p);
        }
        for (let h = 0; h < HOSTS; h++) {
          for (let i = 0; i < 100; i++) {
            const t = (h + i) % 4;
            const p = system.grain(Sink, t).tell.seq({ s: h, n: ++model[t]![h]! });
            if (p) waits.push(p);
          }
        }
      }
      await guard(Promise.all(waits), 'waiting tells');
      expect(await settle(system, 'bursts')).toEqual([]);
      const after = system.metrics()['Sink']!.overflow!;
      expect(after.overflowed).toBeGreaterThan(before.overflowed);
      expect(after.highWater).toBeGreaterThan(0);
      expect(after.inUse).toBe(0);
      await checkAgainst(system, model);
    },
  );

  it(
    'a handler that throws in the middle of a fan-out: the sends made before the throw are delivered (in ' +
      'order), the rest never sent; the ask rejects with HandlerError, a tell is a tellError',
    async () => {
      const r = rng(99 + cfg.threads);
      const errs: unknown[] = [];
      tellErrors.length = 0;
      let tellThrows = 0;
      for (let i = 0; i < 60; i++) {
        const k = r.int(SRCS);
        const to = targets(r);
        const throwAt = r.int(to.length + 1); // to.length: no throw
        srcFan(k, to.subarray(0, throwAt));
        if (i % 2 === 0) {
          errs.push(
            await guard(
              system
                .grain(Src, k)
                .fanThrow({ to, throwAt })
                .then(
                  (v) => v,
                  (e: unknown) => e,
                ),
              'fanThrow',
            ),
          );
          const e = errs[errs.length - 1];
          if (throwAt < to.length) {
            expect(e).toBeInstanceOf(HandlerError);
            expect((e as Error).message).toBe(`Src.fanThrow failed: fanThrow at ${throwAt} of ${to.length}`);
          } else expect(e).toEqual({ sent: to.length });
        } else {
          if (throwAt < to.length) tellThrows++;
          system.grain(Src, k).tell.fanThrowTell({ to, throwAt });
        }
        // Host messages to the same targets interleave with the fan-outs.
        const t = to[0]!;
        system.grain(Sink, t).tell.seq({ s: 0, n: ++model[t]![0]! });
      }
      expect(await settle(system, 'throws')).toEqual([]);
      await checkAgainst(system, model);
      expect(tellErrors.length).toBe(tellThrows);
      for (const e of tellErrors) {
        expect(e.grain).toBe('Src');
        expect(e.method).toBe('fanThrowTell');
        expect(e.message).toMatch(/fanThrow at \d+ of \d+/);
      }
    },
  );

  it(
    'deactivate()/activate() of the receiving kernel while K2K from another class flows into it: messages ' +
      'queue, run after activate, none lost, order kept',
    async () => {
      const gate = newModel();
      const gateNext: number[][] = Array.from({ length: SRCS }, () => new Array<number>(SINKS).fill(0));
      const r = rng(1234 + cfg.threads);
      const waits: Promise<unknown>[] = [];
      const flood = (ops: number) => {
        for (let op = 0; op < ops; op++) {
          if (r.next() < 0.7) {
            const k = r.int(SRCS);
            const to = targets(r, 8);
            const rounds = 1 + r.int(6);
            for (let j = 0; j < rounds; j++)
              for (const t of to) {
                gateNext[k]![t]! += 1;
                gate[t]![SRC0 + k]! += 1;
              }
            const p = system.grain(Src, k).tell.fanGate({ to, rounds });
            if (p) waits.push(p);
          } else {
            const h = r.int(HOSTS);
            const t = r.int(SINKS);
            const p = system.grain(Gate, t).tell.seq({ s: h, n: ++gate[t]![h]! });
            if (p) waits.push(p);
          }
        }
      };
      const kernel = system.kernel(Gate);
      for (let cycle = 0; cycle < 4; cycle++) {
        flood(150);
        await tick();
        await guard(kernel.deactivate(), 'deactivate');
        const doneAt = system.metrics()['Gate']!.processed;
        flood(150);
        // Let Src run its fan-outs into the paused kernel (they fill its rings, then wait in overflow).
        await guard(system.grain(Src, 0).next({}), 'Src ask while Gate is deactivated');
        for (let i = 0; i < 20; i++) await tick();
        expect(system.metrics()['Gate']!.processed).toBe(doneAt);
        expect(kernel.state).toBe('deactivated');
        await guard(kernel.activate(), 'activate');
      }
      flood(100);
      // Host tells past the inbound ring's room returned Promises: they resolve once written (after activate).
      await guard(Promise.all(waits), 'waiting tells');
      expect(await settle(system, 'lifecycle')).toEqual([]);
      await checkAgainst(system, gate, Gate);
      const nexts = await Promise.all(Array.from({ length: SRCS }, (_, k) => system.grain(Src, k).next({})));
      expect(nexts.length).toBe(SRCS);
      const m = system.metrics()['Gate']!;
      expect(m.rejected + m.hostRejected).toBe(0);
      expect(m.overflow!.overflowed).toBeGreaterThan(0);
    },
  );
});
