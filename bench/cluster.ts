/**
 * `pnpm bench:cluster` — a cluster of silos on NATS (issue 31), against the raw NATS floor in the same
 * run: a local nats-server (JetStream, credentials), two silo processes (bench/cluster-silo.ts, CPU
 * backend, one pool thread each) and this process as a client.
 *
 *   - cross-silo ask p50: --asks sequential asks (await each) to BenchCounter on the first silo, beside raw
 *     NATS request/reply of the same payload to an echo responder in its process (the floor), and the
 *     same asks made inside the silo's process (its own share: CPU kernel turn and reply);
 *   - cross-silo tells/s: --tells tells from the client over 1,000 keys, timed until an ask behind them on
 *     every key returned (FIFO per sender → actor), beside --tells raw publishes counted by a subscriber
 *     in the silo's process; and the same tells as one tellMany from columns;
 *   - K2K between the two silos: --tells ctx.send tells from handlers to 1,000 BenchRelay keys spread over
 *     both silos (about half cross silos: from the worker to the host, then NATS), all K2K/s and the
 *     cross-silo ones/s, timed until both kernels' counters show every one processed.
 * Each figure is the median of --trials (default 5), the sides interleaved within a trial.
 *
 *   node --import tsx bench/cluster.ts [--asks 2000] [--tells 200000] [--trials 5] [--record]
 *
 * Writes bench/results/local/cluster-latest.json (--record: bench/results/cluster-latest.json).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { connect } from '@nats-io/transport-node';
import { Packr } from 'msgpackr';
import { GrainSystem } from '@ringgrain/core';
import { natsCluster, startNatsServer } from '@ringgrain/cluster-nats';
import { BenchCounter, BenchRelay } from './cluster-silo.ts';
import { median, trials } from './trials.ts';
import { commitOf, machineOf } from './record.ts';
import { threadCpuDelta, threadCpuNs, type ThreadCpu } from './thread-cpu.ts';

const argv = process.argv.slice(2).filter((a) => a !== '--');
if (argv.includes('--help') || argv.includes('-h')) {
  console.log(
    readFileSync(new URL(import.meta.url), 'utf8')
      .split('\n')
      .slice(1, 16)
      .join('\n'),
  );
  process.exit(0);
}
const option = (n: string, d: string) => (argv.includes(`--${n}`) ? (argv[argv.indexOf(`--${n}`) + 1] ?? d) : d);
const ASKS = Number(option('asks', '2000'));
const TELLS = Number(option('tells', '200000'));
const TRIALS = Math.max(1, Number(option('trials', '5')));
const RECORD = argv.includes('--record');
const KEYS = 1000;
const log = (s: string) => process.stderr.write(`${s}\n`);

const server = await startNatsServer();
const name = 'bench';
function silo(role: string): Promise<ReturnType<typeof spawn>> {
  const child = spawn(
    process.execPath,
    // RG_SILO_NODE_ARGS: extra node flags for the silo processes (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
    [...(process.env['RG_SILO_NODE_ARGS']?.split(' ').filter(Boolean) ?? []), '--import', 'tsx', fileURLToPath(new URL('./cluster-silo.ts', import.meta.url))],
    {
      env: {
        ...process.env,
        RG_BENCH_SILO: '1',
        RG_BENCH_ROLE: role,
        RG_NATS_URL: server.url,
        RG_NATS_AUTH: JSON.stringify(server.auth),
        RG_CLUSTER: name,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    child.on('exit', (c) => reject(new Error(`silo ${role} exited (${c})`)));
    child.stdout!.setEncoding('utf8').on('data', (s: string) => {
      out += s;
      if (out.includes('READY')) resolve(child);
    });
  });
}
// The first silo hosts BenchCounter (every key of it) and BenchRelay; the second BenchRelay only.
const children = [await silo('main'), await silo('relay')];
const client = new GrainSystem({
  backends: {},
  handleSignals: false,
  logLevel: 'warn',
  cluster: natsCluster({ servers: server.url, name, ...server.auth, deadMs: 30_000 }),
});
await client.start();
await client.cluster!.waitFor(() => client.cluster!.settled(2), 15_000);
const nc = await connect({ servers: server.url, ...server.auth });
const refs = Array.from({ length: KEYS }, (_, k) => client.grain(BenchCounter, k));
// The raw floor carries what an entry carries: method, key and a one-field payload, msgpack.
const raw = new Packr({ useRecords: false }).pack(['BenchCounter', 'add', 7, { n: 1 }]);

async function askP50(): Promise<number> {
  const lat: number[] = [];
  for (let i = 0; i < ASKS; i++) {
    const t0 = performance.now();
    await refs[i % KEYS]!.add({ n: 1 });
    lat.push(performance.now() - t0);
  }
  return median(lat) * 1000;
}
async function rawP50(): Promise<number> {
  const lat: number[] = [];
  for (let i = 0; i < ASKS; i++) {
    const t0 = performance.now();
    await nc.request(`rgbench.${name}.echo`, raw, { timeout: 5000 });
    lat.push(performance.now() - t0);
  }
  return median(lat) * 1000;
}
async function localP50(): Promise<number> {
  const r = await nc.request(`rgbench.${name}.local`, String(ASKS), { timeout: 120_000 });
  return Number(new TextDecoder().decode(r.data));
}
/** Each silo's threads' CPU time (thread-cpu.ts), by role; undefined off Linux. */
async function siloCpu(): Promise<Record<string, ThreadCpu | undefined>> {
  const ask = (r: string) => nc.request(`rgbench.${name}.cpu.${r}`, '', { timeout: 10_000 });
  const [a, b] = await Promise.all([ask('main'), ask('relay')]);
  const read = (m: typeof a) => JSON.parse(new TextDecoder().decode(m.data)) as ThreadCpu | undefined;
  return { main: read(a), relay: read(b) };
}
/** CPU ns per message of the client's main thread, a silo's host (main) thread and its busiest other thread. */
interface CpuPer {
  client: number;
  siloHost: number;
  siloPool: number;
}
const cpuTells: CpuPer[] = [];
const cpuK2K: Array<Omit<CpuPer, 'client'>> = [];
const k2kPerFrame: number[] = [];
async function tellsPerS(): Promise<number> {
  const c0 = threadCpuNs();
  const s0 = await siloCpu();
  const t0 = performance.now();
  for (let i = 0; i < TELLS; i++) refs[i % KEYS]!.tell.bump({ n: 1 });
  await Promise.all(refs.map((r) => r.get({})));
  const rate = TELLS / ((performance.now() - t0) / 1000);
  const c1 = threadCpuNs();
  const s1 = await siloCpu();
  if (c0 && c1 && s0['main'] && s1['main']) {
    const silo = threadCpuDelta(s0['main'], s1['main']);
    cpuTells.push({
      client: threadCpuDelta(c0, c1).main / TELLS,
      siloHost: silo.main / TELLS,
      siloPool: silo.busiest / TELLS,
    });
  }
  return rate;
}
/** The same tells as one tellMany from columns (in a cluster: each row routed on its own). */
const manyKeys = Int32Array.from({ length: TELLS }, (_, i) => i % KEYS);
const manyN = new Float64Array(TELLS).fill(1);
async function tellManyPerS(): Promise<number> {
  const t0 = performance.now();
  client.tellMany(BenchCounter, 'bump', { key: manyKeys, n: manyN });
  await Promise.all(refs.map((r) => r.get({})));
  return TELLS / ((performance.now() - t0) / 1000);
}
async function rawPublishPerS(): Promise<number> {
  await nc.request(`rgbench.${name}.count`, '0');
  const t0 = performance.now();
  for (let i = 0; i < TELLS; i++) nc.publish(`rgbench.${name}.sink`, raw);
  await nc.request(`rgbench.${name}.count`, String(TELLS), { timeout: 60_000 });
  return TELLS / ((performance.now() - t0) / 1000);
}

/** Both silos' BenchRelay processed counts and cross-silo tells, summed. */
async function relayCounters(): Promise<{ processed: number; tellsOut: number; framesOut: number }> {
  const rs = await Promise.all(['main', 'relay'].map((r) => nc.request(`rgbench.${name}.relay.${r}`, '', { timeout: 10_000 })));
  const out = { processed: 0, tellsOut: 0, framesOut: 0 };
  for (const r of rs) {
    const c = JSON.parse(new TextDecoder().decode(r.data)) as typeof out;
    out.processed += c.processed;
    out.tellsOut += c.tellsOut;
    out.framesOut += c.framesOut;
  }
  return out;
}
const FANS = 50;
const fans = Array.from({ length: FANS }, (_, k) => client.grain(BenchRelay, k));
/**
 * K2K between the two silos: FANS BenchRelay actors (on both silos) each send TELLS / FANS bump tells
 * with ctx.send to the KEYS BenchRelay keys (spread over both silos, so about half leave through the
 * host and NATS), timed from the fan tells until both silos' kernels processed every bump (their counters,
 * polled). Returns all K2K bumps/s and the cross-silo ones/s (the silos' tellsOut).
 */
async function k2kPerS(): Promise<{ all: number; cross: number }> {
  const per = Math.ceil(TELLS / FANS);
  const s0 = await siloCpu();
  const before = await relayCounters();
  const t0 = performance.now();
  for (let f = 0; f < FANS; f++) fans[f]!.tell.fan({ n: per, keys: KEYS, from: f * 13 });
  let now = before;
  while (now.processed - before.processed < per * FANS + FANS) {
    await new Promise((r) => setTimeout(r, 2));
    now = await relayCounters();
  }
  const s = (performance.now() - t0) / 1000;
  const s1 = await siloCpu();
  const cross = now.tellsOut - before.tellsOut;
  // Entries a frame (the barrier's own control traffic is in the frames too: a few a poll).
  k2kPerFrame.push(cross / (now.framesOut - before.framesOut));
  if (s0['main'] && s1['main'] && s0['relay'] && s1['relay']) {
    // Per cross-silo message, both silos' host threads together (its send on one, its receive on the other);
    // per K2K message, the busier silo's busiest other thread over its half (its pool thread: fans and bumps).
    const a = threadCpuDelta(s0['main'], s1['main']);
    const b = threadCpuDelta(s0['relay'], s1['relay']);
    cpuK2K.push({ siloHost: (a.main + b.main) / cross, siloPool: Math.max(a.busiest, b.busiest) / ((per * FANS) / 2) });
  }
  return { all: (per * FANS) / s, cross: cross / s };
}

// Warm-up (JIT, connections, actor activations) outside the trials: one of each measurement.
await askP50();
await rawP50();
await localP50();
await tellsPerS();
await tellManyPerS();
await rawPublishPerS();
await k2kPerS();
const askUs: number[] = [];
const localUs: number[] = [];
const rawUs: number[] = [];
const tellRate: number[] = [];
const manyRate: number[] = [];
const pubRate: number[] = [];
const k2kRate: number[] = [];
const k2kCross: number[] = [];
for (let t = 0; t < TRIALS; t++) {
  askUs.push(await askP50());
  rawUs.push(await rawP50());
  localUs.push(await localP50());
  tellRate.push(await tellsPerS());
  manyRate.push(await tellManyPerS());
  pubRate.push(await rawPublishPerS());
  const k = await k2kPerS();
  k2kRate.push(k.all);
  k2kCross.push(k.cross);
  const ct = cpuTells[cpuTells.length - 1];
  const ck = cpuK2K[cpuK2K.length - 1];
  log(
    `trial ${t + 1}/${TRIALS}: ` +
      (ct && ck
        ? `CPU ns/tell client ${ct.client.toFixed(0)}, silo host ${ct.siloHost.toFixed(0)}, ` +
          `pool ${ct.siloPool.toFixed(0)}; ` +
          `ns/cross-silo K2K host ${ck.siloHost.toFixed(0)}, pool ${ck.siloPool.toFixed(0)}, ` +
          `${k2kPerFrame[k2kPerFrame.length - 1]!.toFixed(0)} a frame`
        : 'no thread CPU times here'),
  );
  log(
    `trial ${t + 1}/${TRIALS}: ask p50 ${askUs[t]!.toFixed(0)} µs (raw request ${rawUs[t]!.toFixed(0)} µs, in-silo ask ${localUs[t]!.toFixed(0)} µs); tells ${(tellRate[t]! / 1e6).toFixed(3)} M/s, tellMany ${(manyRate[t]! / 1e6).toFixed(3)} M/s (raw publish ${(pubRate[t]! / 1e6).toFixed(3)} M/s); K2K ${(k2kRate[t]! / 1e6).toFixed(3)} M/s, of which cross-silo ${(k2kCross[t]! / 1e6).toFixed(3)} M/s`,
  );
}
function medians<T extends object>(rows: T[]): Record<string, number> {
  return Object.fromEntries(Object.keys(rows[0]!).map((k) => [k, median(rows.map((r) => r[k as keyof T] as number))]));
}
const m = client.cluster!.metrics();
const result = {
  bench: 'cluster',
  commit: commitOf(),
  machine: machineOf(),
  cores: (await import('node:os')).cpus().length,
  node: process.version,
  natsServer: server.version,
  date: new Date().toISOString(),
  command: `node --import tsx bench/cluster.ts --asks ${ASKS} --tells ${TELLS} --trials ${TRIALS}`,
  setup:
    'one nats-server (127.0.0.1, JetStream, user/password), two silo processes (CPU backend, 1 pool thread each; the first hosts BenchCounter, both host BenchRelay), this process as a client',
  askP50Us: trials(askUs),
  rawRequestP50Us: trials(rawUs),
  askP50OverRaw: median(askUs) / median(rawUs),
  inSiloAskP50Us: trials(localUs),
  tellsPerS: trials(tellRate),
  rawPublishPerS: trials(pubRate),
  tellsOverRawPublish: median(tellRate) / median(pubRate),
  tellManyPerS: trials(manyRate),
  tellManyOverRawPublish: median(manyRate) / median(pubRate),
  k2kPerS: trials(k2kRate),
  k2kCrossSiloPerS: trials(k2kCross),
  k2kCrossSiloOverRawPublish: median(k2kCross) / median(pubRate),
  // Thread CPU time per message (Linux, thread-cpu.ts), median of the trials: what bounds the rates on a host
  // with a core per thread. Tells: the client's thread, the receiving silo's host thread and pool thread.
  // K2K: both silos' host threads per cross-silo message, the busier pool thread per K2K message.
  cpuNsPerTell: cpuTells.length > 1 ? medians(cpuTells.slice(1)) : undefined,
  cpuNsK2K: cpuK2K.length > 1 ? medians(cpuK2K.slice(1)) : undefined,
  k2kCrossSiloPerFrame: median(k2kPerFrame.slice(1)),
  client: { framesOut: m['framesOut'], tellsOut: m['tellsOut'], asksOut: m['asksOut'], bytesOut: m['bytesOut'] },
};
console.log(JSON.stringify(result, null, 2));
const dir = fileURLToPath(new URL(RECORD ? './results/' : './results/local/', import.meta.url));
mkdirSync(dir, { recursive: true });
writeFileSync(`${dir}cluster-latest.json`, `${JSON.stringify(result, null, 2)}\n`);
await nc.close();
await client.shutdown();
for (const c of children) {
  c.removeAllListeners('exit');
  c.kill('SIGTERM');
  await new Promise((r) => c.once('exit', r));
}
await server.stop();
