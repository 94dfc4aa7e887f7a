/**
 * `pnpm bench:state-store` — state storage (issue 15 §1): a write-behind flush of N dirty actors with
 * 32-byte states, as one putMany, into LMDB and into PostgreSQL, and a getMany of the same keys; each
 * the median of --trials (default 5). Trial 0 of each store is the first flush (every row inserted) and
 * is reported apart; the trials after it update every row at its expected version. Targets: a flush of
 * 1,000,000 in ≤ 1 s to LMDB and ≤ 3 s to PostgreSQL (2-core development machine).
 *
 * Baselines, what a user would write without bulk calls: LMDB one `put` per actor in a loop (its own
 * transaction each) over --naive-lmdb rows (default 2,000; each commit is flushed to disk, milliseconds apiece);
 * PostgreSQL one INSERT ... ON CONFLICT
 * statement per actor over --naive-pg rows (default 2,000); both extrapolated to N, labelled so.
 *
 *   node --import tsx bench/state-store.ts [--rows 1000000] [--trials 5] [--stores lmdb,postgres]
 *       [--order sequential|shuffled] [--naive-lmdb 2000] [--naive-pg 2000] [--pg-url URL] [--record]
 *
 * PostgreSQL: a server of its own (packages/postgres-store/test/server.ts, fsync on, PostgreSQL's
 * defaults) unless --pg-url names one. Writes bench/results/local/state-store.json (--record:
 * bench/results/state-store.json).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { StateStore } from '@ringgrain/core/types';
import type { StateTable } from '@ringgrain/core/store';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { PostgresStore } from '@ringgrain/postgres-store';
import { startPostgres, type PgServer } from '../packages/postgres-store/test/server.ts';
import { trials } from './trials.ts';
import { commitOf, machineOf } from './record.ts';

const argv = process.argv.slice(2).filter((a) => a !== '--');
if (argv.includes('--help') || argv.includes('-h')) {
  console.log(
    readFileSync(new URL(import.meta.url), 'utf8')
      .split('\n')
      .slice(1, 19)
      .join('\n'),
  );
  process.exit(0);
}
const option = (n: string, d: string) => (argv.includes(`--${n}`) ? (argv[argv.indexOf(`--${n}`) + 1] ?? d) : d);
const N = Number(option('rows', '1000000'));
const TRIALS = Math.max(2, Number(option('trials', '5')));
const STORES = option('stores', 'lmdb,postgres').split(',');
const ORDER = option('order', 'sequential');
const NAIVE_LMDB = Number(option('naive-lmdb', '2000'));
const NAIVE_PG = Number(option('naive-pg', '2000'));
const RECORD = argv.includes('--record');
const SIZE = 32;
const TARGET_S: Record<string, number> = { lmdb: 1, postgres: 3 };
const log = (s: string) => process.stderr.write(`${s}\n`);

const keys = new Float64Array(N);
for (let i = 0; i < N; i++) keys[i] = i;
if (ORDER === 'shuffled') {
  let seed = 12345;
  for (let i = N - 1; i > 0; i--) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const j = seed % (i + 1);
    [keys[i], keys[j]] = [keys[j]!, keys[i]!];
  }
}
/** Generation g's states: every byte depends on the row and g, so a read-back check catches a stale row. */
function states(g: number): Uint8Array {
  const b = new Uint8Array(N * SIZE);
  for (let i = 0; i < b.length; i++) b[i] = (i * 7 + g) & 255;
  return b;
}

interface StoreResult {
  store: string;
  /** This process's CPU seconds (user + system) per flush, median: the JS side alone, less sensitive to other load. */
  flushCpuS: number;
  firstFlushS: number;
  flushS: ReturnType<typeof trials>;
  getS: ReturnType<typeof trials>;
  flushRowsPerS: number;
  getRowsPerS: number;
  targetS: number;
  /** Median flush seconds / target seconds (≤ 1 meets it). */
  ratioToTarget: number;
}

async function timeIt(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

async function measure(name: string, store: StateStore): Promise<StoreResult> {
  await store.open();
  const t: StateTable<number> = await store.table({ name: 'Account', keyKind: 'int', stateSize: SIZE });
  const expected = new Float64Array(N);
  const flushes: number[] = [];
  const cpus: number[] = [];
  const gets: number[] = [];
  let firstFlushS = 0;
  for (let trial = 0; trial <= TRIALS; trial++) {
    const bytes = states(trial);
    const cpu0 = process.cpuUsage();
    const s = await timeIt(() => t.putMany({ keys, expected, states: { bytes, stride: SIZE } }));
    const cpu = process.cpuUsage(cpu0);
    expected.fill(trial + 1);
    if (trial === 0) firstFlushS = s;
    else {
      flushes.push(s);
      cpus.push((cpu.user + cpu.system) / 1e6);
    }
    let read: Awaited<ReturnType<typeof t.getMany>> | undefined;
    const g = await timeIt(async () => (read = await t.getMany(keys)));
    gets.push(g);
    if (read!.found !== N || read!.versions[N - 1] !== trial + 1 || !Buffer.from(read!.bytes).equals(bytes))
      throw new Error(`${name}: getMany after flush ${trial} did not read back what was written`);
    log(
      `   ${name} ${trial === 0 ? 'first flush (inserts)' : `flush ${trial}/${TRIALS}`}: ${s.toFixed(3)} ` +
        `s (this process's CPU ${((cpu.user + cpu.system) / 1e6).toFixed(3)} s); getMany ${g.toFixed(3)} s; ` +
        `load average ${os.loadavg()[0]!.toFixed(1)}`,
    );
  }
  await store.close();
  const flushS = trials(flushes);
  const getS = trials(gets);
  const targetS = TARGET_S[name]! * (N / 1_000_000);
  return {
    store: name,
    flushCpuS: trials(cpus).median,
    firstFlushS,
    flushS,
    getS,
    flushRowsPerS: Math.round(N / flushS.median),
    getRowsPerS: Math.round(N / getS.median),
    targetS,
    ratioToTarget: Number((flushS.median / targetS).toFixed(2)),
  };
}

/** One store.put per actor in a loop (each its own transaction): what a user without putMany writes. */
async function naiveLmdb(dir: string): Promise<{ rows: number; seconds: number; extrapolatedS: number }> {
  const store = new LmdbStore({ dataDir: dir });
  await store.open();
  const t = await store.table({ name: 'Account', keyKind: 'int', stateSize: SIZE });
  const bytes = states(0);
  const s = await timeIt(async () => {
    for (let i = 0; i < NAIVE_LMDB; i++) await t.put(keys[i]!, bytes.subarray(i * SIZE, (i + 1) * SIZE), 0);
  });
  await store.close();
  return { rows: NAIVE_LMDB, seconds: s, extrapolatedS: (s * N) / NAIVE_LMDB };
}

/** One INSERT ... ON CONFLICT DO UPDATE ... WHERE version = expected per actor, autocommit. */
async function naivePg(url: string): Promise<{ rows: number; seconds: number; extrapolatedS: number }> {
  const c = new pg.Client(url);
  await c.connect();
  await c.query(
    'DROP TABLE IF EXISTS naive; CREATE TABLE naive (key bigint PRIMARY KEY, version bigint NOT NULL, ' +
      'state bytea NOT NULL)',
  );
  const bytes = Buffer.from(states(0));
  const s = await timeIt(async () => {
    for (let i = 0; i < NAIVE_PG; i++) {
      await c.query(
        'INSERT INTO naive (key, version, state) VALUES ($1, 1, $2) ON CONFLICT (key) DO UPDATE SET ' +
          'version = naive.version + 1, state = EXCLUDED.state WHERE naive.version = 0',
        [keys[i], bytes.subarray(i * SIZE, (i + 1) * SIZE)],
      );
    }
  });
  await c.query('DROP TABLE naive');
  await c.end();
  return { rows: NAIVE_PG, seconds: s, extrapolatedS: (s * N) / NAIVE_PG };
}

const scratch = mkdtempSync(path.join(os.tmpdir(), 'ringgrain-bench-store-'));
const results: StoreResult[] = [];
const naive: Record<string, { rows: number; seconds: number; extrapolatedS: number }> = {};
let server: PgServer | undefined;
let pgVersion: string | null = null;
try {
  if (STORES.includes('lmdb')) {
    log(
      `== LMDB: flush of ${N.toLocaleString('en-US')} × ${SIZE}-byte states (${ORDER} keys), ${TRIALS} update trials`,
    );
    results.push(await measure('lmdb', new LmdbStore({ dataDir: path.join(scratch, 'lmdb') })));
    if (NAIVE_LMDB > 0) {
      log(`== LMDB baseline: one put per actor over ${NAIVE_LMDB.toLocaleString('en-US')} rows`);
      naive['lmdb'] = await naiveLmdb(path.join(scratch, 'lmdb-naive'));
    }
  }
  if (STORES.includes('postgres')) {
    let url = option('pg-url', '');
    if (!url) {
      server = await startPostgres({ durable: true });
      url = server.url;
      log(`== PostgreSQL server: ${server.binaries}, port ${server.port}, fsync on`);
    }
    const c = new pg.Client(url);
    await c.connect();
    pgVersion = (await c.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version;
    await c.end();
    log(
      `== PostgreSQL ${pgVersion}: flush of ${N.toLocaleString('en-US')} × ${SIZE}-byte states (${ORDER} ` +
        `keys), ${TRIALS} update trials`,
    );
    results.push(await measure('postgres', new PostgresStore({ connection: url, schema: 'bench' })));
    if (NAIVE_PG > 0) {
      log(`== PostgreSQL baseline: one INSERT ... ON CONFLICT per actor over ${NAIVE_PG.toLocaleString('en-US')} rows`);
      naive['postgres'] = await naivePg(url);
    }
  }
} finally {
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
}

console.log(
  `\n store    | first flush | flush (median) | rows/s  | ratio to target | getMany (median) | naive ` +
    '(extrapolated) | bulk speedup',
);
for (const r of results) {
  const nv = naive[r.store];
  console.log(
    ` ${r.store.padEnd(8)} | ${r.firstFlushS.toFixed(3).padStart(9)} s ` +
      `| ${r.flushS.median.toFixed(3).padStart(12)} s | ${(r.flushRowsPerS / 1e6).toFixed(2)} M  ` +
      `| ${String(r.ratioToTarget).padStart(6)} (≤ ${r.targetS} s) ` +
      `| ${r.getS.median.toFixed(3).padStart(14)} s ` +
      `| ${nv ? `${nv.extrapolatedS.toFixed(1)} s (${nv.rows} rows)` : '-'} ` +
      `| ${nv ? `${(nv.extrapolatedS / r.flushS.median).toFixed(0)}×` : '-'}`,
  );
}
const commit = commitOf();
const record = {
  commit,
  date: new Date().toISOString(),
  command: `node --import tsx bench/state-store.ts ${argv.join(' ')}`.trim(),
  machine: machineOf(),
  cores: os.availableParallelism(),
  rows: N,
  stateBytes: SIZE,
  order: ORDER,
  postgresVersion: pgVersion,
  /** 1-minute load average at the end: other work on the machine inflates wall times. */
  loadAverage: os.loadavg()[0],
  results,
  /** Measured over `rows` and extrapolated linearly to N: labelled, not measured at N. */
  naiveExtrapolated: naive,
};
const dir = fileURLToPath(new URL(RECORD ? './results/' : './results/local/', import.meta.url));
mkdirSync(dir, { recursive: true });
writeFileSync(`${dir}state-store.json`, `${JSON.stringify(record, null, 2)}\n`);
log(`wrote ${dir}state-store.json`);
