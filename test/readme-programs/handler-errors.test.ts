/**
 * README: a throwing handler rejects the ask with its message and the actor keeps running; tells that
 * fail surface as tellError events; metrics balance (rejected counts them).
 */
import { HandlerError, type GrainSystem } from '@ringgrain/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, imbalance, startSystem } from './backends.ts';
import { Chain, Probe, Replier, Sender } from './grains.ts';

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  let system: GrainSystem;
  beforeAll(async () => {
    system = await startSystem(backend, [Probe, Sender, Chain, Replier]);
  });
  afterAll(() => system.shutdown());

  it('ask: rejects with HandlerError carrying the message; the actor runs on, answering in order', async () => {
    const p = system.grain(Probe, 10);
    await system.idle(); // earlier tests' turns counted before the baseline is read
    const before = system.metrics()['Probe']!;
    const e = await p.boom({ code: 1 }).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(HandlerError);
    expect((e as HandlerError).code).toBe('HANDLER');
    expect((e as Error).message).toContain('boom requested');
    expect(await p.boom({ code: 0 })).toEqual({ ok: true });
    // Many failures interleaved with successes: each one answered in order.
    const rs = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => p.boom({ code: i % 2 })));
    expect(rs.map((r) => r.status)).toEqual(Array.from({ length: 50 }, (_, i) => (i % 2 ? 'rejected' : 'fulfilled')));
    await system.idle();
    const after = system.metrics()['Probe']!;
    // A turn that throws is processed (it ran) and counted in handlerErrors; rejected is for refused messages.
    expect(after.processed - before.processed).toBe(52);
    expect(after.handlerErrors - before.handlerErrors).toBe(26);
    expect(await imbalance(system)).toEqual([]);
  });

  it('tell: a throwing handler is a tellError event with grain, method and the message', async () => {
    const events: Array<{ grain: string; method: string; error: Error }> = [];
    const on = (e: { grain: string; method: string; error: Error }) => events.push(e);
    system.on('tellError', on);
    try {
      const p = system.grain(Probe, 11);
      for (let i = 0; i < 20; i++) p.tell.boomTell({ code: i % 4 === 0 ? 1 : 0 });
      await system.idle();
      expect(events.length).toBe(5);
      for (const e of events) {
        expect(e.grain).toBe('Probe');
        expect(e.method).toBe('boomTell');
        expect(e.error).toBeInstanceOf(HandlerError);
        expect(e.error.message).toContain('boomTell requested');
      }
      expect((await p.read({})).count).toBe(15);
      expect(await imbalance(system)).toEqual([]);
    } finally {
      system.off('tellError', on);
    }
  });

  it(
    'a bad ctx.send (key, payload, unregistered class, unknown method, forward to another reply schema) ' +
      'fails the turn with a message saying what',
    async () => {
      const r = system.grain(Sender, 1);
      const cases: Array<[() => Promise<unknown>, RegExp]> = [
        [() => r.badKey({ to: 1.5 }), /invalid key 1\.5/],
        [() => r.badKey({ to: Number.NaN }), /invalid key NaN/],
        [() => r.badPayload({ n: 1.5 }), /"n"/],
        [() => r.badPayload({ n: 2 ** 40 }), /"n"/],
        [() => r.toOrphan({}), /Orphan/],
        [() => r.badMethod({}), /no method "nope"/],
        [() => r.forwardToTellOnly({ to: 5 }), /same schema/],
      ];
      for (const [call, message] of cases) {
        const e = await call().then(
          () => undefined,
          (x: unknown) => x,
        );
        expect(e, String(message)).toBeInstanceOf(HandlerError);
        expect((e as Error).message).toMatch(message);
      }
      // A tell that forwards: the chain runs, its reply goes nowhere and nothing fails.
      const errors: Error[] = [];
      const on = (e: { error: Error }) => errors.push(e.error);
      system.on('tellError', on);
      r.tell.forwardTell({ to: 10 });
      await system.idle();
      system.off('tellError', on);
      expect(errors).toEqual([]);
      expect(await system.grain(Chain, 12).walk({ hops: 0, acc: 0 })).toEqual({ acc: 12, at: 12 });
      await system.idle();
      expect(await imbalance(system)).toEqual([]);
    },
  );

  it(
    'a reply that breaks its schema (missing field, wrong type, out of range, none) rejects the ask with the ' +
      'path; a tell-only ask resolves to undefined',
    async () => {
      const r = system.grain(Replier, 1);
      const cases: Array<[() => Promise<unknown>, RegExp]> = [
        [() => r.missing({}), /reply does not match its schema.*"v"/],
        [() => r.wrongType({}), /reply does not match its schema.*"v"/],
        [() => r.tooBig({}), /reply does not match its schema.*u8/],
        [() => r.nothing({}), /reply does not match its schema/],
      ];
      for (const [call, message] of cases) {
        const e = await call().then(
          () => undefined,
          (x: unknown) => x,
        );
        expect(e, String(message)).toBeInstanceOf(HandlerError);
        expect((e as Error).message).toMatch(message);
      }
      expect(await r.tellOnly({ by: 2 })).toBeUndefined();
      expect(await r.read({})).toEqual({ n: 2, f: Math.fround(0.1) });
      await expect(system.askMany(Replier, 'tellOnly' as never, { key: [1], by: [1] } as never)).rejects.toThrow(
        /no reply/,
      );
      await system.idle();
      expect(await imbalance(system)).toEqual([]);
    },
  );
});
