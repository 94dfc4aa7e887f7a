/**
 * K2K overflow stress (`node --import tsx bench/probes/ov-stress.ts --backend cpu|cuda [--senders 8192] [--fan 32]
 * [--targets 4096] [--hot 0] [--rounds 400] [--seconds 120] [--stall-s 20] [--partitions 64] [--queue-log2 4]
 * [--threads T] [--inject-loss]`).
 *
 * Rounds of one burst each: the host tells every sender `fire`, each sends `fan` K2K `hit`s (fan-out over
 * 32 targets a sender), and the host waits until the system is quiet (every host and K2K message
 * processed, seen twice in a row). The device queues are tiny (2^queue-log2 slots) so almost every hit
 * goes through the target kernel's overflow lists, appended to by every worker warp and lane at once.
 * --hot K puts every target in the first K partitions (the CUDA backend's rg_partition), so a few
 * lists take all the appends. A round that is not quiet within --stall-s seconds is a stall: the script
 * prints where every kernel stands (K2K sent/received, overflow in use) and exits 1. At the end it asks
 * every target what it got and compares count, sum of message values and per-sender order (first 32
 * senders) with a JS computation; exits 1 on any difference, 0 when everything arrived.
 * New rounds stop after --seconds (the run then checks what it did), so a GPU run (with a cold NVRTC compile) stays
 * under ~3 minutes.
 * --inject-loss makes the expectation one message more than was sent (the check must then fail); --stall-s 0
 * makes the first round a stall (the stall report must then print).
 */
import { Blast, TRACKED, blastValue } from './ov-stress-grains.ts';
import { buildSystem, fail, intFlag, mulberry32, parseArgs, whereItStands } from '../../examples/shared/backend.ts';

const args = parseArgs();
const S = intFlag(args, 'senders', 8192);
const FAN = intFlag(args, 'fan', 32);
const T = intFlag(args, 'targets', 4096);
const HOT = intFlag(args, 'hot', 0);
/** Checks the checker: the expectation of one target is off by one message (the run must FAIL). */
const INJECT = args.flags.has('inject-loss');
const ROUNDS = intFlag(args, 'rounds', 400);
const SECONDS = intFlag(args, 'seconds', 120);
const STALL_S = intFlag(args, 'stall-s', 20);
const PARTITIONS = intFlag(args, 'partitions', 64);
const QUEUE = 1 << intFlag(args, 'queue-log2', 4);
if (S < TRACKED || S > 1_000_000) fail(`--senders must be in ${TRACKED}..1000000`);
if (T < 32) fail('--targets must be at least 32 (a sender fans out over 32)');
if (FAN < 1 || FAN > 4096) fail('--fan must be in 1..4096');
if (ROUNDS * FAN >= 2 ** 32 - 1) fail('--rounds × --fan must stay below 2^32 (message seqs are u32)');
if (HOT > PARTITIONS) fail('--hot must be at most --partitions');

/** rg_partition (device.ts): (key · 0x9E3779B97F4A7C15 mod 2^64) >> 32, mod partitions. */
function devicePartition(key: number, parts: number): number {
  const h = (BigInt.asUintN(64, BigInt(key)) * 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;
  return Number((h >> 32n) % BigInt(parts));
}

// Targets: keys from S up; with --hot K only those the CUDA backend puts in partitions 0..K-1.
const targets: number[] = [];
for (let k = S; targets.length < T; k++) if (HOT === 0 || devicePartition(k, PARTITIONS) < HOT) targets.push(k);
// Each sender fans out over 32 targets, a list chosen per (sender, round) from 64 seeded lists.
const rnd = mulberry32(7);
const LISTS = 64;
const lists: number[][] = Array.from({ length: LISTS }, () =>
  Array.from({ length: 32 }, () => targets[Math.floor(rnd() * T)]!),
);
const listOf = (sender: number, round: number) => lists[(sender * 7 + round) % LISTS]!;

const cudaOptions: Record<string, unknown> = { partitions: PARTITIONS, queueCapacity: QUEUE };
const { system, placement, describe } = await buildSystem(
  args.backend,
  {},
  cudaOptions,
  args.flags.has('threads') ? { threads: intFlag(args, 'threads', 1) } : {},
);
system.register(Blast, { placement, maxActors: Math.max(1024, S + T), ringCapacity: 1 << 16 });
let tellErrors = 0;
system.on('tellError', (e) => {
  if (tellErrors++ < 5) console.error(`tell failed: ${e.grain}.${e.method}: ${e.error.message}`);
});
await system.start();
console.log(
  `ov-stress: ${describe}; ${S} senders × ${FAN} hits a round over ${T} ` +
    `targets${HOT ? ` (all in partitions 0..${HOT - 1})` : ''}; ${PARTITIONS} partitions × ${QUEUE} slots`,
);

const where = () => whereItStands(system);

/** Quiet: every message sent (host and K2K) processed (system.idle); false after stallMs. */
async function quiet(stallMs: number): Promise<boolean> {
  return system.idle({ timeoutMs: stallMs }).then(
    () => true,
    () => false,
  );
}

async function finish(code: number): Promise<never> {
  // A stalled kernel may never drain on STOP: do not wait for the shutdown forever.
  await Promise.race([system.shutdown().catch(() => undefined), new Promise((r) => setTimeout(r, 15_000))]);
  process.exit(code);
}

const got = new Map<number, { n: number; sum: number }>();
for (const k of targets) got.set(k, { n: 0, sum: 0 });
const t0 = performance.now();
let rounds = 0;
let maxInUse = 0;
for (let round = 0; round < ROUNDS && performance.now() - t0 < SECONDS * 1000; round++) {
  const tr = performance.now();
  for (let s = 0; s < S; s++) {
    const p = system.grain(Blast, s).tell.fire({ round, fan: FAN, targets: listOf(s, round) });
    if (p) await p;
  }
  for (let s = 0; s < S; s++) {
    const l = listOf(s, round);
    for (let i = 0; i < FAN; i++) {
      const e = got.get(l[(s + i) % 32]!)!;
      e.n++;
      e.sum = (e.sum + blastValue(s, round, i)) >>> 0;
    }
  }
  const ok = await quiet(STALL_S * 1000);
  for (const c of Object.values(system.metrics())) maxInUse = Math.max(maxInUse, c.overflow?.highWater ?? 0);
  rounds++;
  if (!ok) {
    console.error(
      `STALL in round ${round} (${rounds} rounds, ${((performance.now() - t0) / 1000).toFixed(1)} s): not ` +
        `quiet within ${STALL_S} s\n  ${where()}`,
    );
    await finish(1);
  }
  if (round % 20 === 0) console.log(`round ${round}: ${(performance.now() - tr).toFixed(0)} ms; ${where()}`);
}
const secs = (performance.now() - t0) / 1000;
const k2k = Object.values(system.metrics()).reduce((a, c) => a + c.k2kSent, 0);
console.log(
  `${rounds} rounds, ${k2k.toLocaleString('en-US')} K2K messages in ${secs.toFixed(1)} s ` +
    `(${(k2k / secs / 1e6).toFixed(2)} M/s), overflow high-water ${maxInUse}`,
);

// Every target: count, sum and order.
if (INJECT) got.get(targets[0]!)!.n++;
const problems: string[] = [];
for (let j = 0; j < T; j += 512) {
  const part = targets.slice(j, j + 512);
  const answers = await Promise.all(part.map((k) => system.grain(Blast, k).read({})));
  part.forEach((k, x) => {
    const a = answers[x]!;
    const e = got.get(k)!;
    if (a.got !== e.n || a.sum !== e.sum || a.bad !== 0) {
      if (problems.length < 10)
        problems.push(`target ${k}: got ${a.got} (want ${e.n}), sum ${a.sum} (want ${e.sum}), out of order ${a.bad}`);
      else if (problems.length === 10) problems.push('…');
    }
  });
}
const m = system.metrics();
for (const [name, c] of Object.entries(m)) {
  if (c.handlerErrors || c.rejected)
    problems.push(`${name}: ${c.handlerErrors} handler errors, ${c.rejected} rejected`);
  if (c.k2kSent !== c.k2kReceived) problems.push(`${name}: K2K sent ${c.k2kSent}, received ${c.k2kReceived}`);
}
if (tellErrors) problems.push(`${tellErrors} tells failed`);
if (problems.length) {
  console.error(`FAIL\n  ${problems.join('\n  ')}\n  ${where()}`);
  await finish(1);
}
console.log(`PASS: every one of ${k2k.toLocaleString('en-US')} K2K messages arrived, in order per tracked sender`);
await finish(0);
