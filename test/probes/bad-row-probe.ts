/**
 * Diagnoses test/persistence/bad-row.test.ts's cuda (residency) lane step by step on a GPU machine: each phase
 * prints when it starts and ends, and every 2 s a line with the class's metrics while a phase waits.
 *   node --import tsx test/probes/bad-row-probe.ts
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { open } from 'lmdb';
import pino from 'pino';
import { GrainSystem } from '@ringgrain/core';
import { CHUNK, chunkOf, parseChunk, rowOf } from '@ringgrain/core/store';
import { CudaBackend } from '@ringgrain/cuda-backend';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { Stored } from '../fixtures/stored.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'rg-bad-row-probe-'));
const t0 = performance.now();
const log = (s: string) => console.log(`${((performance.now() - t0) / 1000).toFixed(2)}s ${s}`);
/** The residency host block's words of the class's kernel (private fields: a diagnosis, not an API). */
function words(sys: GrainSystem): string {
  try {
    // biome-ignore lint/suspicious/noExplicitAny: reads private fields to diagnose
    const k = sys.kernel(Stored) as any;
    const impl = k.backendKernel;
    const w: Int32Array | undefined = impl?.residency?.host?.words;
    const f = { started: impl?.started, exited: impl?.exited, freed: impl?.freed, core: k.state };
    let dev = '';
    const host = impl?.residency?.host;
    if (host && process.env['PROBE_DEVICE'] === '1') {
      // The device side: ResidencyGlobals' first words, every partition's ack, DeviceGlobals' mode word.
      const g = new Uint32Array(64);
      host.device.copyOut(new Uint8Array(g.buffer), 0);
      const acks = new Uint32Array(impl.partitions);
      host.device.copyOut(new Uint8Array(acks.buffer), host.layout.acksAt);
      host.device.sync();
      const r = impl.residency;
      const dg = new Uint32Array(100);
      r.ctx.copyFromDeviceAsync(new Uint8Array(dg.buffer), impl.device, r.stream, impl.at.globals);
      r.ctx.synchronize(r.stream);
      const nz = (a: Uint32Array) => Array.from(a).flatMap((v, i) => (v ? [`${i}:${v}`] : [])).join(' ');
      dev = ` | resGlobals ${nz(g)} | acks ${Array.from(acks).join(',')} | devGlobals ${nz(dg)}`;
    }
    const line0 = w ? Array.from(w.slice(0, 12)).join(',') : '-';
    const line1 = w ? Array.from(w.slice(32, 36)).join(',') : '-';
    const req = impl?.residency?.host?.waiting;
    return `${JSON.stringify(f)} words ${line0} / ${line1}${dev}${req ? ` | request ${JSON.stringify(req)}` : ''}`;
  } catch (e) {
    return `words: ${(e as Error).message}`;
  }
}
async function phase<T>(name: string, sys: GrainSystem, p: Promise<T>): Promise<T> {
  log(`${name}: start ${words(sys)}`);
  const iv = setInterval(() => {
    log(`${name}: waiting ${JSON.stringify(sys.metrics()['Stored']?.storage ?? {})}`);
    log(`  ${words(sys)}`);
    // Whether the event loop still runs immediates and 1 ms timers (what a residency request's polls wait on).
    const t = performance.now();
    setImmediate(() => log(`  immediate after ${(performance.now() - t).toFixed(1)} ms`));
    setTimeout(() => log(`  1 ms timer after ${(performance.now() - t).toFixed(1)} ms`), 1);
    if (process.env['PROBE_TRACE'] === '1') log(`  active: ${process.getActiveResourcesInfo().join(',')}`);
  }, 2000);
  try {
    const v = await p;
    log(`${name}: done ${JSON.stringify(v)?.slice(0, 300)}`);
    return v;
  } catch (e) {
    log(`${name}: threw ${(e as Error).name}: ${(e as Error).message.slice(0, 300)}`);
    return undefined as T;
  } finally {
    clearInterval(iv);
  }
}
const short = (v: unknown): string => {
  try {
    return (typeof v === 'object' && v !== null ? (v.constructor?.name ?? 'object') : String(v)).slice(0, 60);
  } catch {
    return '?';
  }
};
/** PROBE_TRACE=1: each call of `obj[name]` logged with how it ended (resolved, rejected, threw), in the order run. */
function trace(obj: Record<string, unknown> | undefined, name: string, label: string): void {
  const f = obj?.[name];
  if (!obj || typeof f !== 'function') return log(`trace: ${label} not found`);
  obj[name] = function (this: unknown, ...args: unknown[]) {
    log(`> ${label}(${args.map(short).join(', ')})`);
    let r: unknown;
    try {
      r = f.apply(this, args);
    } catch (e) {
      log(`< ${label} threw ${(e as Error).name}: ${(e as Error).message}`);
      throw e;
    }
    if (r instanceof Promise) {
      r.then(
        (v) => log(`< ${label} resolved ${short(v)}`),
        (e) => log(`< ${label} rejected ${(e as Error)?.name}: ${(e as Error)?.message}`),
      );
    } else log(`< ${label} returned ${short(r)}`);
    return r;
  };
}
function traceAll(sys: GrainSystem): void {
  if (process.env['PROBE_TRACE'] !== '1') return;
  // biome-ignore lint/suspicious/noExplicitAny: private fields, a diagnosis
  const s = sys as any;
  const k = s.kernel(Stored);
  const impl = k.backendKernel;
  const host = impl?.residency?.host;
  trace(host, 'request', 'ResidencyHost.request');
  trace(host, 'deactivateIdle', 'ResidencyHost.deactivateIdle');
  trace(host, 'readStaging', 'ResidencyHost.readStaging');
  trace(host?.host, 'evicted', 'KernelStateHost.evicted');
  trace(impl, 'deactivateIdle', 'CudaKernel.deactivateIdle');
  trace(impl, 'dispose', 'CudaKernel.dispose');
  trace(impl, 'readDirty', 'CudaKernel.readDirty');
  trace(s.persistence, 'beforeStop', 'Persistence.beforeStop');
  trace(s.persistence, 'stopped', 'Persistence.stopped');
  const reg = s.state?.regs?.find((r: { def: { name: string } }) => r.def.name === 'Stored');
  trace(reg?.writeBehind, 'flush', 'WriteBehind.flush');
  trace(reg?.writeBehind, 'flushOnce', 'WriteBehind.flushOnce');
  trace(reg?.writeBehind, 'evicted', 'WriteBehind.evicted');
  trace(k, 'handshake', 'RingKernel.handshake');
  trace(k, 'release', 'RingKernel.release');
  trace(k, 'releaseMemory', 'RingKernel.releaseMemory');
  log(`traced (reg.collecting ${short(reg?.collecting)})`);
}
// Synchronous log lines (in order with the probe's own, none lost when the probe is killed).
const logger = pino({ name: 'ringgrain', level: 'debug' }, pino.destination({ dest: 1, sync: true }));
const make = () =>
  new GrainSystem({
    backends: { x: new CudaBackend({ residency: true }) },
    logger,
    handleSignals: false,
    handshakeTimeoutMs: 5000,
  });

const store = new LmdbStore({ dataDir: dir });
const a = make();
a.register(Stored, { placement: 'x', storage: store });
await phase('a.start', a, a.start());
for (const k of [5, 6]) await phase(`a.add ${k}`, a, a.grain(Stored, k).add({ n: k }));
if (process.env['PROBE_DEACTIVATE_FIRST'] === '1') {
  // A deactivation request while the kernel is active (the path idle collection takes).
  const impl = a.kernel(Stored).backendKernel!;
  await phase('a.deactivateIdle (active)', a, impl.deactivateIdle!(Number.POSITIVE_INFINITY, Date.now()));
  await phase('a.add 5 again', a, a.grain(Stored, 5).add({ n: 1 }));
}
traceAll(a);
await phase('a.shutdown', a, a.shutdown());
await store.close();
const env = open({ path: dir, maxDbs: 64, compression: false });
const db = env.openDB<Buffer, number>({ name: 'Stored', encoding: 'binary', compression: false });
const c = parseChunk(Buffer.from(db.getBinary(chunkOf(5))!));
if (typeof c === 'string') throw new Error(c);
c.dv.setFloat64(c.versionsAt + 8 * rowOf(c, 5 - chunkOf(5) * CHUNK), 0, true);
db.putSync(chunkOf(5), Buffer.from(c.buf));
await env.close();
log('damaged row 5');

const again = new LmdbStore({ dataDir: dir });
const b = make();
b.on('storageError', (e) =>
  log(`storageError ${e.op} ${JSON.stringify(e.keys)} ${e.error.name}: ${e.error.message.slice(0, 200)}`));
b.on('tellError', (e) => log(`tellError ${e.error.name}: ${e.error.message.slice(0, 200)}`));
b.register(Stored, { placement: 'x', storage: again });
await phase('b.start', b, b.start());
const ask = b.grain(Stored, 5).add({ n: 1 });
b.grain(Stored, 5).tell.bump({ n: 1 });
await phase('b.ask 5 (bad row)', b, ask);
await phase('b.add 6', b, b.grain(Stored, 6).add({ n: 1 }));
await phase('b.get 5 again', b, b.grain(Stored, 5).get({}));
await phase('b.idle', b, b.idle());
log(`metrics ${JSON.stringify(b.metrics()['Stored'])}`);
await phase('b.shutdown', b, b.shutdown());
await again.close();
log('end');
process.exit(0);
