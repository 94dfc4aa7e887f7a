/**
 * Where a cross-silo tell's time goes, stage by stage, in one process (no other silo running): ns per
 * message of each step a tell takes between `ref.tell` on one silo and its ring slot on the other, median of
 * --trials, every stage on the same --n messages (bench/cluster-silo.ts's `bump { n: f64 }`, keys 0..999).
 * The one-thread stages (encode, frame, unframe, check, decode) are timed in CPU time of the process (less
 * swayed by a loaded machine), the others, which span threads or processes, in wall time:
 *
 *   sender   encode     the payload by its schema (core cluster/codec.ts encodeValue)
 *            frame      the entries into frames of --frame entries (cluster-nats frame.ts encodeFrame)
 *   NATS     frames     those frames published on one connection and received on another through a local
 *                       nats-server (per entry; the frames' bytes are what the server and sockets carry)
 *            raw        one publish per message (bench/cluster.ts's floor), received the same way
 *   receiver unframe    decodeFrame (one copy of the frame, names back in place)
 *            check      checkEntry (core cluster/wire.ts), per entry
 *            decode     the payload back to an object (decodeValue)
 *            ring       the object into a running CPU kernel's ring (a local `tell`, the host send path),
 *                       timed until the kernel processed them all
 *   K2K      post       a CPU pool thread's cross-silo sends reaching the host: the flat batch of 6 values a
 *                       send (pool-worker.ts remoteSends, 4096 sends a message) through a MessageChannel
 *            postBytes  the same with each payload as its schema bytes, one transferred buffer a batch
 *
 *   node --import tsx bench/probes/cluster-costs.ts [--n 200000] [--frame 1024] [--trials 5]
 */
import { MessageChannel } from 'node:worker_threads';
import { connect } from '@nats-io/transport-node';
import { Packr } from 'msgpackr';
import { GrainSystem } from '@ringgrain/core';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { decodeFrame, encodeFrame, startNatsServer } from '@ringgrain/cluster-nats';
import { decodeValue, encodeValue } from '../../packages/core/src/cluster/codec.ts';
import { checkEntry } from '../../packages/core/src/cluster/wire.ts';
import { BenchCounter } from '../cluster-silo.ts';
import { median } from '../trials.ts';

const argv = process.argv.slice(2);
const option = (n: string, d: string) => (argv.includes(`--${n}`) ? (argv[argv.indexOf(`--${n}`) + 1] ?? d) : d);
const N = Number(option('n', '200000'));
const FRAME = Number(option('frame', '1024'));
const TRIALS = Math.max(1, Number(option('trials', '5')));
const KEYS = 1000;

const method = BenchCounter.grain.methodByName.get('bump')!;
const schema = method.request;
const payload = { n: 1 };
const ns = (t0: number, n = N) => ((performance.now() - t0) * 1e6) / n;
/** CPU time of this process since `c0`, ns per message: the one-thread stages, less swayed by a loaded machine. */
const cpuNs = (c0: NodeJS.CpuUsage, n = N) => {
  const c = process.cpuUsage(c0);
  return ((c.user + c.system) * 1e3) / n;
};

const server = await startNatsServer();
const pub = await connect({ servers: server.url, ...server.auth });
const sub = await connect({ servers: server.url, ...server.auth });
const cpu = new CpuBackend({ threads: 1 });
const sys = new GrainSystem({ backends: { cpu }, logLevel: 'warn', handleSignals: false });
sys.register(BenchCounter, { placement: 'cpu', ringCapacity: 16_384 });
await sys.start();
const refs = Array.from({ length: KEYS }, (_, k) => sys.grain(BenchCounter, k));

/** NATS: `msgs` published on one connection, timed until all arrived on the other; ns per entry. */
async function through(subject: string, msgs: readonly Uint8Array[], entries: number): Promise<number> {
  let left = msgs.length;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  const s = sub.subscribe(subject, {
    callback: () => {
      if (--left === 0) done();
    },
  });
  await sub.flush();
  const t0 = performance.now();
  for (const m of msgs) pub.publish(subject, m);
  await all;
  const r = ns(t0, entries);
  s.unsubscribe();
  return r;
}

const stages: Record<string, number[]> = {};
const add = (k: string, v: number) => (stages[k] ??= []).push(v);
const raw = new Packr({ useRecords: false }).pack(['BenchCounter', 'bump', 7, { n: 1 }]);
for (let t = 0; t <= TRIALS; t++) {
  // Sender.
  let c0 = process.cpuUsage();
  const bytes: Uint8Array[] = new Array(N);
  for (let i = 0; i < N; i++) bytes[i] = encodeValue(schema, payload, 'BenchCounter', 'bump');
  const encode = cpuNs(c0);
  const entries = bytes.map((b, i) => [0, 'BenchCounter', 'bump', i % KEYS, b, 0, 'silo-a', 0]);
  c0 = process.cpuUsage();
  const frames: Uint8Array[] = [];
  for (let i = 0; i < N; i += FRAME) frames.push(encodeFrame('silo-a', entries.slice(i, i + FRAME)));
  const frame = cpuNs(c0);
  // NATS.
  const natsFrames = await through('probe.frames', frames, N);
  const natsRaw = await through('probe.raw', Array.from({ length: N }, () => raw), N);
  // Receiver.
  c0 = process.cpuUsage();
  const got = frames.map((f) => decodeFrame(f).entries as unknown[][]);
  const unframe = cpuNs(c0);
  c0 = process.cpuUsage();
  let bad = 0;
  for (const es of got) for (const e of es) if (checkEntry(e) !== undefined) bad++;
  const check = cpuNs(c0);
  if (bad) throw new Error(`${bad} entries failed checkEntry`);
  c0 = process.cpuUsage();
  const objs: unknown[] = [];
  for (const es of got) for (const e of es) objs.push(decodeValue(schema, e[4], 'BenchCounter', 'bump'));
  const decode = cpuNs(c0);
  let t0 = performance.now();
  for (let i = 0; i < N; i++) refs[i % KEYS]!.tell.bump(objs[i] as { n: number });
  await sys.idle({ timeoutMs: 120_000 });
  const ring = ns(t0);
  // K2K: the worker's flat batches to the host.
  const { port1, port2 } = new MessageChannel();
  const BATCH = 4096;
  let posted = 0;
  let k2kDone!: () => void;
  const k2kAll = new Promise<void>((r) => (k2kDone = r));
  port2.on('message', (m: unknown[]) => {
    posted += m.length / 6;
    if (posted >= N) k2kDone();
  });
  t0 = performance.now();
  for (let i = 0; i < N; i += BATCH) {
    const flat: unknown[] = [];
    for (let j = i; j < Math.min(N, i + BATCH); j++) flat.push(1, 0, 'bump', j % KEYS, { n: 1 }, 0);
    port1.postMessage(flat);
  }
  await k2kAll;
  const post = ns(t0);
  port1.close();
  // The same batches with each payload as its schema bytes (one transferred buffer a batch) instead of an object.
  const c2 = new MessageChannel();
  let posted2 = 0;
  let bytesDone!: () => void;
  const bytesAll = new Promise<void>((r) => (bytesDone = r));
  c2.port2.on('message', (m: { flat: unknown[]; bytes: Uint8Array }) => {
    for (let j = 0; j < m.flat.length; j += 6) {
      const off = m.flat[j + 4] as number;
      bytes[posted2 % N] = m.bytes.subarray(off, off + (m.flat[j + 5] as number));
      posted2++;
    }
    if (posted2 >= N) bytesDone();
  });
  const one = bytes[0]!;
  t0 = performance.now();
  for (let i = 0; i < N; i += BATCH) {
    const n = Math.min(N, i + BATCH) - i;
    const flat: unknown[] = [];
    const buf = new Uint8Array(n * one.length);
    for (let j = 0; j < n; j++) {
      buf.set(one, j * one.length);
      flat.push(1, 0, 'bump', (i + j) % KEYS, j * one.length, one.length);
    }
    c2.port1.postMessage({ flat, bytes: buf }, [buf.buffer]);
  }
  await bytesAll;
  const postBytes = ns(t0);
  c2.port1.close();
  if (t === 0) continue; // warm-up
  const row = { encode, frame, natsFrames, natsRaw, unframe, check, decode, ring, post, postBytes };
  for (const [k, v] of Object.entries(row)) add(k, v);
  const line = Object.entries(row).map(([k, v]) => `${k} ${v.toFixed(0)}`);
  process.stderr.write(`trial ${t}/${TRIALS}: ${line.join(', ')} ns/msg\n`);
}
await sys.shutdown();
await pub.close();
await sub.close();
await server.stop();

const m = Object.fromEntries(Object.entries(stages).map(([k, v]) => [k, median(v)])) as Record<string, number>;
const sender = m['encode']! + m['frame']!;
const receiver = m['unframe']! + m['check']! + m['decode']! + m['ring']!;
console.log(`cluster tell costs, ns per message, median of ${TRIALS} (n ${N}, ${FRAME} entries a frame)`);
console.log('| stage | ns/msg |');
console.log('|---|---:|');
for (const [k, v] of Object.entries(m)) console.log(`| ${k} | ${v.toFixed(0)} |`);
console.log(`| sender (encode + frame) | ${sender.toFixed(0)} |`);
console.log(`| receiver (unframe + check + decode + ring) | ${receiver.toFixed(0)} |`);
const perS = (k: string) => (1e9 / m[k]! / 1e6).toFixed(2);
console.log(`frames through NATS: ${perS('natsFrames')} M entries/s; raw publishes: ${perS('natsRaw')} M/s`);
