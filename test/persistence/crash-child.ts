/**
 * A child process of crash.test.ts. `write <store> <where> <n>`: adds 1 to actors 0..n-1, flushes, prints
 * FLUSHED, then keeps updating every actor without flushing until it is killed. `read <store> <where> <n>`:
 * a new system on the same store prints every actor's count as JSON. <store>: lmdb (<where> a directory)
 * or postgres (<where> the server's URL, then a schema after <n>).
 */
import { GrainSystem } from '@ringgrain/core';
import type { StateStore } from '@ringgrain/core/types';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { PostgresStore } from '@ringgrain/postgres-store';
import { Stored } from '../fixtures/stored.ts';

const [mode, kind, where, count, schema] = process.argv.slice(2);
const n = Number(count);
const store: StateStore =
  kind === 'lmdb' ? new LmdbStore({ dataDir: where! }) : new PostgresStore({ connection: where!, schema: schema! });
const system = new GrainSystem({
  backends: { cpu: new CpuBackend({ threads: 2 }) },
  logLevel: 'silent',
  handleSignals: false,
});
system.register(Stored, { placement: 'cpu', storage: store, flushIntervalMs: 3_600_000 });
await system.start();
const keys = Float64Array.from({ length: n }, (_, i) => i);
if (mode === 'write') {
  await system.askMany(Stored, 'add', { key: keys, n: new Float64Array(n).fill(1) });
  await system.flush();
  process.stdout.write('FLUSHED\n');
  for (;;) {
    // Updates after the last flush: a crash loses exactly these.
    await system.askMany(Stored, 'add', { key: keys, n: new Float64Array(n).fill(1) });
  }
} else {
  const r = await system.askMany(Stored, 'get', { key: keys });
  process.stdout.write(JSON.stringify(Array.from(r.count)) + '\n');
  await system.shutdown();
  await store.close();
  process.exit(0);
}
