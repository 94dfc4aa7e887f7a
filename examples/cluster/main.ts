/**
 * Cluster example (`pnpm example:cluster [--nats URL --user U --pass P] [--accounts N] [--transfers M] [--seed S]`).
 *
 * Starts a local nats-server (JetStream, a random password, a temp store) unless --nats names one, then
 * three silo processes (examples/cluster/silo.ts: the bank's Account on the CPU backend). This process
 * joins as a client: it seeds N accounts (asks, spread over the three silos by key), runs M random
 * transfers as a withdraw ask on one account then a deposit ask on another (100 at a time, so the
 * silos work in parallel), and checks: the money in the bank is what was deposited (conserved), and
 * every account's balance equals the model built from the replies. Prints per-silo figures. Exit 1 on
 * any difference.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { GrainSystem } from '@ringgrain/core';
import { natsCluster, startNatsServer, type NatsServerHandle } from '@ringgrain/cluster-nats';
import { Account } from '../bank/grains.ts';
import { fail, intFlag, ms, mulberry32, parseArgs, quietLogger, rejectUnknown } from '../shared/backend.ts';

const args = parseArgs();
rejectUnknown(args, ['nats', 'user', 'pass', 'token', 'accounts', 'transfers', 'seed']);
const N = intFlag(args, 'accounts', 1000, 2);
const M = intFlag(args, 'transfers', 20_000);
const seed = intFlag(args, 'seed', 42);
const str = (n: string) => {
  const v = args.flags.get(n);
  if (v === true) fail(`--${n} needs a value`);
  return v;
};
const SILOS = 3;
const t0 = performance.now();

let server: NatsServerHandle | undefined;
let url = str('nats');
let auth: Record<string, string> = {};
if (url === undefined) {
  try {
    server = await startNatsServer();
  } catch (e) {
    fail(`${(e as Error).message}`);
  }
  url = server.url;
  auth = server.auth;
  console.log(`nats-server ${server.version} on ${url} (JetStream, user/password)`);
} else {
  for (const k of ['user', 'pass', 'token']) if (str(k) !== undefined) auth[k] = str(k)!;
}
const cluster = `bank-${process.pid}`;
const silos: ChildProcess[] = [];
const figures: string[] = [];
const stopAll = async () => {
  await Promise.all(
    silos.map(
      (c) =>
        new Promise<void>((r) => {
          if (c.exitCode !== null) return r();
          c.once('exit', () => r());
          c.kill('SIGTERM');
        }),
    ),
  );
  await server?.stop();
};
try {
  await Promise.all(
    Array.from({ length: SILOS }, () => {
      const c = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./silo.ts', import.meta.url))], {
        env: { ...process.env, RG_NATS_URL: url, RG_NATS_AUTH: JSON.stringify(auth), RG_CLUSTER: cluster },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      silos.push(c);
      return new Promise<void>((resolve, reject) => {
        c.once('exit', (code) => reject(new Error(`a silo exited (${code}) before it was ready`)));
        let out = '';
        c.stdout!.setEncoding('utf8').on('data', (s: string) => {
          out += s;
          if (out.includes('READY')) resolve();
          for (const m of out.matchAll(/FIGURES (.*)\n/g)) figures.push(m[1]!);
          out = out.replace(/FIGURES .*\n/g, '');
        });
      });
    }),
  );
  const client = new GrainSystem({
    backends: {},
    logger: quietLogger(),
    handleSignals: false,
    cluster: natsCluster({ servers: url!, name: cluster, ...auth }),
  });
  await client.start();
  await client.cluster!.waitFor(() => client.cluster!.settled(SILOS), 15_000);
  console.log(
    `${SILOS} silos up in ${ms(performance.now() - t0)}: ${client
      .cluster!.live()
      .filter((s) => !s.client)
      .map((s) => s.id)
      .join(', ')}`,
  );

  const rand = mulberry32(seed);
  const model = new Float64Array(N);
  const seeded = await Promise.all(
    Array.from({ length: N }, (_, k) =>
      client.grain(Account, k).deposit({ amount: (model[k] = 100 + Math.floor(rand() * 900)) }),
    ),
  );
  const total = model.reduce((a, b) => a + b, 0);
  if (seeded.some((r, k) => r.balance !== model[k])) fail('a seeded balance differs');
  const t1 = performance.now();
  let done = 0;
  let refused = 0;
  const one = async () => {
    const from = Math.floor(rand() * N);
    let to = Math.floor(rand() * (N - 1));
    if (to >= from) to++;
    const amount = 1 + Math.floor(rand() * 200);
    const w = await client.grain(Account, from).withdraw({ amount });
    if (!w.ok) {
      refused++;
      return;
    }
    model[from] = model[from]! - amount;
    await client.grain(Account, to).deposit({ amount });
    model[to] = model[to]! + amount;
  };
  for (let i = 0; i < M; i += 100) {
    await Promise.all(Array.from({ length: Math.min(100, M - i) }, one));
    done = Math.min(M, i + 100);
  }
  const elapsed = performance.now() - t1;
  const balances = await client.askMany(Account, 'balance', { key: Int32Array.from({ length: N }, (_, k) => k) });
  let sum = 0;
  let wrong = 0;
  for (let k = 0; k < N; k++) {
    sum += balances.balance[k]!;
    if (balances.balance[k] !== model[k]) wrong++;
  }
  const perSilo = new Map<string, number>();
  for (let k = 0; k < N; k++) {
    const o = client.cluster!.ownerOf('Account', k)!;
    perSilo.set(o, (perSilo.get(o) ?? 0) + 1);
  }
  console.log(
    `${done} transfers (${refused} refused: not enough money) ` +
      `in ${ms(elapsed)}: ${((done * 2 - refused) / (elapsed / 1000)).toFixed(0)} cross-process asks/s`,
  );
  console.log(
    `money: ${sum} in the bank, ${total} ` +
      `deposited: ${sum === total ? 'conserved' : 'NOT CONSERVED'}; ${wrong} accounts differ from the model`,
  );
  await client.shutdown();
  await stopAll();
  for (const f of figures) {
    const x = JSON.parse(f) as { silo: string; turns: number; fromOthers: number; framesIn: number; framesOut: number };
    console.log(
      `  silo ${x.silo}: ${perSilo.get(x.silo) ?? 0} accounts, ${x.turns} turns, ${x.fromOthers} messages ` +
        `from other members in ${x.framesIn} frames`,
    );
  }
  if (sum !== total || wrong > 0) process.exit(1);
} catch (e) {
  await stopAll();
  fail((e as Error).message);
}
