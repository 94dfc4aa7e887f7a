/**
 * A user's whole program in one file (README "One file is fine"): grain classes that are not exported, a
 * top-level await before anything is registered, the system built inside main(), K2K between two classes on
 * a CPU pool of two threads. Run as `node --import tsx one-file-program.ts`; prints one JSON line.
 */
import { Grain, GrainSystem, t, type TypesOf } from '@ringgrain/core';
import { CpuBackend } from '@ringgrain/cpu-backend';

class Counter extends Grain({
  name: 'OneFileCounter',
  module: import.meta.url,
  state: t.struct({ n: t.u32 }),
  methods: {
    add: { request: t.struct({ by: t.u32, to: t.i32 }) },
    get: { request: t.struct({}), reply: t.struct({ n: t.u32 }) },
  },
}) {
  add(s: C['state'], m: C['req']['add'], ctx: C['ctx']): void {
    s.n += m.by;
    ctx.send(Total, m.to, 'bump', { by: m.by });
  }
  get(s: C['state']): C['reply']['get'] {
    return { n: s.n };
  }
}
type C = TypesOf<typeof Counter>;

class Total extends Grain({
  name: 'OneFileTotal',
  module: import.meta.url,
  state: t.struct({ sum: t.f64 }),
  methods: {
    bump: { request: t.struct({ by: t.u32 }) },
    read: { request: t.struct({}), reply: t.struct({ sum: t.f64 }) },
  },
}) {
  bump(s: T['state'], m: T['req']['bump']): void {
    s.sum += m.by;
  }
  read(s: T['state']): T['reply']['read'] {
    return { sum: s.sum };
  }
}
type T = TypesOf<typeof Total>;

// Something a program awaits before it sets up its system (config, a file, ...).
await new Promise((r) => setTimeout(r, 20));

async function main(): Promise<void> {
  const system = new GrainSystem({
    backends: { cpu: new CpuBackend({ threads: 2 }) },
    logLevel: 'warn',
    handleSignals: false,
  });
  system.register(Counter, { placement: 'cpu' }).register(Total, { placement: 'cpu' });
  await system.start();
  for (let i = 0; i < 1000; i++) system.grain(Counter, i % 10).tell.add({ by: 1, to: i % 3 });
  await system.idle({ timeoutMs: 20_000 });
  const counts = await Promise.all(Array.from({ length: 10 }, (_, k) => system.grain(Counter, k).get({})));
  const totals = await Promise.all([0, 1, 2].map((k) => system.grain(Total, k).read({})));
  const m = system.metrics();
  await system.shutdown();
  console.log(
    JSON.stringify({
      counts: counts.map((c) => c.n),
      totals: totals.map((x) => x.sum),
      k2k: [m['OneFileCounter']!.k2kSent, m['OneFileTotal']!.k2kReceived],
    }),
  );
}

await main();
