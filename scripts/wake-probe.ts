/**
 * What handing work to another thread costs, below Ringgrain: two worker threads pass a token back and
 * forth through a SharedArrayBuffer word, ROUNDS times, (a) the receiver spinning on the word, (b) the
 * receiver parked in Atomics.wait and woken by Atomics.notify (a futex wake). Half a round trip is one
 * hand-off; the median of --trials. Also the sender's own cost of an Atomics.notify that wakes a thread.
 *
 *   node --import tsx scripts/wake-probe.ts [--rounds 20000] [--trials 5]
 */
import { Worker } from 'node:worker_threads';

const argv = process.argv.slice(2);
const option = (n: string, d: string) => (argv.includes(n) ? (argv[argv.indexOf(n) + 1] ?? d) : d);
const ROUNDS = Number(option('--rounds', '20000'));
const TRIALS = Number(option('--trials', '5'));

// Each thread owns one word (its inbox) on its own 128-byte block; word 64: the notify cost sum (ns).
const src =
  `
const { workerData } = require('node:worker_threads');
const { sab, me, rounds, park, first } = workerData;
const w = new Int32Array(sab);
const mine = me * 32, theirs = (1 - me) * 32;
let notifyNs = 0;
// Both threads up before the clock starts (worker start-up is not a hand-off).
Atomics.add(w, 66, 1);
while (Atomics.load(w, 66) < 2);
const t0 = process.hrtime.bigint();
for (let i = 0; i < rounds; i++) {
  if (!(first && i === 0)) {
    // wait for the token
    if (park) { while (Atomics.load(w, mine) === 0) Atomics.wait(w, mine, 0); }
    else { while (Atomics.load(w, mine) === 0); }
    Atomics.store(w, mine, 0);
  }
  Atomics.store(w, theirs, 1);
  if (park) { const t = process.hrtime.bigint(); Atomics.notify(w, theirs); notifyNs += ` +
  `Number(process.hrtime.bigint() - t); }
}
if (first) { while (Atomics.load(w, mine) === 0) if (park) Atomics.wait(w, mine, 0); }
if (me === 0) {
  Atomics.store(w, 64, Math.round(notifyNs / rounds));
  Atomics.store(w, 65, Number(process.hrtime.bigint() - t0) / 1000);
}
`;

async function trial(park: boolean): Promise<{ handoffUs: number; notifyNs: number }> {
  const sab = new SharedArrayBuffer(4 * 96);
  const done = [0, 1].map(
    (me) =>
      new Promise<void>((resolve, reject) => {
        const w = new Worker(src, { eval: true, workerData: { sab, me, rounds: ROUNDS, park, first: me === 0 } });
        w.on('exit', () => resolve());
        w.on('error', reject);
      }),
  );
  await Promise.all(done);
  const w = new Int32Array(sab);
  return { handoffUs: w[65]! / (2 * ROUNDS), notifyNs: w[64]! };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
for (const park of [false, true]) {
  const hs: number[] = [];
  const ns: number[] = [];
  for (let t = 0; t < TRIALS; t++) {
    const r = await trial(park);
    hs.push(r.handoffUs);
    ns.push(r.notifyNs);
  }
  console.log(
    `${park ? 'parked receiver (Atomics.wait/notify)' : 'spinning receiver'}: ` +
      `hand-off ${median(hs).toFixed(2)} µs ` +
      `(trials ${hs.map((h) => h.toFixed(2)).join(', ')})${park ? `; the sender's Atomics.notify ${(median(ns) / 1000).toFixed(2)} µs` : ''}`,
  );
}
