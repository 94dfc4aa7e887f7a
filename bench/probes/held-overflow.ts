/**
 * CPU a pool thread spends while it holds K2K messages for a kernel that is deactivated (its ring full):
 * the whole process's CPU time over 1 s, as % of one core, then every message delivered after activate.
 *
 *   node --import tsx bench/probes/held-overflow.ts
 */
import { GrainSystem, Grain, t, type TypesOf } from '../../packages/core/src/index.ts';
import { CpuBackend } from '../../packages/cpu-backend/src/index.ts';

export class Sink extends Grain({
  name: 'Sink',
  module: import.meta.url,
  state: t.struct({ n: t.u32 }),
  methods: { hit: { request: t.struct({}) }, count: { request: t.struct({}), reply: t.struct({ n: t.u32 }) } },
}) {
  hit(s: K['state']): void {
    s.n += 1;
  }
  count(s: K['state']): K['reply']['count'] {
    return { n: s.n };
  }
}
type K = TypesOf<typeof Sink>;

export class Pump extends Grain({
  name: 'Pump',
  module: import.meta.url,
  state: t.struct({ sent: t.u32 }),
  methods: { go: { request: t.struct({ n: t.u32 }) } },
}) {
  go(s: P['state'], m: P['req']['go'], ctx: P['ctx']): void {
    for (let i = 0; i < m.n; i++) ctx.send(Sink, 1, 'hit', {});
    s.sent += m.n;
  }
}
type P = TypesOf<typeof Pump>;

const system = new GrainSystem({
  backends: { cpu: new CpuBackend({ threads: 1 }) },
  logLevel: 'warn',
  handleSignals: false,
});
system.register(Sink, { placement: 'cpu', ringCapacity: 16 }).register(Pump, { placement: 'cpu' });
await system.start();
const sink = system.kernel(Sink);
await sink.deactivate();
system.grain(Pump, 1).tell.go({ n: 2000 });
await new Promise((r) => setTimeout(r, 200));
const c0 = process.cpuUsage();
const t0 = performance.now();
await new Promise((r) => setTimeout(r, 1000));
const c1 = process.cpuUsage(c0);
const pct = ((c1.user + c1.system) / 1000 / (performance.now() - t0)) * 100;
console.log(`process CPU while the pool thread holds K2K for a deactivated kernel: ${pct.toFixed(1)} % of one core`);
console.log(`K2K held for Sink (overflow in use): ${system.metrics()['Sink']?.overflow?.inUse}`);
await sink.activate();
await system.idle();
console.log(`delivered after activate: ${(await system.grain(Sink, 1).count({})).n} of 2000`);
await system.shutdown();
