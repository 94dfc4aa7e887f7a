/**
 * Workloads that compute-sanitizer wraps on the GPU machine (scripts/device/sanitize.sh). Each runs on
 * the CUDA backend through the public API, checks every answer against a JS computation, and exits
 * non-zero on a wrong answer, so a sanitizer run that "passes" with wrong results is still a failure.
 *
 *   node --import tsx scripts/device/sanitize-workload.ts k2k [--partitions 4] [--queue 1024] [--ask-timeout-s 600]
 *
 * Each phase prints a line when it is done, so a run cut off by a timeout shows how far it got; with a
 * short --ask-timeout-s a stuck phase fails, and the shutdown that follows ends the kernels, which makes
 * compute-sanitizer print what it found in them (it reports a kernel's errors when the kernel ends).
 *
 * k2k: five grain classes in one system (the conformance grains): K2K fan-out/fan-in between two
 * kernels, a forward chain over three kernels, asks and tells; the kernels read each other's partition
 * queues, which is what memcheck once flagged.
 */
import { GrainSystem } from '../../packages/core/src/index.ts';
import { CudaBackend } from '../../packages/cuda-backend/src/index.ts';
import { Coordinator, Hop1, Hop2, Hop3, Leaf } from '../../test/fixtures/grains.ts';

const argv = process.argv.slice(2);
const option = (n: string, d: number) => (argv.includes(n) ? Number(argv[argv.indexOf(n) + 1]) : d);
const which = argv[0] ?? 'k2k';
if (which === '--help' || which === '-h') {
  console.log('usage: sanitize-workload.ts k2k [--partitions P] [--queue Q]');
  process.exit(0);
}
if (which !== 'k2k') {
  console.error(`sanitize-workload: unknown workload ${which} (known: k2k)`);
  process.exit(2);
}
const partitions = option('--partitions', 4);
const queueCapacity = option('--queue', 1024);
const askTimeoutMs = option('--ask-timeout-s', 600) * 1000;
const phase = (what: string) => console.log(`sanitize-workload: ${what} (${Math.round(performance.now())} ms)`);

async function until(f: () => Promise<boolean>, ms: number): Promise<boolean> {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    if (await f()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

const small = { maxActors: 4096, ringCapacity: 256, replyCapacity: 256 };
const sys = new GrainSystem({
  backends: { cuda: new CudaBackend({ partitions, queueCapacity }) },
  logLevel: (process.env['RINGGRAIN_LOG'] as 'info' | undefined) ?? 'warn',
  handleSignals: false,
  askTimeoutMs,
  handshakeTimeoutMs: 600_000,
})
  .register(Coordinator, { placement: 'cuda', ...small })
  .register(Leaf, { placement: 'cuda', ...small })
  .register(Hop1, { placement: 'cuda', ...small })
  .register(Hop2, { placement: 'cuda', ...small })
  .register(Hop3, { placement: 'cuda', ...small });
const wrong: string[] = [];
const expect = (what: string, got: unknown, want: unknown) => {
  if (JSON.stringify(got) !== JSON.stringify(want))
    wrong.push(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
};
await sys.start();
phase('started');
const N = 200;
const c = sys.grain(Coordinator, 4);
try {
  expect('scatter', await c.scatter({ n: N, value: 3 }), { expected: N });
  phase('scatter answered');
  let want = 0;
  for (let i = 0; i < N; i++) want += (3 + i) * 2;
  await until(async () => (await c.result({})).count === N, askTimeoutMs);
  expect('gather', await c.result({}), { expected: N, count: N, sum: want });
  phase('gathered');
  expect('leaf 7', await sys.grain(Leaf, 7).get({}), { total: 10, hits: 1 });
  expect('forward chain', await sys.grain(Hop1, 10).go({ x: 5, trail: 0 }), { x: 33, trail: 123, by: 3 });
  expect('hop2 seen', await sys.grain(Hop2, 11).seen({}), { seen: 1 });
  phase('forward chain answered');
  expect('k2k sent', sys.counters(Coordinator).k2kSent, N);
  expect('k2k received', sys.counters(Leaf).k2kReceived, N);
} catch (e) {
  wrong.push(`failed: ${(e as Error).message}`);
  console.error(JSON.stringify(sys.metrics()));
}
await sys.shutdown();
phase('shut down');
if (wrong.length) {
  console.error(
    `sanitize-workload k2k (partitions ${partitions}, queue ${queueCapacity}): WRONG ANSWERS\n  ${wrong.join('\n  ')}`,
  );
  process.exit(1);
}
console.log(`sanitize-workload k2k (partitions ${partitions}, queue ${queueCapacity}): all answers correct`);
