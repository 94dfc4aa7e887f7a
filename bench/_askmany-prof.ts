import { GrainSystem } from '@ringgrain/core';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { Account } from '../examples/bank/grains.ts';
const sys = new GrainSystem({ backends: { cpu: new CpuBackend({ threads: 1 }) }, logLevel: 'warn', handleSignals: false }).register(Account, { placement: 'cpu', maxActors: 2048, ringCapacity: 4096, replyCapacity: 4096 });
await sys.start();
const M = 100_000;
const key = new Int32Array(M); for (let i = 0; i < M; i++) key[i] = i & 1023;
const amount = new Float64Array(M).fill(1);
const rates: number[] = [];
for (let t = 0; t < 8; t++) {
  const t0 = performance.now();
  const r = await sys.askMany(Account, 'deposit', { key, amount });
  rates.push(M / ((performance.now() - t0) / 1000));
  if (r.balance.length !== M) throw new Error('bad');
}
console.log(rates.map((r) => (r / 1e6).toFixed(2)).join(' '), 'M/s');
await sys.shutdown();
