/** Shutdown while work is in flight: drain (default) answers everything queued; 'reject' fails pending asks. */
import { KernelTerminatedError, type GrainSystem } from '@ringgrain/core';
import { describe, expect, it } from 'vitest';
import { BACKENDS, startSystem } from './backends.ts';
import { Account, Probe } from './grains.ts';

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  it('drain: asks and tells sent before shutdown (more than the ring holds, K2K among them) all run', async () => {
    const system: GrainSystem = await startSystem(backend, [
      [Probe, { ringCapacity: 64 }],
      [Account, { ringCapacity: 64 }],
    ]);
    const tellErrors: Error[] = [];
    system.on('tellError', (e) => tellErrors.push(e.error));
    const n = 1000;
    const pending: Array<Promise<unknown>> = [];
    for (let i = 1; i <= n; i++) {
      const t = system.grain(Probe, i % 10).tell.seq({ n: Math.ceil(i / 10) });
      if (t) pending.push(t as Promise<unknown>);
      if (i % 100 === 0) pending.push(system.grain(Probe, 50).boom({ code: 0 }));
    }
    await system.grain(Account, 1).deposit({ amount: 100 });
    for (let i = 0; i < 50; i++) system.grain(Account, 1).tell.transfer({ to: 2, amount: 1 });
    const asks = Array.from({ length: 20 }, (_, i) => system.grain(Probe, 60 + i).read({}));
    const done = system.shutdown();
    const settled = await Promise.allSettled([...pending, ...asks]);
    await done;
    expect(
      settled.filter((s) => s.status === 'rejected').map((s) => String((s as PromiseRejectedResult).reason)),
    ).toEqual([]);
    expect(tellErrors).toEqual([]);
    const m = system.metrics();
    expect(m['Probe']!.processed).toBe(n + 10 + 20);
    expect(m['Account']!.processed + m['Account']!.rejected).toBe(1 + 50 + 50);
    await expect(Promise.resolve().then(() => system.grain(Probe, 1).read({}))).rejects.toBeInstanceOf(
      KernelTerminatedError,
    );
  });

  it('reject: pending asks fail with KernelTerminatedError; nothing hangs; counters balance', async () => {
    const system: GrainSystem = await startSystem(backend, [[Probe, { ringCapacity: 64 }]]);
    await system.kernel(Probe).deactivate();
    const asks = Array.from({ length: 100 }, (_, i) => system.grain(Probe, i).read({}));
    const settling = Promise.allSettled(asks);
    // Tells past the ring's room return a Promise; the README says it may be ignored (a cancel is a tellError).
    const tellErrors: Error[] = [];
    system.on('tellError', (e) => tellErrors.push(e.error));
    for (let i = 0; i < 100; i++) system.grain(Probe, i).tell.seq({ n: 1 });
    await system.shutdown({ mode: 'reject' });
    const settled = await settling;
    // 200 sends into at most 2 lanes × 64 slots: the later tells waited in the host and were cancelled.
    expect(tellErrors.length).toBeGreaterThanOrEqual(200 - 128);
    for (const e of tellErrors) expect(e).toBeInstanceOf(KernelTerminatedError);
    for (const s of settled) {
      expect(s.status).toBe('rejected');
      expect((s as PromiseRejectedResult).reason).toBeInstanceOf(KernelTerminatedError);
    }
    const c = system.metrics()['Probe']!;
    expect(c.sent + c.k2kReceived).toBe(c.processed + c.rejected + c.hostRejected);
    expect(c.hostRejected).toBeGreaterThan(0);
  });
});
