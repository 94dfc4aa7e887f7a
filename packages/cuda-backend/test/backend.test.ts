/**
 * CudaBackend. Without a driver (CI, dev machines) the probe must say ok:false with the reason (checked
 * for real) and the GPU lane is skipped with the reason in its name. On a GPU every answer below is
 * computed by the ring kernel and checked against a JS reference.
 */
import { GrainSystem, HandlerError, KernelTerminatedError } from '@ringgrain/core';
import { DecodeError } from '@ringgrain/core/errors';
import type { RingKernel } from '@ringgrain/core/types';
import { SLOT, SlotFlag, HOST_SENDER } from '@ringgrain/core/backend';
import { afterEach, describe, expect, it } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import { Coordinator, Hop1, Hop2, Hop3, Leaf } from '../../../test/fixtures/grains.ts';
import { Picky } from './fixtures.ts';
import {
  CoResidencyError,
  CudaBackend,
  CudaBackendOptionsError,
  GpuFaultError,
  ModuleLoadWhileRunningError,
  probeCuda,
} from '../src/index.ts';
import { VectorAdd } from '../../../examples/vector-add/grains.ts';

const probe = probeCuda();
const lane = probe.ok
  ? `on the GPU (${probe.device.name})`
  : `on the GPU (skipped: no CUDA driver/device — ${probe.reason})`;
const gpu = probe.ok ? describe : describe.skip;

const systems: GrainSystem[] = [];
afterEach(async () => {
  for (const s of systems.splice(0)) await s.shutdown({ mode: 'reject', timeoutMs: 3000 }).catch(() => undefined);
});

function system(backend: CudaBackend, opts: Partial<ConstructorParameters<typeof GrainSystem>[0]> = {}): GrainSystem {
  const s = new GrainSystem({
    backends: { cuda: backend },
    logLevel: 'warn',
    handleSignals: false,
    handshakeTimeoutMs: 5000,
    askTimeoutMs: 10_000,
    ...opts,
  });
  systems.push(s);
  return s;
}

const small = { placement: 'cuda' as const, maxActors: 16384, ringCapacity: 1024, replyCapacity: 1024 };

describe('CudaBackend probe (no GPU needed)', () => {
  it('reports what probeCuda found, with the reason when there is no driver', async () => {
    const p = await new CudaBackend().probe();
    expect(p.ok).toBe(probe.ok);
    if (!p.ok) {
      expect(p.reason).toBeTruthy();
      expect(p.reason).toBe(probe.ok ? undefined : probe.reason);
    } else expect(p.device).toContain(probe.ok ? probe.device.name : '?');
  });

  it('rejects impossible options with a typed CudaBackendOptionsError (code, hint), as the CPU backend does', () => {
    expect(() => new CudaBackend({ queueCapacity: 100 })).toThrow(CudaBackendOptionsError);
    expect(() => new CudaBackend({ partitions: 0 })).toThrow(CudaBackendOptionsError);
    expect(() => new CudaBackend({ hostLanes: 0 })).toThrow(/hostLanes must be an integer from 1 to 32, got 0/);
    expect(() => new CudaBackend({ hostLanes: 33 })).toThrow(
      expect.objectContaining({ code: 'CUDA_BACKEND_OPTIONS', hint: expect.any(String) }),
    );
    expect(() => new CudaBackend({ overflowBytes: -1 })).toThrow(CudaBackendOptionsError);
  });
});

gpu(`CudaBackend ${lane}`, () => {
  it(
    'host lanes: 5 inbound rings, each with its ingress warp, carry every message in order per key; a pause ' +
      'holds all of them; STOP counts what they still hold',
    async () => {
      const sys = system(new CudaBackend({ partitions: 4, hostLanes: 5 })).register(Account, small);
      await sys.start();
      const k: RingKernel = sys.kernel(Account);
      expect(k.lanes.length).toBe(5);
      // Every lane gets keys (laneOfKey spreads them); tellMany rows and asks interleave per key.
      const n = 20_000;
      const key = new Int32Array(n).map((_, i) => i % 97);
      const amount = new Float64Array(n).map((_, i) => (i % 7) + 1);
      sys.tellMany(Account, 'deposit', { key, amount });
      const want = new Float64Array(97);
      for (let i = 0; i < n; i++) want[key[i]!]! += amount[i]!;
      const asked = await Promise.all(
        Array.from({ length: 97 }, (_, a) => sys.grain(Account, a).deposit({ amount: 1000 })),
      );
      // Each ask follows that key's tellMany rows in its lane: it sees all of them.
      for (let a = 0; a < 97; a++) expect(asked[a]!.balance).toBe(want[a]! + 1000);
      await sys.idle();
      // Paused: sends wait in all five rings, none moves; activate moves them all.
      await k.deactivate();
      const before = sys.counters(Account).received;
      for (let i = 0; i < 500; i++) sys.grain(Account, 200 + (i % 50)).tell.deposit({ amount: 1 });
      await sleep(100);
      expect(sys.counters(Account).received).toBe(before);
      expect(k.inboundDepth()).toBe(500);
      await k.activate();
      await sys.idle();
      for (let a = 0; a < 50; a += 7) expect((await sys.grain(Account, 200 + a).balance({})).balance).toBe(10);
      // The control warp beats on every lane's control block (the host sweeps each lane's heartbeat).
      await sleep(50);
      expect(k.heartbeats().every((h) => h > 0)).toBe(true);
      // STOP while paused: what the five rings hold is counted as rejected by the host, nothing lost silently.
      await k.deactivate();
      for (let i = 0; i < 300; i++) sys.grain(Account, 300 + i).tell.deposit({ amount: 1 });
      await k.terminate();
      const c = sys.counters(Account);
      expect(c.hostRejected).toBe(300);
      expect(c.sent).toBe(c.received + c.hostRejected);
      await sys.shutdown();
    },
  );

  it(
    'tuning macros that are not multiples of 16 (RINGGRAIN_NVRTC_DEFINES RG_WORKER_SPIN=8): the kernel still ' +
      'exits on STOP',
    async () => {
      // Workers once re-read the mode word only when their idle count was a multiple of 16; it stops at
      // RG_WORKER_SPIN, so with 8 they never saw EXIT and every shutdown ended in KernelStuckError.
      const before = process.env['RINGGRAIN_NVRTC_DEFINES'];
      process.env['RINGGRAIN_NVRTC_DEFINES'] = 'RG_WORKER_SPIN=8,RG_INGRESS_SPIN=8';
      try {
        const backend = new CudaBackend({ partitions: 4 });
        const sys = system(backend).register(Account, small);
        await sys.start();
        expect(await sys.grain(Account, 3).deposit({ amount: 2 })).toEqual({ balance: 2 });
        await new Promise((r) => setTimeout(r, 50)); // every warp idle, sleeping between polls
        await sys.shutdown();
        expect(backend.poisonedBy).toBeUndefined();
        expect(sys.kernel(Account).state).toBe('terminated');
      } finally {
        if (before === undefined) delete process.env['RINGGRAIN_NVRTC_DEFINES'];
        else process.env['RINGGRAIN_NVRTC_DEFINES'] = before;
      }
    },
  );

  it('bank: deposit/withdraw/balance asks answered by the GPU match a JS model; tells; K2K transfer', async () => {
    const backend = new CudaBackend();
    const sys = system(backend).register(Account, small);
    await sys.start();
    const model = new Map<number, { balance: number; ops: number }>();
    const m = (k: number) => model.get(k) ?? (model.set(k, { balance: 0, ops: 0 }), model.get(k)!);
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
    for (let i = 0; i < 2000; i++) {
      const k = Math.floor(rnd() * 50);
      const amount = Math.round(rnd() * 10000) / 100;
      const a = sys.grain(Account, k);
      if (rnd() < 0.6) {
        const got = await a.deposit({ amount });
        const r = m(k);
        r.balance += amount;
        r.ops++;
        expect(got.balance).toBe(r.balance);
      } else {
        const got = await a.withdraw({ amount });
        const r = m(k);
        r.ops++;
        const ok = amount <= r.balance;
        if (ok) r.balance -= amount;
        expect(got).toEqual({ ok, balance: r.balance });
      }
    }
    // Tells, then a K2K transfer ring between accounts.
    for (let k = 0; k < 50; k++) {
      sys.grain(Account, k).tell.deposit({ amount: 1000 });
      m(k).balance += 1000;
      m(k).ops++;
    }
    // Every account then sends 10 to the next and receives 10 from the previous. The credit from k-1
    // comes from another actor (K2K), so it may run before or after k's own transfer: f64 addition is
    // not associative, so both orders' results (each computed exactly as JS computes it) are correct.
    const allowed = new Map<number, number[]>();
    for (let k = 0; k < 50; k++) {
      const b = m(k).balance;
      allowed.set(k, [b - 10 + 10, b + 10 - 10]);
      sys.grain(Account, k).tell.transfer({ to: (k + 1) % 50, amount: 10 });
      m(k).ops += 2; // its transfer, and the credit from k - 1
    }
    await waitFor(() => sys.counters(Account).k2kReceived >= 50);
    const diffs: string[] = [];
    for (let k = 0; k < 50; k++) {
      const got = await sys.grain(Account, k).balance({});
      if (!allowed.get(k)!.includes(got.balance) || got.ops !== m(k).ops)
        diffs.push(
          `key ${k}: GPU ${JSON.stringify(got)}, allowed balances ${JSON.stringify(allowed.get(k))}, ops ${m(k).ops}`,
        );
      else m(k).balance = got.balance;
    }
    expect(diffs, `${JSON.stringify(sys.counters(Account))}`).toEqual([]);
    // Counters reach the control block a little after the replies: wait for the kernel to publish them.
    await waitFor(() => settled(sys.counters(Account)));
    const c = sys.counters(Account);
    expect(c.k2kSent).toBe(50);
    expect(c.k2kReceived).toBe(50);
    expect(c.rejected).toBe(0);
    expect(c.handlerErrors).toBe(0);
    expect(c.processed).toBe(c.received);
    expect(c.replied).toBe(2000 + 50);
    expect(c.activations).toBe(50);
    expect(await sys.kernel(Account).inspect(3)).toEqual(m(3));
  });

  it('10,000 actors: one deposit each, then every balance, checked', async () => {
    const sys = system(new CudaBackend()).register(Account, small);
    await sys.start();
    const N = 10_000;
    const asks: Promise<unknown>[] = [];
    for (let k = 0; k < N; k++) asks.push(sys.grain(Account, k * 7919).deposit({ amount: (k % 13) + 0.5 }));
    const replies = (await Promise.all(asks)) as { balance: number }[];
    replies.forEach((r, k) => expect(r.balance).toBe((k % 13) + 0.5));
    const bal = (await Promise.all(Array.from({ length: N }, (_, k) => sys.grain(Account, k * 7919).balance({})))) as {
      balance: number;
      ops: number;
    }[];
    bal.forEach((r, k) => expect(r).toEqual({ balance: (k % 13) + 0.5, ops: 1 }));
    await waitFor(() => settled(sys.counters(Account)) && sys.counters(Account).replied === 2 * N);
    const c = sys.counters(Account);
    expect(c.activations).toBe(N);
    expect(c.replied).toBe(2 * N);
    expect(c.rejected).toBe(0);
  });

  it('lifecycle: deactivated kernels queue in order; terminate with pending asks rejects; relaunch works', async () => {
    const sys = system(new CudaBackend()).register(Account, small);
    await sys.start();
    const k = sys.kernel(Account);
    await k.deactivate();
    const a = sys.grain(Account, 1);
    const p1 = a.deposit({ amount: 10 });
    const p2 = a.withdraw({ amount: 7 });
    const p3 = a.withdraw({ amount: 5 });
    await sleep(100);
    expect(sys.counters(Account).processed).toBe(0);
    await k.activate();
    expect(await p1).toEqual({ balance: 10 });
    expect(await p2).toEqual({ ok: true, balance: 3 });
    expect(await p3).toEqual({ ok: false, balance: 3 });

    // STOP while paused takes nothing more from the host ring: the ask still there is rejected typed
    // and counted as hostRejected (the same semantics as the CPU backend).
    await k.deactivate();
    const pending = a.balance({});
    const settledAsk = pending.then((v) => ({ v }), (e: unknown) => ({ e }));
    await sleep(20);
    await k.terminate({ mode: 'reject' });
    const r = await settledAsk;
    expect('e' in r && r.e).toBeInstanceOf(KernelTerminatedError);
    expect(k.counters().hostRejected).toBe(1);
    expect(k.state).toBe('terminated');
    await expect(a.balance({})).rejects.toBeInstanceOf(KernelTerminatedError);

    await sys.launch(Account);
    expect(await a.balance({})).toEqual({ balance: 0, ops: 0 });
    expect(await a.deposit({ amount: 2 })).toEqual({ balance: 2 });
  });

  it('a handler error rejects the ask with its message; the actor keeps running', async () => {
    const sys = system(new CudaBackend()).register(Picky, small);
    await sys.start();
    const n = sys.grain(Picky, 5);
    await expect(n.check({ code: 7 })).rejects.toBeInstanceOf(HandlerError);
    await expect(n.check({ code: -1 })).rejects.toThrow(/INDEX_RANGE|index/i);
    expect(await n.check({ code: 0 })).toEqual({ count: 1 });
    expect(await n.check({ code: 0 })).toEqual({ count: 2 });
    await waitFor(() => settled(sys.counters(Picky)));
    expect(sys.counters(Picky).handlerErrors).toBe(2);
  });

  it(
    'two grain classes at once: K2K fan-out/fan-in across kernels and a forward chain over three kernels',
    async () => {
      const sys = system(new CudaBackend({ partitions: 8 }))
        .register(Coordinator, small)
        .register(Leaf, small)
        .register(Hop1, small)
        .register(Hop2, small)
        .register(Hop3, small);
      await sys.start();
      const c = sys.grain(Coordinator, 4);
      expect(await c.scatter({ n: 200, value: 3 })).toEqual({ expected: 200 });
      let want = 0;
      for (let i = 0; i < 200; i++) want += (3 + i) * 2;
      await waitFor(async () => (await c.result({})).count === 200);
      expect(await c.result({})).toEqual({ expected: 200, count: 200, sum: want });
      expect(await sys.grain(Leaf, 7).get({})).toEqual({ total: 10, hits: 1 });
      expect(await sys.grain(Hop1, 10).go({ x: 5, trail: 0 })).toEqual({ x: 33, trail: 123, by: 3 });
      expect(await sys.grain(Hop2, 11).seen({})).toEqual({ seen: 1 });
      expect(sys.counters(Coordinator).k2kSent).toBe(200);
      expect(sys.counters(Leaf).k2kReceived).toBe(200);
    },
  );

  it(
    'one grain is terminated and relaunched while another keeps running (no free waits for a live kernel)',
    async () => {
      const backend = new CudaBackend({ partitions: 8 });
      const sys = system(backend).register(Coordinator, small).register(Leaf, small);
      await sys.start();
      const leaf = sys.kernel(Leaf);
      const before = backend.memoryReport()!.stats;
      await leaf.terminate();
      // Coordinator's kernel still runs: its answers are computed on the GPU now.
      const c = sys.grain(Coordinator, 1);
      expect(await c.result({})).toEqual({ expected: 0, count: 0, sum: 0 });
      await sys.launch(Leaf);
      expect(await c.scatter({ n: 20, value: 1 })).toEqual({ expected: 20 });
      let want = 0;
      for (let i = 0; i < 20; i++) want += (1 + i) * 2;
      await waitFor(async () => (await c.result({})).count === 20);
      expect(await c.result({})).toEqual({ expected: 20, count: 20, sum: want });
      // The relaunched kernel reused the pooled pinned buffer: nothing grew.
      expect(backend.memoryReport()!.stats).toEqual(before);
    },
  );

  it('a grain whose module is not loaded cannot launch while kernels run: typed error, no hang', async () => {
    const backend = new CudaBackend({ partitions: 4 });
    const s1 = system(backend).register(Account, small);
    await s1.start();
    const s2 = system(backend).register(Picky, small);
    const err = await s2.start().then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(ModuleLoadWhileRunningError);
    expect(String((err as Error).message)).toMatch(/Account/);
    // The running kernel is untouched.
    expect(await s1.grain(Account, 1).deposit({ amount: 3 })).toEqual({ balance: 3 });
  });

  it(
    'megabyte vectors: request and reply live in device scratch, not on the stack (VectorAdd, 2^20-element bound)',
    async () => {
      const backend = new CudaBackend({ partitions: 4 });
      const sys = system(backend).register(VectorAdd, {
        placement: 'cuda',
        slotSize: 1 << 15,
        ringCapacity: 64,
        replyCapacity: 64,
      });
      await sys.start();
      expect(backend.launches[0]!.stackBytesPerThread).toBeLessThan(1024);
      const n = 1000;
      const a = Float32Array.from({ length: n }, (_, i) => i * 0.5);
      const b = Float32Array.from({ length: n }, (_, i) => 1 - i);
      const got = (await sys.grain(VectorAdd, 1).add({ a, b })) as { n: number; sum: Float32Array };
      expect(got.n).toBe(n);
      expect(Array.from(got.sum)).toEqual(Array.from(a, (x, i) => Math.fround(x + b[i]!)));
      expect(await sys.grain(VectorAdd, 1).stats({})).toEqual({ calls: 1, elements: n });
    },
  );

  it('a launch that cannot be co-resident fails with CoResidencyError instead of waiting', async () => {
    const first = new CudaBackend({ partitions: 8 });
    const s1 = system(first).register(Coordinator, small).register(Leaf, small);
    await s1.start();
    const perSM = first.launches[0]!.blocksPerSM;
    await s1.shutdown();
    const sms = probe.ok ? probe.device.multiprocessorCount : 0;
    // Capacity = perSM blocks (one SM); each kernel takes ~3/4 of it, so the second cannot fit.
    const blocks = Math.max(1, Math.ceil(perSM * 0.75));
    const backend = new CudaBackend({ reserveSMs: sms - 1, partitions: blocks * 4 - 1 });
    const sys = system(backend).register(Coordinator, small).register(Leaf, small);
    const err = await sys.start().then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(CoResidencyError);
    expect(String((err as Error).message)).toMatch(/blocks/);
  });

  it('1,000 launch/terminate cycles end with device and pinned memory where they began', async () => {
    const backend = new CudaBackend({ partitions: 4 });
    const sys = system(backend, { handshakeTimeoutMs: 5000 }).register(Account, {
      placement: 'cuda',
      maxActors: 1024,
      ringCapacity: 64,
      replyCapacity: 64,
    });
    await sys.start();
    const k = sys.kernel(Account);
    await k.terminate();
    const r0 = backend.memoryReport()!;
    const t0 = performance.now();
    for (let i = 0; i < 1000; i++) {
      if (i % 100 === 0) {
        const m = backend.memoryReport()!.mem;
        console.log(
          `cycle ${i}: ${Math.round(performance.now() - t0)} ms, free ${m.freeBytes - r0.mem.freeBytes} B vs ` +
            `start, pool reserved ${m.poolReservedBytes} B, used ${m.poolUsedBytes} B`,
        );
      }
      await sys.launch(Account);
      if (i % 100 === 0) expect(await sys.grain(Account, i).deposit({ amount: i })).toEqual({ balance: i });
      await k.terminate();
    }
    const r1 = backend.memoryReport()!;
    expect(r1.stats).toEqual(r0.stats);
    expect(Math.abs(r1.mem.freeBytes - r0.mem.freeBytes)).toBeLessThanOrEqual(2 * 1024 * 1024);
    expect(backend.contextsCreated).toBe(1);
    const cached = backend.launches.slice(1);
    expect(cached.every((l) => l.cached)).toBe(true);
  }, 240_000);

  it('a malformed message written raw into the inbound ring is rejected, counted and reported', async () => {
    const sys = system(new CudaBackend()).register(Account, small);
    await sys.start();
    const errors: Error[] = [];
    sys.on('tellError', (e) => errors.push(e.error));
    const k: RingKernel = sys.kernel(Account);
    console.log('malformed: writing raw slots');
    const p = k.lanes[0]!.producer;
    const ring = p.ring;
    const write = (method: number, payload: number[]) => {
      const slot = p.claim();
      const dv = ring.dv;
      dv.setUint32(slot + SLOT.length, payload.length, true);
      dv.setUint32(slot + SLOT.method, method, true);
      dv.setUint32(slot + SLOT.flags, 0, true);
      dv.setUint32(slot + SLOT.corr, 0, true);
      dv.setUint32(slot + SLOT.keyLo, 9, true);
      dv.setUint32(slot + SLOT.keyHi, 0, true);
      dv.setUint32(slot + SLOT.sender, HOST_SENDER, true);
      dv.setUint32(slot + SLOT.grain, k.grainId, true);
      dv.setFloat64(slot + SLOT.time, 0, true);
      ring.u8.set(payload, slot + 48);
      p.publish(slot);
      k.sent++;
    };
    write(0, [0xc1, 0xc1, 0xc1]); // 0xc1 is never valid msgpack
    write(77, [0x80]); // unknown method
    await waitFor(() => errors.length >= 2);
    console.log('malformed: both reported', JSON.stringify(sys.counters(Account)));
    await waitFor(() => settled(sys.counters(Account)));
    expect(errors.every((e) => e instanceof DecodeError)).toBe(true);
    expect(sys.counters(Account).rejected).toBe(2);
    expect(await sys.grain(Account, 9).deposit({ amount: 1 })).toEqual({ balance: 1 });
    expect(SlotFlag.REJECTED).toBe(8);
  });
});

/** Every message the host wrote was taken and finished (processed or rejected) and the counters say so. */
function settled(c: {
  sent: number;
  received: number;
  processed: number;
  rejected: number;
  k2kReceived: number;
}): boolean {
  return c.received === c.sent + c.k2kReceived && c.processed + c.rejected === c.received;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function waitFor(cond: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const end = performance.now() + ms;
  while (!(await cond())) {
    if (performance.now() > end) throw new Error('condition not met in time');
    await sleep(2);
  }
}
