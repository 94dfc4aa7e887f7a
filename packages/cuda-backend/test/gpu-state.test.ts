/**
 * readDirty on the CUDA backend (issue 15): dirty marks set by the turns of the generated kernel, read out
 * by the gather kernel (codegen state-meta.ts, src/state-gather.ts). Needs a GPU: without one the suite is
 * skipped with the reason in its name (the host logic is tested in state-gather.test.ts, the C compiled
 * in packages/codegen/test/state-meta.test.ts).
 */
import { GrainSystem } from '@ringgrain/core';
import { layoutOf, snapshot } from '@ringgrain/core/backend';
import { afterEach, describe, expect, it } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import { Ticker } from '../../../test/fixtures/timers.ts';
import { CudaBackend, probeCuda } from '../src/index.ts';
import { liveKernel } from '../src/fault-injection.ts';

const probe = probeCuda();
const lane = probe.ok
  ? `on the GPU (${probe.device.name})`
  : `on the GPU (skipped: no CUDA driver/device — ${probe.reason})`;
const gpu = probe.ok ? describe : describe.skip;

const systems: GrainSystem[] = [];
afterEach(async () => {
  for (const s of systems.splice(0)) await s.shutdown({ mode: 'reject', timeoutMs: 3000 }).catch(() => undefined);
});

async function account(): Promise<{ sys: GrainSystem; backend: CudaBackend }> {
  const backend = new CudaBackend({ partitions: 8, stateMarks: true });
  const sys = new GrainSystem({
    backends: { cuda: backend },
    logLevel: 'warn',
    handleSignals: false,
    handshakeTimeoutMs: 5000,
    askTimeoutMs: 10_000,
  });
  systems.push(sys);
  sys.register(Account, { placement: 'cuda', maxActors: 16384, ringCapacity: 1024, replyCapacity: 1024 });
  await sys.start();
  return { sys, backend };
}

const STRIDE = layoutOf(Account.grain.state).size;

gpu(`CUDA dirty gather ${lane}`, () => {
  it(
    'reads out exactly the actors whose turns stored into their state, with those states; a gather clears the ' +
      'marks, a later turn sets one again',
    async () => {
      const { sys, backend } = await account();
      const k = liveKernel(backend, Account.grain)!;
      // No persistence in this plan: readDirty is absent (the system refuses storage on CUDA until writeStates
      // and deactivateIdle exist), the gather itself is there.
      expect(k.readDirty).toBeUndefined();
      expect((await k.gatherDirty()).rows).toBe(0);
      const n = 1000;
      const key = new Int32Array(n).map((_, i) => i * 3 - 500);
      await sys.askMany(Account, 'deposit', { key, amount: new Float64Array(n).map((_, i) => i + 0.25) });
      const g = await k.gatherDirty();
      expect(g.batch.stride).toBe(STRIDE);
      expect([...g.batch.keys].sort((a, b) => (a as number) - (b as number))).toEqual([...key]);
      g.batch.keys.forEach((kk, i) => {
        const s = snapshot(Account.grain.state, g.batch.bytes.buffer, g.batch.bytes.byteOffset + i * STRIDE) as {
          balance: number;
          ops: number;
        };
        expect(s.balance).toBe(((kk as number) + 500) / 3 + 0.25);
      });
      expect((await k.gatherDirty()).rows).toBe(0);
      await sys.grain(Account, 7).deposit({ amount: 1 });
      const again = await k.gatherDirty();
      expect(again.batch.keys).toEqual([7]);
    },
  );

  it('read-only turns (Account.balance) note the actor without marking it dirty', async () => {
    const { sys, backend } = await account();
    const k = liveKernel(backend, Account.grain)!;
    for (let i = 0; i < 10; i++) await sys.grain(Account, i).deposit({ amount: i });
    expect((await k.gatherDirty()).rows).toBe(10);
    for (let i = 0; i < 10; i++) expect((await sys.grain(Account, i).balance({})).balance).toBe(i);
    expect((await k.gatherDirty()).rows).toBe(0);
  });

  it(
    'a timer tick is a turn: it marks its actor dirty like a message (the read-only get that activated it does ' +
      'not)',
    async () => {
      const backend = new CudaBackend({ partitions: 8, stateMarks: true });
      const sys = new GrainSystem({
        backends: { cuda: backend },
        logLevel: 'warn',
        handleSignals: false,
        handshakeTimeoutMs: 5000,
        askTimeoutMs: 10_000,
      });
      systems.push(sys);
      sys.register(Ticker, { placement: 'cuda', maxActors: 1024, ringCapacity: 1024, replyCapacity: 1024 });
      await sys.start();
      const k = liveKernel(backend, Ticker.grain)!;
      expect((await sys.grain(Ticker, 3).get({})).ticks).toBe(0);
      expect((await k.gatherDirty()).rows).toBe(0);
      await new Promise((r) => setTimeout(r, 450));
      const g = await k.gatherDirty();
      expect(g.batch.keys).toEqual([3]);
      const row = snapshot(Ticker.grain.state, g.batch.bytes.buffer, g.batch.bytes.byteOffset) as { ticks: number };
      expect(row.ticks).toBeGreaterThanOrEqual(1);
    },
  );

  it('a gather while tells land loses no update: the actors it missed stay marked for the next one', async () => {
    const { sys, backend } = await account();
    const k = liveKernel(backend, Account.grain)!;
    const n = 4096;
    const key = new Int32Array(n).map((_, i) => i);
    const latest = new Map<number, number>();
    const keep = (b: Awaited<ReturnType<typeof k.gatherDirty>>['batch']) =>
      b.keys.forEach((kk, i) =>
        latest.set(
          kk as number,
          (snapshot(Account.grain.state, b.bytes.buffer, b.bytes.byteOffset + i * STRIDE) as { balance: number })
            .balance,
        ),
      );
    for (let round = 1; round <= 5; round++) {
      sys.tellMany(Account, 'deposit', { key, amount: new Float64Array(n).fill(1) });
      keep((await k.gatherDirty()).batch);
    }
    await sys.idle();
    keep((await k.gatherDirty()).batch);
    for (let i = 0; i < n; i++) expect([i, latest.get(i)]).toEqual([i, 5]);
  });
});
