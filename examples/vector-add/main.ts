/**
 * Vector add (`pnpm example:vector-add -- --backend cpu|cuda|auto [--sizes 10,25,100,...] [--seed S] [--partitions
 * P]`).
 *
 * For each size: a system whose slot size is chosen from the size (two f32 vectors in, one out), a batch
 * of asks `add({a, b})` across a few actors, and every element of every reply checked against
 * `Math.fround(a[i] + b[i])` (exact: one f32 rounding of an exact sum). Then the error paths: a vector too
 * large for the slot (PayloadTooLargeError) and one longer than the schema allows (SchemaValidationError).
 * Exits 1 on any mismatch or if an error path does not raise the expected typed error.
 */
import { PayloadTooLargeError, SchemaValidationError, SLOT_HEADER_SIZE, encodedSize } from '@ringgrain/core';
import { MAX_LEN, VectorAdd } from './grains.ts';
import {
  buildSystem,
  fail,
  intFlag,
  mulberry32,
  ms,
  parseArgs,
  progress,
  rejectUnknown,
  type BackendChoice,
} from '../shared/backend.ts';

const args = parseArgs();
rejectUnknown(args, ['sizes', 'seed', 'partitions', 'inject-mismatch']);
const seed = intFlag(args, 'seed', 7);
const sizesFlag = args.flags.get('sizes');
if (sizesFlag === true) fail('--sizes needs a value: comma-separated element counts, e.g. --sizes 10,1000');
// --partitions: the CUDA kernel's worker warps (default 32 for a small class); idle ones take chunks of a large turn's
// copies and loops.
const cudaOptions: Record<string, unknown> = args.flags.has('partitions')
  ? { partitions: intFlag(args, 'partitions', 32) }
  : {};
const sizes =
  typeof sizesFlag === 'string' ? sizesFlag.split(',').map(Number) : [10, 25, 100, 1000, 10_000, 100_000, 1_000_000];
for (const n of sizes)
  if (!Number.isInteger(n) || n < 1 || n > MAX_LEN)
    fail(`--sizes: each size must be an integer in 1..${MAX_LEN} (got ${n})`);

const req = VectorAdd.grain.methodByName.get('add')!.request;
const rep = VectorAdd.grain.methodByName.get('add')!.reply!;

/** Bytes a slot needs for `n` elements: header + the larger of request and reply, rounded up to 16. */
function slotSizeFor(n: number): number {
  const z = new Float32Array(n);
  const payload = Math.max(encodedSize(req, { a: z, b: z }), encodedSize(rep, { n, sum: z }));
  return Math.ceil((SLOT_HEADER_SIZE + payload) / 16) * 16;
}

/** Ring slots: as many as fit in ~32 MiB per ring (power of two, 2..1024). */
function ringCapacityFor(slotSize: number): number {
  let c = 1024;
  while (c > 2 && c * slotSize > 32 << 20) c >>= 1;
  return c;
}

/** Requests per size: enough work to time (about 2M elements in all, 10..500 requests). */
const requestsFor = (n: number) => Math.max(10, Math.min(500, Math.floor((2 << 20) / n)));

interface Row {
  size: number;
  requests: number;
  slotSize: number;
  ms: number;
  perAskUs: number;
  melemPerS: number;
  /** One ask at a time. */
  serialPerAskUs: number;
  serialMelemPerS: number;
  /** The same two runs with each reply decoded into a caller array (`add(req, { into: { sum } })`). */
  intoPerAskUs: number;
  intoMelemPerS: number;
  intoSerialMelemPerS: number;
  mismatches: number;
}

const inject = args.flags.has('inject-mismatch');
const rnd = mulberry32(seed);
const randomVector = (n: number) => {
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = (rnd() - 0.5) * Math.pow(2, Math.floor(rnd() * 40) - 20);
  return v;
};

async function runSize(choice: BackendChoice, n: number): Promise<{ row: Row; backend: string; examples: string[] }> {
  const slotSize = slotSizeFor(n);
  const ringCapacity = ringCapacityFor(slotSize);
  const { system, placement, describe } = await buildSystem(choice, {}, cudaOptions);
  system.register(VectorAdd, { placement, slotSize, ringCapacity, replyCapacity: ringCapacity });
  await system.start();
  const requests = requestsFor(n);
  const actors = 4;
  const inputs = Array.from({ length: Math.min(requests, 16) }, () => ({ a: randomVector(n), b: randomVector(n) }));
  const examples: string[] = [];
  let mismatches = 0;
  // Warm-up (JIT, activation), not timed.
  await system.grain(VectorAdd, 0).add(inputs[0]!);
  const t0 = performance.now();
  // A window of in-flight asks: enough to keep the kernel busy, no more than the ring holds (a send
  // beyond it would wait in the host's spill). At 1,000,000 elements that is 4 (four 8 MB slots).
  const window = Math.max(1, Math.min(64, ringCapacity));
  let next = 0;
  const check = (i: number, r: { n: number; sum: Float32Array }) => {
    const { a, b } = inputs[i % inputs.length]!;
    if (r.n !== n || r.sum.length !== n) {
      mismatches++;
      if (examples.length < 5) examples.push(`size ${n} request ${i}: reply has ${r.n}/${r.sum.length} elements`);
      return;
    }
    for (let j = 0; j < n; j++) {
      let want = Math.fround(a[j]! + b[j]!);
      if (inject && i === 0 && j === 0) want += 1; // --inject-mismatch: prove the checker fails the run
      if (!Object.is(r.sum[j], want)) {
        mismatches++;
        if (examples.length < 5)
          examples.push(`size ${n} request ${i} element ${j}: ${r.sum[j]} != ${want} (a=${a[j]}, b=${b[j]})`);
      }
    }
  };
  // Replies are checked after the clock stops: the check is the example's, not the system's.
  const replies: { n: number; sum: Float32Array }[] = [];
  const worker = async () => {
    for (let i = next++; i < requests; i = next++) {
      replies[i] = await system.grain(VectorAdd, i % actors).add(inputs[i % inputs.length]!);
    }
  };
  await Promise.all(Array.from({ length: window }, worker));
  const elapsed = performance.now() - t0;
  replies.forEach((r, i) => check(i, r));
  // One ask at a time (latency, nothing overlapped): a few, also checked.
  const serial = Math.min(requests, 5);
  const t1 = performance.now();
  const serialReplies: { n: number; sum: Float32Array }[] = [];
  for (let i = 0; i < serial; i++)
    serialReplies.push(await system.grain(VectorAdd, i % actors).add(inputs[i % inputs.length]!));
  const serialMs = performance.now() - t1;
  serialReplies.forEach((r, i) => check(i, r));
  // Again with every reply decoded into a caller array (AskOptions.into): a new reply array is fresh
  // memory the copy must fault in page by page (about 2.6 ms per 4 MB on the H100 host), a reused one is
  // not. The arrays are made and written before the clock, as a loop that reuses its buffers has them.
  const outs = Array.from({ length: requests }, () => new Float32Array(n).fill(0));
  const intoReplies: { n: number; sum: Float32Array }[] = [];
  next = 0;
  const t2 = performance.now();
  const intoWorker = async () => {
    for (let i = next++; i < requests; i = next++) {
      intoReplies[i] = await system
        .grain(VectorAdd, i % actors)
        .add(inputs[i % inputs.length]!, { into: { sum: outs[i]! } });
    }
  };
  await Promise.all(Array.from({ length: window }, intoWorker));
  const intoMs = performance.now() - t2;
  const intoChecked = (rs: { n: number; sum: Float32Array }[]) =>
    rs.forEach((r, i) => {
      if (r.sum !== outs[i]) {
        mismatches++;
        if (examples.length < 5) examples.push(`size ${n} request ${i}: the reply's sum is not the caller's array`);
      }
      check(i, r);
    });
  intoChecked(intoReplies);
  const t3 = performance.now();
  const intoSerial: { n: number; sum: Float32Array }[] = [];
  for (let i = 0; i < serial; i++)
    intoSerial.push(
      await system.grain(VectorAdd, i % actors).add(inputs[i % inputs.length]!, { into: { sum: outs[i]! } }),
    );
  const intoSerialMs = performance.now() - t3;
  intoChecked(intoSerial);
  let calls = 0;
  let elements = 0;
  for (let k = 0; k < actors; k++) {
    const st = await system.grain(VectorAdd, k).stats({});
    calls += st.calls;
    elements += st.elements;
  }
  const asked = 2 * (requests + serial) + 1;
  if (calls !== asked) {
    mismatches++;
    examples.push(`size ${n}: actors counted ${calls} calls, expected ${asked}`);
  }
  // The state's sum of n: a turn whose loop or copies ran on other warps still updates its actor once.
  if (elements !== n * asked) {
    mismatches++;
    examples.push(`size ${n}: actors counted ${elements} elements, expected ${n * asked}`);
  }
  await system.shutdown();
  return {
    row: {
      size: n,
      requests,
      slotSize,
      ms: elapsed,
      perAskUs: (elapsed * 1000) / requests,
      melemPerS: (n * requests) / (elapsed / 1000) / 1e6,
      serialPerAskUs: (serialMs * 1000) / serial,
      serialMelemPerS: (n * serial) / (serialMs / 1000) / 1e6,
      intoPerAskUs: (intoMs * 1000) / requests,
      intoMelemPerS: (n * requests) / (intoMs / 1000) / 1e6,
      intoSerialMelemPerS: (n * serial) / (intoSerialMs / 1000) / 1e6,
      mismatches,
    },
    backend: describe,
    examples,
  };
}

/** The error paths must raise clear typed errors, not truncate. */
async function errorPaths(choice: BackendChoice): Promise<string[]> {
  const out: string[] = [];
  const { system, placement } = await buildSystem(choice);
  system.register(VectorAdd, { placement, slotSize: slotSizeFor(100), ringCapacity: 16, replyCapacity: 16 });
  await system.start();
  const ref = system.grain(VectorAdd, 0);
  const big = new Float32Array(1000);
  try {
    await ref.add({ a: big, b: big });
    out.push('1000 elements in a slot sized for 100 did NOT raise PayloadTooLargeError');
  } catch (e) {
    if (e instanceof PayloadTooLargeError)
      console.log(`  too large for the slot → ${e.name}: ${e.message.replace(/\n/g, '\n      ')}`);
    else
      out.push(
        `1000 elements in a slot sized for 100 raised ${(e as Error).name} instead of ` +
          `PayloadTooLargeError: ${(e as Error).message}`,
      );
  }
  const huge = new Float32Array(MAX_LEN + 1);
  try {
    await ref.add({ a: huge, b: huge });
    out.push(`${MAX_LEN + 1} elements did NOT raise SchemaValidationError`);
  } catch (e) {
    if (e instanceof SchemaValidationError)
      console.log(`  longer than the schema  → ${e.name}: ${e.message.split('\n')[0]}`);
    else out.push(`${MAX_LEN + 1} elements raised ${(e as Error).name} instead of SchemaValidationError`);
  }
  const diff = await ref.add({ a: new Float32Array(3), b: new Float32Array(4) });
  if (diff.n !== 0) out.push(`vectors of different lengths were added (n = ${diff.n})`);
  else console.log('  different lengths       → reply n = 0 (not added)');
  const r = await ref.add({ a: [1, 2], b: [3, 4] });
  if (r.n !== 2 || r.sum[0] !== 4 || r.sum[1] !== 6)
    out.push(`after the error paths the actor answered ${Array.from(r.sum)}`);
  await system.shutdown();
  return out;
}

const tAll = performance.now();
const rows: Row[] = [];
const problems: string[] = [];
let backendLine = '';
const bar = progress('sizes', sizes.length);
for (const [i, n] of sizes.entries()) {
  const r = await runSize(args.backend, n);
  rows.push(r.row);
  problems.push(...r.examples);
  backendLine = r.backend;
  bar.update(i + 1);
}
bar.stop();

console.log(
  `\nRinggrain vector-add — backend ${backendLine}, ` +
    `seed ${seed}` +
    (process.env['RINGGRAIN_NVRTC_DEFINES'] ? `, NVRTC defines ${process.env['RINGGRAIN_NVRTC_DEFINES']}` : ''),
);
console.log(
  '| elements | slot bytes | asks | time | per ask | M elements/s | one at a time: per ask | one at a ' +
    'time: M elements/s | into caller arrays: per ask | into: M elements/s | into, one at a time: M ' +
    'elements/s | mismatches |',
);
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(
    `| ${r.size.toLocaleString('en-US')} | ${r.slotSize.toLocaleString('en-US')} | ${r.requests} ` +
      `| ${ms(r.ms)} | ${r.perAskUs.toFixed(1)} µs | ${r.melemPerS.toFixed(1)} | ` +
      (`${r.serialPerAskUs.toFixed(1)} µs | ${r.serialMelemPerS.toFixed(1)} | ${r.intoPerAskUs.toFixed(1)} ` +
        `µs | ${r.intoMelemPerS.toFixed(1)} | ${r.intoSerialMelemPerS.toFixed(1)} | ${r.mismatches} |`),
  );
}
console.log('\nError paths:');
problems.push(...(await errorPaths(args.backend)));
console.log(`\ntotal ${ms(performance.now() - tAll)}`);
if (problems.length || rows.some((r) => r.mismatches)) {
  console.log('\nMISMATCH:');
  for (const p of problems) console.log(`  - ${p}`);
  process.exit(1);
}
const checked = rows.reduce((a, r) => a + 2 * r.size * (r.requests + Math.min(r.requests, 5)), 0);
console.log(`OK: ${checked.toLocaleString('en-US')} elements checked against Math.fround(a + b), all equal.`);
