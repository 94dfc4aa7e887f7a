/**
 * Bulk rows under every supported define set of the kernel (issue 33's liveness bug): with one-lane turns
 * (RG_TURN_LANES=1) and four partitions, pipelined asks, tells and then tellMany rows once stopped with
 * thousands of rows left in the host rings (the ingress warps of four host lanes filled each other's queues
 * with SKIP slots). Each define set builds its own kernel (RINGGRAIN_NVRTC_DEFINES is part of the compile),
 * runs the same mixed load over four partitions and checks every balance the rows and sends made.
 * Skipped without a CUDA driver, with the reason in the lane's name.
 */
import { describe, expect, it } from 'vitest';
import { GrainSystem } from '@ringgrain/core';
import { Account } from '../../../examples/bank/grains.ts';
import { CudaBackend, probeCuda } from '../src/index.ts';

const probe = probeCuda();
const lane = probe.ok
  ? `on the GPU (${probe.device.name})`
  : `on the GPU (skipped: no CUDA driver/device — ${probe.reason})`;
const gpu = probe.ok ? describe : describe.skip;

/** Every define set the runtime supports as a build (worker-config.cuh): the defaults and its baselines. */
const DEFINE_SETS = [
  '',
  'RG_TURN_LANES=1',
  'RG_COOP=0',
  'RG_TURN_LANES=1,RG_COOP=0',
  'RG_LATENCY=0',
  'RG_TURN_LANES=1,RG_LATENCY=0',
] as const;

const ACTORS = 1024;
const ASKS = 20_000;
const TELLS = 100_000;
const ROWS = 400_000;

async function withDefines<T>(defines: string, f: () => Promise<T>): Promise<T> {
  const before = process.env['RINGGRAIN_NVRTC_DEFINES'];
  if (defines) process.env['RINGGRAIN_NVRTC_DEFINES'] = defines;
  else delete process.env['RINGGRAIN_NVRTC_DEFINES'];
  try {
    return await f();
  } finally {
    if (before === undefined) delete process.env['RINGGRAIN_NVRTC_DEFINES'];
    else process.env['RINGGRAIN_NVRTC_DEFINES'] = before;
  }
}

gpu(`bulk rows under every define set, four partitions ${lane}`, () => {
  for (const defines of DEFINE_SETS) {
    const name = `[${defines || 'defaults'}]: pipelined asks, tells, then tellMany rows over ${ACTORS} actors arrive`;
    it(name, async () => {
      await withDefines(defines, async () => {
        const backends = { cuda: new CudaBackend({ partitions: 4 }) };
        const waits = { handshakeTimeoutMs: 60_000, askTimeoutMs: 60_000 };
        const opts = { backends, logLevel: 'warn', handleSignals: false, ...waits } as const;
        const sys = new GrainSystem(opts).register(Account, {
          placement: 'cuda',
          maxActors: ACTORS * 2,
        });
        await sys.start();
        try {
          const refs = Array.from({ length: ACTORS }, (_, k) => sys.grain(Account, k));
          const asks: Promise<unknown>[] = [];
          for (let i = 0; i < ASKS; i++) asks.push(refs[i % ACTORS]!.deposit({ amount: 1 }));
          await Promise.all(asks);
          for (let i = 0; i < TELLS; i++) refs[i % ACTORS]!.tell.deposit({ amount: 1 });
          const key = new Int32Array(ROWS);
          for (let i = 0; i < ROWS; i++) key[i] = i % ACTORS;
          sys.tellMany(Account, 'deposit', { key, amount: new Float64Array(ROWS).fill(1) });
          await sys.idle();
          const c = sys.counters(Account);
          expect(c.processed).toBe(ASKS + TELLS + ROWS);
          expect(c.inboundDepth).toBe(0);
          const share = (n: number, k: number) => Math.floor(n / ACTORS) + (k < n % ACTORS ? 1 : 0);
          const per = (k: number) => share(ASKS, k) + share(TELLS, k) + share(ROWS, k);
          for (let k = 0; k < ACTORS; k += 31) expect((await refs[k]!.balance({})).balance).toBe(per(k));
        } finally {
          await sys.shutdown();
        }
      });
    }, 180_000);
  }
});
