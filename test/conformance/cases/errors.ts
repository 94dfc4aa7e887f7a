/**
 * Failures as typed errors: handler errors, schema violations, oversize payloads, unknown grains and
 * methods, and full queues (backlog, QueueFullError, nothing silently dropped).
 */
import { HandlerError, PayloadTooLargeError, QueueFullError, SchemaValidationError } from '@ringgrain/core';
import { DecodeError, UnknownGrainError, UnknownMethodError } from '@ringgrain/core/errors';
import type { GrainDef } from '@ringgrain/core/types';
import { HOST_SENDER, SLOT } from '@ringgrain/core/backend';
import { expect } from 'vitest';
import { Numbers, Seq, Unregistered } from '../../fixtures/grains.ts';
import { rejection, thrown, until, sleep, type ConformanceCase } from './helpers.ts';

export const errorCases: ConformanceCase[] = [
  {
    name: 'handler errors reject the ask with the handler message; the actor keeps its state and runs',
    grains: [[Numbers]],
    async run({ system }) {
      const ref = system.grain(Numbers, 500);
      await system.idle(); // earlier cases' turns counted before the baseline is read
      const errorsBefore = system.metrics()['Numbers']!.handlerErrors;
      expect(await ref.add({ by: 10 })).toEqual({ count: 1, total: 10 });
      const e = await rejection(ref.fail({ code: 3 }));
      expect(e).toBeInstanceOf(HandlerError);
      expect(e.message).toContain('refused: code must be zero');
      expect((e as HandlerError).method).toBe('fail');
      expect(await ref.fail({ code: 0 })).toEqual({ ok: true });
      expect(await ref.add({ by: 1 })).toEqual({ count: 3, total: 11 });
      // A failing tell has no asker: it surfaces as a tellError event, never silently.
      const tellErrors: Error[] = [];
      system.on('tellError', (x) => tellErrors.push(x.error));
      ref.tell.failTell({ code: 1 });
      await until('tellError event', async () => tellErrors.length === 1);
      expect(tellErrors[0]).toBeInstanceOf(HandlerError);
      expect(tellErrors[0]!.message).toContain('tell refused');
      await system.idle(); // counters are published between batches: exact once idle
      expect(system.metrics()['Numbers']!.handlerErrors - errorsBefore).toBe(2);
    },
  },
  {
    name: 'schema violations fail with SchemaValidationError naming the zod path; nothing is sent',
    grains: [[Numbers]],
    async run({ system, metrics = async () => system.metrics() }) {
      const ref = system.grain(Numbers, 600) as unknown as Record<string, (p: unknown) => Promise<unknown>>;
      const sentBefore = (await metrics())['Numbers']!.sent;
      const bad: Array<[string, unknown, string]> = [
        ['add', { by: 'one' }, 'by'],
        ['add', { by: 1.5 }, 'by'],
        ['echo', { f32: 1, f64: 1, i32: 1, u32: -1, b: true }, 'u32'],
        ['arrays', { fixed: [1, 2, 3], ints: [0, 0, 0], bounded: [], flags: [true, true], f64s: [] }, 'fixed'],
        [
          'arrays',
          { fixed: [1, 2, 3, 4], ints: [0, 0, 0], bounded: [1, 2, 3, 4, 5, 6, 7, 8, 9], flags: [true, true], f64s: [] },
          'bounded',
        ],
        ['nested', { origin: { x: 0, y: 'no' }, pts: [], box: { lo: { x: 0, y: 0 }, hi: { x: 0, y: 0 } } }, 'origin.y'],
        [
          'nested',
          { origin: { x: 0, y: 0 }, pts: [{ x: 0, y: 0, z: 1 }], box: { lo: { x: 0, y: 0 }, hi: { x: 0, y: 0 } } },
          'pts.0',
        ],
        ['add', { by: 1, extra: 2 }, '(root)'],
      ];
      for (const [method, payload, path] of bad) {
        const e = await rejection(ref[method]!(payload));
        expect(e, `${method} ${JSON.stringify(payload)}`).toBeInstanceOf(SchemaValidationError);
        expect(e.message).toContain(`"${path}`);
      }
      expect((await metrics())['Numbers']!.sent).toBe(sentBefore);
      expect(await system.grain(Numbers, 600).add({ by: 2 })).toEqual({ count: 1, total: 2 });
    },
  },
  {
    name: 'oversize payloads fail with PayloadTooLargeError, never truncated',
    isolated: true,
    grains: [[Numbers, { slotSize: 256 }]],
    async run({ system, metrics = async () => system.metrics() }) {
      const ref = system.grain(Numbers, 1);
      const xs = Array.from({ length: 64 }, (_, i) => i + 0.5);
      const e = await rejection(ref.bulk({ xs }));
      expect(e).toBeInstanceOf(PayloadTooLargeError);
      expect(e.message).toMatch(/needs \d+ bytes but a slot holds 208/);
      expect((await metrics())['Numbers']!.sent).toBe(0);
      // What fits goes through whole.
      const fits = xs.slice(0, 20);
      expect(await ref.bulk({ xs: fits })).toEqual({ n: 20, sum: fits.reduce((a, b) => a + b, 0) });
    },
  },
  {
    name: 'unknown grain (UnknownGrainError) and unknown method (UnknownMethodError, and refused by the kernel)',
    grains: [[Numbers]],
    async run({ system }) {
      expect(thrown(() => system.grain(Unregistered, 1))).toBeInstanceOf(UnknownGrainError);
      expect(thrown(() => system.kernel(Unregistered))).toBeInstanceOf(UnknownGrainError);
      const def = Numbers.grain as unknown as GrainDef;
      expect(thrown(() => system.send(def, 'nope', 1, {}, true))).toBeInstanceOf(UnknownMethodError);
      expect((system.grain(Numbers, 700) as unknown as Record<string, unknown>)['nope']).toBeUndefined();
      // A message naming a method id the kernel does not have is refused and counted, not dropped.
      const tellErrors: Error[] = [];
      system.on('tellError', (x) => tellErrors.push(x.error));
      const k = system.kernel(Numbers);
      const rejectedBefore = k.counters().rejected;
      const lane = k.lanes[k.laneOf(700)]!;
      const slot = lane.producer.claim();
      const dv = lane.inbound.dv;
      dv.setUint32(slot + SLOT.length, 1, true);
      dv.setUint32(slot + SLOT.method, 99, true);
      dv.setUint32(slot + SLOT.flags, 0, true);
      dv.setUint32(slot + SLOT.corr, 0, true);
      dv.setUint32(slot + SLOT.keyLo, 700, true);
      dv.setUint32(slot + SLOT.keyHi, 0, true);
      dv.setUint32(slot + SLOT.sender, HOST_SENDER, true);
      dv.setUint32(slot + SLOT.grain, k.grainId, true);
      lane.inbound.u8[slot + 48] = 0x80;
      lane.producer.publish(slot);
      k.sent++;
      k.wake(k.laneOf(700));
      await until('rejection reported', async () => tellErrors.length === 1);
      expect(tellErrors[0]).toBeInstanceOf(DecodeError);
      expect(tellErrors[0]!.message).toMatch(/unknown method/);
      expect(k.counters().rejected - rejectedBefore).toBe(1);
      expect(await system.grain(Numbers, 700).add({ by: 1 })).toEqual({ count: 1, total: 1 });
    },
  },
  {
    name: 'full queue: senders wait (backlog) and complete after activate, in order, nothing dropped',
    isolated: true,
    grains: [[Seq, { ringCapacity: 4 }]],
    async run({ system }) {
      const k = system.kernel(Seq);
      await k.deactivate();
      const results: Array<Promise<unknown> | undefined> = [];
      for (let i = 1; i <= 40; i++)
        results.push(
          i % 8 === 0
            ? system.grain(Seq, 1).pushAsk({ sender: 0, seq: i })
            : system.grain(Seq, 1).tell.push({ sender: 0, seq: i }),
        );
      // The ring holds 4; the rest wait for room.
      expect(results.slice(0, 4)).toEqual([undefined, undefined, undefined, undefined]);
      expect(results.slice(4).every((r) => r instanceof Promise)).toBe(true);
      await sleep(20);
      expect(k.counters().sent).toBe(4);
      await k.activate();
      await Promise.all(results);
      const st = await system.grain(Seq, 1).stats({});
      expect(st.count).toBe(40);
      expect(st.violations).toBe(0);
      expect(st.last[0]).toBe(40);
    },
  },
  {
    name: 'full queue: QueueFullError after queueFullTimeoutMs; what was queued is processed, nothing silently dropped',
    isolated: true,
    grains: [[Seq, { ringCapacity: 4 }]],
    system: { queueFullTimeoutMs: 60 },
    async run({ system }) {
      const k = system.kernel(Seq);
      await k.deactivate();
      for (let i = 1; i <= 4; i++) expect(system.grain(Seq, 1).tell.push({ sender: 0, seq: i })).toBeUndefined();
      const waitingTell = system.grain(Seq, 1).tell.push({ sender: 0, seq: 5 });
      const waitingAsk = system.grain(Seq, 1).pushAsk({ sender: 0, seq: 6 });
      expect(await rejection(waitingTell)).toBeInstanceOf(QueueFullError);
      expect(await rejection(waitingAsk)).toBeInstanceOf(QueueFullError);
      expect(k.counters().sent).toBe(4);
      await k.activate();
      await until('queued pushes processed', async () => (await system.grain(Seq, 1).stats({})).count === 4);
      const st = await system.grain(Seq, 1).stats({});
      expect(st.last[0]).toBe(4);
      expect(st.violations).toBe(0);
    },
  },
  {
    name:
      'full queue: a send that waits is still checked at the call (a bad payload throws, nothing queued is ' +
      'lost); tells cancelled by QueueFullError are tellError events and counted',
    isolated: true,
    grains: [[Seq, { ringCapacity: 4 }]],
    system: { queueFullTimeoutMs: 60 },
    async run({ system }) {
      const k = system.kernel(Seq);
      const tellErrors: Error[] = [];
      system.on('tellError', (e) => tellErrors.push(e.error));
      await k.deactivate();
      for (let i = 1; i <= 4; i++) expect(system.grain(Seq, 1).tell.push({ sender: 0, seq: i })).toBeUndefined();
      const waiting = [5, 6, 7].map((i) => system.grain(Seq, 1).tell.push({ sender: 0, seq: i }));
      expect(waiting.every((w) => w instanceof Promise)).toBe(true);
      expect(() => system.grain(Seq, 1).tell.push({ sender: 0, seq: -1 })).toThrow(SchemaValidationError);
      await until('waiting tells cancelled', async () => tellErrors.length === 3);
      expect(tellErrors.every((e) => e instanceof QueueFullError)).toBe(true);
      for (const w of waiting) expect(await rejection(w)).toBeInstanceOf(QueueFullError);
      expect(k.counters().cancelled).toBe(3);
      expect(k.counters().sent).toBe(4);
      await k.activate();
      await until('queued pushes processed', async () => (await system.grain(Seq, 1).stats({})).count === 4);
      expect((await system.grain(Seq, 1).stats({})).last[0]).toBe(4);
      await system.idle();
    },
  },
];
