/**
 * A lone ask's round trip through core: Account.deposit({ amount: 1 }) on one actor, one ask in flight,
 * every balance checked. The figure of docs/gpu-latency.md (scripts/latency-probe.ts) and of the record's
 * host path (bench/gpu-latest.ts).
 */
import type { GrainSystem } from '../../packages/core/src/index.ts';
import { Account } from '../../examples/bank/grains.ts';

/** 1,000 warm-up asks, then `n` timed ones to actor 42 of a started system: each round trip in µs, in order. */
export async function loneAsks(sys: GrainSystem, n: number): Promise<Float64Array> {
  const a = sys.grain(Account, 42);
  let balance = 0;
  const lat = new Float64Array(n);
  for (let i = 0; i < 1000 + n; i++) {
    const t = process.hrtime.bigint();
    const r = await a.deposit({ amount: 1 });
    const dt = Number(process.hrtime.bigint() - t) / 1000;
    balance += 1;
    if (r.balance !== balance) throw new Error(`ask ${i}: balance ${r.balance}, expected ${balance}`);
    if (i >= 1000) lat[i - 1000] = dt;
  }
  return lat;
}
