/**
 * The remote end of `bench/cluster.ts`, its own process: a silo (CPU backend, one pool thread) hosting
 * BenchCounter, and beside it the raw NATS floor on its own connection: an echo responder (request/reply
 * floor) and a sink that counts plain publishes (publish floor).
 */
import { connect } from '@nats-io/transport-node';
import { GrainSystem, Grain, t, type TypesOf } from '@ringgrain/core';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { natsCluster } from '@ringgrain/cluster-nats';
import { threadCpuNs } from './thread-cpu.ts';

export class BenchCounter extends Grain({
  name: 'BenchCounter',
  module: import.meta.url,
  state: t.struct({ total: t.f64, count: t.u32 }),
  methods: {
    add: { request: t.struct({ n: t.f64 }), reply: t.struct({ total: t.f64 }) },
    bump: { request: t.struct({ n: t.f64 }) },
    get: { request: t.struct({}), reply: t.struct({ total: t.f64, count: t.u32 }) },
  },
}) {
  add(s: B['state'], m: B['req']['add']): B['reply']['add'] {
    s.total += m.n;
    s.count += 1;
    return { total: s.total };
  }
  bump(s: B['state'], m: B['req']['bump']): void {
    s.total += m.n;
    s.count += 1;
  }
  get(s: B['state']): B['reply']['get'] {
    return { total: s.total, count: s.count };
  }
}
type B = TypesOf<typeof BenchCounter>;

/** K2K across silos: `fan` sends `n` bump tells (ctx.send) to keys 0..keys-1, spread over both silos. */
export class BenchRelay extends Grain({
  name: 'BenchRelay',
  module: import.meta.url,
  state: t.struct({ count: t.f64 }),
  methods: {
    fan: { request: t.struct({ n: t.u32, keys: t.u32, from: t.u32 }) },
    bump: { request: t.struct({ n: t.f64 }) },
    get: { request: t.struct({}), reply: t.struct({ count: t.f64 }) },
  },
}) {
  fan(_s: BR['state'], m: BR['req']['fan'], ctx: BR['ctx']): void {
    for (let i = 0; i < m.n; i++) ctx.send(BenchRelay, (m.from + i) % m.keys, 'bump', { n: 1 });
  }
  bump(s: BR['state'], m: BR['req']['bump']): void {
    s.count += m.n;
  }
  get(s: BR['state']): BR['reply']['get'] {
    return { count: s.count };
  }
}
type BR = TypesOf<typeof BenchRelay>;

if (process.env['RG_BENCH_SILO'] === '1') {
  const url = process.env['RG_NATS_URL']!;
  const auth = JSON.parse(process.env['RG_NATS_AUTH']!) as Record<string, string>;
  const name = process.env['RG_CLUSTER']!;
  const system = new GrainSystem({
    backends: { cpu: new CpuBackend({ threads: 1 }) },
    logLevel: 'warn',
    // A throughput bench, not a failure detector: a loaded machine must not time a busy silo out.
    cluster: natsCluster({ servers: url, name, ...auth, deadMs: 30_000 }),
  });
  // RG_BENCH_ROLE 'relay': the second silo, hosting BenchRelay only (BenchCounter's keys stay on the first).
  const role = process.env['RG_BENCH_ROLE'] ?? 'main';
  if (role === 'main') system.register(BenchCounter, { placement: 'cpu', ringCapacity: 16_384 });
  system.register(BenchRelay, { placement: 'cpu', ringCapacity: 16_384 });
  await system.start();
  const nc = await connect({ servers: url, ...auth });
  // The K2K barrier: messages BenchRelay's kernel here processed (its counters), and this silo's cross-silo tells.
  nc.subscribe(`rgbench.${name}.relay.${role}`, {
    callback: (_e, m) =>
      void m.respond(
        JSON.stringify({
          processed: system.metrics()['BenchRelay']!.processed,
          tellsOut: system.cluster!.metrics()['tellsOut'],
          framesOut: system.cluster!.metrics()['framesOut'],
        }),
      ),
  });
  // Each thread's CPU time (thread-cpu.ts): what a phase cost this silo's host thread and its pool thread.
  nc.subscribe(`rgbench.${name}.cpu.${role}`, {
    callback: (_e, m) => void m.respond(JSON.stringify(threadCpuNs() ?? null)),
  });
  // The raw floor and the in-silo asks: on the first silo only.
  if (role === 'main') {
    nc.subscribe(`rgbench.${name}.echo`, { callback: (_e, m) => void m.respond(m.data) });
    let count = 0;
    let waiter: { n: number; respond: () => void } | undefined;
    nc.subscribe(`rgbench.${name}.sink`, {
      callback: () => {
        count++;
        if (waiter && count >= waiter.n) {
          waiter.respond();
          waiter = undefined;
        }
      },
    });
    nc.subscribe(`rgbench.${name}.count`, {
      callback: (_e, m) => {
        const n = Number(new TextDecoder().decode(m.data));
        if (n === 0) {
          count = 0;
          m.respond('0');
          return;
        }
        if (count >= n) m.respond(String(count));
        else waiter = { n, respond: () => m.respond(String(count)) };
      },
    });
    // The same asks run in this process (no NATS hop): the silo's own share of a cross-silo ask.
    nc.subscribe(`rgbench.${name}.local`, {
      callback: (_e, m) => {
        void (async () => {
          const n = Number(new TextDecoder().decode(m.data));
          const lat: number[] = [];
          for (let i = 0; i < n; i++) {
            const t0 = performance.now();
            await system.grain(BenchCounter, i % 1000).add({ n: 1 });
            lat.push(performance.now() - t0);
          }
          lat.sort((a, b) => a - b);
          m.respond(String(lat[lat.length >> 1]! * 1000));
        })();
      },
    });
  }
  process.stdout.write(`READY ${system.cluster!.self}\n`);
}
