/**
 * README: tells that fail surface as `tellError` events ({ grain, method, error }); `metrics()` is exact after
 * `await system.idle()` and balances `sent + k2kReceived = processed + rejected (+ hostRejected)`;
 * `system.counters(G)` reads one class's counters.
 */
import { HandlerError, type ClassMetrics, type GrainSystem } from '@ringgrain/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, imbalance, startSystem } from './backends.ts';
import { Account, Probe } from './grains.ts';

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  let system: GrainSystem;
  beforeAll(async () => {
    system = await startSystem(backend, [Account, Probe]);
  });
  afterAll(() => system.shutdown());

  it('metrics() after idle(): every field a README program reads, exact', async () => {
    const a = system.grain(Account, 1);
    await a.deposit({ amount: 10 });
    for (let i = 0; i < 5; i++) a.tell.transfer({ to: 2, amount: 1 }); // 5 K2K credits
    a.tell.transfer({ to: 3, amount: 1_000 }); // refused by the handler's own check: no K2K
    for (let i = 0; i < 3; i++) system.grain(Probe, 1).tell.boomTell({ code: 1 }); // 3 handler errors
    await system.idle();
    const m: Record<string, ClassMetrics> = system.metrics();
    expect(Object.keys(m).sort()).toEqual(['Account', 'Probe']);
    expect(m['Account']).toMatchObject({
      state: 'active',
      backend,
      sent: 7,
      received: 12,
      processed: 12,
      replied: 1,
      k2kSent: 5,
      k2kReceived: 5,
      handlerErrors: 0,
      rejected: 0,
      hostRejected: 0,
      cancelled: 0,
      inboundDepth: 0,
    });
    expect(m['Account']!.activations).toBe(2); // actors 1 and 2 (3 never got a message)
    expect(m['Probe']).toMatchObject({ sent: 3, processed: 3, handlerErrors: 3, rejected: 0, replied: 0 });
    // counters(G) is the same figures for one class (state and backend aside).
    const c = system.counters(Account);
    for (const k of [
      'sent',
      'received',
      'processed',
      'replied',
      'k2kSent',
      'k2kReceived',
      'handlerErrors',
      'rejected',
      'hostRejected',
      'cancelled',
      'inboundDepth',
      'activations',
    ] as const) {
      expect(c[k], k).toBe(m['Account']![k]);
    }
    expect(typeof c.heartbeat).toBe('number');
    expect((await system.grain(Account, 2).get({})).balance).toBe(5);
    expect(await imbalance(system)).toEqual([]);
  });

  it(
    'tellError: one event per failed tell, with grain, ' + 'method and a typed error; asks are never tellErrors',
    async () => {
      const events: Array<{ grain: string; method: string; error: Error; row?: number }> = [];
      const on = (e: (typeof events)[number]) => events.push(e);
      system.on('tellError', on);
      try {
        const p = system.grain(Probe, 2);
        p.tell.boomTell({ code: 1 });
        p.tell.boomTell({ code: 0 });
        p.tell.boomTell({ code: 7 });
        await p.boom({ code: 1 }).catch(() => undefined); // an ask's failure goes to its asker only
        await system.idle();
        expect(events.length).toBe(2);
        for (const e of events) {
          expect(e.grain).toBe('Probe');
          expect(e.method).toBe('boomTell');
          expect(e.error).toBeInstanceOf(HandlerError);
          expect((e.error as HandlerError).code).toBe('HANDLER');
          expect((e.error as HandlerError).grain).toBe('Probe');
          expect((e.error as HandlerError).method).toBe('boomTell');
          expect(e.row).toBeUndefined();
        }
        // tellMany rows that fail carry their row.
        events.length = 0;
        system.tellMany(Probe, 'boomTell', { key: [3, 3, 3, 3], code: [0, 1, 0, 1] });
        await system.idle();
        expect(events.map((e) => e.method)).toEqual(['boomTell', 'boomTell']);
        expect(events.every((e) => e.error instanceof HandlerError)).toBe(true);
        expect((await system.grain(Probe, 3).read({})).count).toBe(2);
      } finally {
        system.off('tellError', on);
      }
      expect(await imbalance(system)).toEqual([]);
    },
  );

  it('a throwing handler: the actor keeps the state it had and keeps running (ask and tell alike)', async () => {
    const a = system.grain(Account, 50);
    await a.deposit({ amount: 5 });
    const p = system.grain(Probe, 50);
    for (let i = 1; i <= 3; i++) p.tell.seq({ n: i });
    p.tell.boomTell({ code: 1 });
    await expect(p.boom({ code: 1 })).rejects.toBeInstanceOf(HandlerError);
    p.tell.seq({ n: 4 });
    const r = await p.read({});
    expect(r.last).toBe(4);
    expect(r.bad).toBe(0);
    expect(await a.get({})).toEqual({ balance: 5, ops: 1 });
    expect(await imbalance(system)).toEqual([]);
  });
});

describe('the backends agree on what a throwing turn leaves in the state', () => {
  it('Probe.boom increments count before it throws: both backends keep (or both drop) that write', async () => {
    const seen: Record<string, number> = {};
    for (const b of BACKENDS) {
      const s = await startSystem(b.name, [Probe]);
      try {
        const p = s.grain(Probe, 1);
        await p.boom({ code: 0 });
        await p.boom({ code: 1 }).catch(() => undefined);
        seen[b.name] = (await p.read({})).count;
      } finally {
        await s.shutdown();
      }
    }
    expect(seen['cpu']).toBe(seen['inline']);
  });
});
