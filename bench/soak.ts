/**
 * Soak: 10,000,000 messages (mixed asks, tells and K2K transfers) through one backend, then check that
 * nothing was lost or invented and that memory did not grow.
 *
 *   pnpm soak -- --backend cpu [--messages 10000000] [--accounts 10000]
 *
 * Checks, all measured: kernel counters balance (sent + k2kReceived = processed + rejected), total money
 * equals what was deposited (transfers move money, never create or lose it), and heap / RSS after the
 * warm-up third vs at the end (after a forced GC). Writes bench/results/local/soak-<backend>.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Account } from '../examples/bank/grains.ts';
import { buildSystem, intFlag, mulberry32, parseArgs, progress } from '../examples/shared/backend.ts';

const args = parseArgs();
const total = intFlag(args, 'messages', 10_000_000);
const accounts = intFlag(args, 'accounts', 10_000);
const gc = (globalThis as { gc?: () => void }).gc;

const { system, describe } = await buildSystem(args.backend, { logLevel: 'warn' });
system.register(Account, { placement: args.backend, ringCapacity: 1 << 14, maxActors: accounts * 2 });
await system.start();
const kernel = system.kernel(Account);
const rand = mulberry32(7);
let deposited = 0;
let asks = 0;
let tells = 0;
let transfers = 0;
/** A backend that can say what it holds outside the JS heap (the CUDA backend: pinned and device memory). */
type MemoryReporting = {
  memoryReport?: () => { stats: { pinnedBytes: number; deviceBytes: number }; mem: { freeBytes: number } } | undefined;
};
const memory: Array<{
  messages: number;
  heapMB: number;
  rssMB: number;
  pinnedBytes?: number;
  deviceBytes?: number;
  deviceFreeBytes?: number;
}> = [];
const sample = (messages: number) => {
  gc?.();
  const m = process.memoryUsage();
  const r = (kernel.backend as MemoryReporting).memoryReport?.();
  memory.push({
    messages,
    heapMB: m.heapUsed / 2 ** 20,
    rssMB: m.rss / 2 ** 20,
    ...(r
      ? { pinnedBytes: r.stats.pinnedBytes, deviceBytes: r.stats.deviceBytes, deviceFreeBytes: r.mem.freeBytes }
      : {}),
  });
};

const bar = progress('soak', total);
const t0 = performance.now();
const messages = () => {
  const c = kernel.counters();
  return c.sent + c.k2kSent;
};
let inflight: Promise<unknown>[] = [];
let nextSample = Math.floor(total / 3);
sample(0);
while (messages() < total) {
  for (let i = 0; i < 1000; i++) {
    const r = rand();
    const key = Math.floor(rand() * accounts);
    if (r < 0.1) {
      const amount = 1 + Math.floor(rand() * 100);
      deposited += amount;
      asks++;
      inflight.push(system.grain(Account, key).deposit({ amount }));
    } else if (r < 0.5) {
      const amount = 1 + Math.floor(rand() * 10);
      deposited += amount;
      tells++;
      const p = system.grain(Account, key).tell.credit({ amount });
      if (p) await p;
    } else {
      transfers++;
      const p = system
        .grain(Account, key)
        .tell.transfer({ to: Math.floor(rand() * accounts), amount: 1 + Math.floor(rand() * 20) });
      if (p) await p;
    }
  }
  await Promise.all(inflight);
  inflight = [];
  const n = messages();
  bar.update(Math.min(n, total));
  if (n >= nextSample) {
    sample(n);
    nextSample += Math.floor(total / 3);
  }
}
// Quiesce: every message taken and turned, then read every balance.
await system.idle({ timeoutMs: 120_000 });
bar.stop();
const seconds = (performance.now() - t0) / 1000;
let money = 0;
for (let k = 0; k < accounts; k++) money += (await system.grain(Account, k).balance({})).balance;
const c = kernel.counters();
sample(messages());
await system.shutdown();

const balanced = c.sent + c.k2kReceived === c.processed + c.rejected;
const first = memory[1] ?? memory[0]!;
const last = memory[memory.length - 1]!;
const record = {
  date: new Date().toISOString(),
  backend: describe,
  messages: messages(),
  asks,
  tells,
  transfers,
  seconds,
  messagesPerSecond: Math.round(messages() / seconds),
  counters: c,
  balanced,
  moneyExpected: deposited,
  moneyFound: money,
  memory,
  heapGrowthMB: last.heapMB - first.heapMB,
  rssGrowthMB: last.rssMB - first.rssMB,
  ...(last.deviceFreeBytes !== undefined && first.deviceFreeBytes !== undefined
    ? {
        pinnedGrowthBytes: (last.pinnedBytes ?? 0) - (first.pinnedBytes ?? 0),
        deviceAllocGrowthBytes: (last.deviceBytes ?? 0) - (first.deviceBytes ?? 0),
        deviceFreeDropBytes: first.deviceFreeBytes - last.deviceFreeBytes,
      }
    : {}),
  gcForced: gc !== undefined,
};
mkdirSync(new URL('./results/local/', import.meta.url), { recursive: true });
writeFileSync(new URL(`./results/local/soak-${args.backend}.json`, import.meta.url), JSON.stringify(record, null, 2));
console.log(
  `soak on ${describe}: ${record.messages.toLocaleString()} messages (${asks} asks, ${tells} ` +
    `tells, ${transfers} transfers + ${c.k2kSent} K2K) in ${seconds.toFixed(1)} s ` +
    `= ${record.messagesPerSecond.toLocaleString()} msg/s`,
);
console.log(
  `counters: sent ${c.sent} + k2kReceived ${c.k2kReceived} = ${c.sent + c.k2kReceived}; ` +
    `processed ${c.processed} + rejected ${c.rejected} = ${c.processed + c.rejected} ` +
    `→ ${balanced ? 'balanced' : 'NOT BALANCED'}`,
);
console.log(`money: deposited ${deposited}, found ${money} → ${money === deposited ? 'conserved' : 'MISMATCH'}`);
if (record.deviceFreeDropBytes !== undefined)
  console.log(
    `GPU memory from ${first.messages.toLocaleString()} msgs to the end: ` +
      `pinned ${record.pinnedGrowthBytes} B, device allocations ${record.deviceAllocGrowthBytes} B, device ` +
      `free memory dropped ${record.deviceFreeDropBytes} B`,
  );
console.log(
  `memory after ${first.messages.toLocaleString()} msgs: heap ${first.heapMB.toFixed(1)} MB ` +
    `rss ${first.rssMB.toFixed(1)} MB; at the end: heap ${last.heapMB.toFixed(1)} MB ` +
    `rss ${last.rssMB.toFixed(1)} MB (growth heap ${record.heapGrowthMB.toFixed(1)} MB, ` +
    `rss ${record.rssGrowthMB.toFixed(1)} MB)`,
);
if (!balanced || money !== deposited) process.exit(1);
