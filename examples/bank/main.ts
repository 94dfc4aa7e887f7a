/**
 * Bank example (`pnpm demo`, `pnpm example:bank -- --backend cpu|cuda|auto [--accounts N] [--transfers M] [--seed S]`).
 *
 * N accounts get seeded deposits (asks), a round of withdrawals (asks, some refused), then M random
 * transfers (tells) whose credits travel account → account inside the backend (K2K). The final balances
 * and op counts are compared with a plain-JavaScript model; any difference exits 1.
 *
 * Determinism: transfers run in rounds; in a round every account sends at most once and never more than
 * its balance at the start of the round (credits only add), or deliberately more than it can have (refused
 * whatever the arrival order). Amounts are whole numbers, so f64 sums are exact in any order.
 */
import { Account } from './grains.ts';
import {
  buildSystem,
  fail,
  intFlag,
  mulberry32,
  ms,
  parseArgs,
  progress,
  rejectUnknown,
  whereItStands,
} from '../shared/backend.ts';

const args = parseArgs();
rejectUnknown(args, ['accounts', 'transfers', 'seed', 'inject-mismatch']);
const N = intFlag(args, 'accounts', 2000);
const M = intFlag(args, 'transfers', N * 10);
const seed = intFlag(args, 'seed', 42);
if (N < 2) fail('--accounts must be at least 2');

const t0 = performance.now();
const { system, placement, describe } = await buildSystem(args.backend);
system.register(Account, { placement });
let tellErrors = 0;
system.on('tellError', (e) => {
  tellErrors++;
  if (tellErrors <= 5) console.error(`tell failed: ${e.grain}.${e.method}: ${e.error.message}`);
});
await system.start();
const tStart = performance.now();

const rnd = mulberry32(seed);
const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));

/** Reference model: plain JS numbers. */
const ref = { balance: new Float64Array(N), ops: new Uint32Array(N) };
const problems: string[] = [];
const check = (ok: boolean, what: string) => {
  if (!ok && problems.length < 20) problems.push(what);
};

// 1. Deposits: one ask per account, all in flight at once.
let t = performance.now();
const deposits = Array.from({ length: N }, () => int(100, 10_000));
const replies = await Promise.all(deposits.map((amount, k) => system.grain(Account, k).deposit({ amount })));
for (let k = 0; k < N; k++) {
  ref.balance[k]! += deposits[k]!;
  ref.ops[k]!++;
  check(
    replies[k]!.balance === ref.balance[k],
    `deposit reply of account ${k}: ${replies[k]!.balance} != ${ref.balance[k]}`,
  );
}
const tDeposit = performance.now() - t;

// 2. Withdrawals: every 3rd account; some ask more than the balance and must be refused.
t = performance.now();
const wKeys = Array.from({ length: Math.ceil(N / 3) }, (_, i) => i * 3);
const wAmounts = wKeys.map((k) => (rnd() < 0.25 ? ref.balance[k]! + int(1, 100) : int(1, ref.balance[k]!)));
const wReplies = await Promise.all(wKeys.map((k, i) => system.grain(Account, k).withdraw({ amount: wAmounts[i]! })));
let refused = 0;
wKeys.forEach((k, i) => {
  const amount = wAmounts[i]!;
  ref.ops[k]!++;
  const ok = amount <= ref.balance[k]!;
  if (ok) ref.balance[k]! -= amount;
  else refused++;
  check(
    wReplies[i]!.ok === ok && wReplies[i]!.balance === ref.balance[k],
    `withdraw reply of account ${k}: ${JSON.stringify(wReplies[i])} ` +
      `!= ${JSON.stringify({ ok, balance: ref.balance[k] })}`,
  );
});
const tWithdraw = performance.now() - t;
const totalBefore = ref.balance.reduce((a, b) => a + b, 0);

// 3. Transfers in rounds (tells + K2K credits), with a barrier between rounds.
t = performance.now();
const bar = progress('transfers', M);
let sentTransfers = 0;
let failedTransfers = 0;
let rounds = 0;
const usedIn = new Int32Array(N).fill(-1);
const counters = () => system.counters(Account);
while (sentTransfers < M) {
  rounds++;
  const round: Array<{ from: number; to: number; amount: number }> = [];
  // Draw transfers until a sender repeats (or M is reached): one send per account per round.
  while (sentTransfers + round.length < M) {
    const from = int(0, N - 1);
    if (usedIn[from] === rounds) break;
    let to = int(0, N - 2);
    if (to >= from) to++;
    usedIn[from] = rounds;
    const bal = ref.balance[from]!;
    // 1 in 10 asks for more than the account can hold this round: refused whatever the arrival order.
    const amount = rnd() < 0.1 ? bal + int(1, 50) + 1e9 : bal >= 1 ? int(1, bal) : 0;
    round.push({ from, to, amount });
  }
  for (const x of round) {
    const p = system.grain(Account, x.from).tell.transfer({ to: x.to, amount: x.amount });
    if (p) await p; // backpressure: the ring was full
  }
  // Reference, in any order (credits only add, and no account sends twice in a round).
  const credits: Array<[number, number]> = [];
  for (const x of round) {
    ref.ops[x.from]!++;
    if (x.amount <= ref.balance[x.from]!) {
      ref.balance[x.from]! -= x.amount;
      credits.push([x.to, x.amount]);
    } else failedTransfers++;
  }
  for (const [to, amount] of credits) {
    ref.balance[to]! += amount;
    ref.ops[to]!++;
  }
  sentTransfers += round.length;
  // Barrier: everything sent (host tells + K2K credits) was processed (system.idle).
  await system.idle({ timeoutMs: 60_000 }).catch((e: Error) => {
    throw new Error(`transfer round ${rounds}: ${e.message}\n  ${whereItStands(system)}`, { cause: e });
  });
  bar.update(sentTransfers);
}
bar.stop();
const tTransfer = performance.now() - t;

// Self-test of the checker: --inject-mismatch changes the model so the run must fail.
if (args.flags.has('inject-mismatch')) ref.balance[0]! += 1;

// 4. Balances: ask every account and compare with the model.
t = performance.now();
const finals = await Promise.all(Array.from({ length: N }, (_, k) => system.grain(Account, k).balance({})));
let total = 0;
let mismatched = 0;
for (let k = 0; k < N; k++) {
  total += finals[k]!.balance;
  if (finals[k]!.balance !== ref.balance[k] || finals[k]!.ops !== ref.ops[k]) {
    mismatched++;
    check(
      false,
      `account ${k}: got ${JSON.stringify(finals[k])}, model ` +
        `says ${JSON.stringify({ balance: ref.balance[k], ops: ref.ops[k] })}`,
    );
  }
}
const tBalance = performance.now() - t;
const c = counters();
await system.shutdown();
const tEnd = performance.now();

check(total === totalBefore, `total changed across transfers: ${totalBefore} → ${total}`);
check(tellErrors === 0, `${tellErrors} tells failed in their handlers`);
check(
  c.handlerErrors === 0 && c.rejected === 0,
  `kernel counted ${c.handlerErrors} handler errors and ${c.rejected} rejected messages`,
);

const line = (label: string, value: string) => console.log(`  ${label.padEnd(28)} ${value}`);
console.log(`\nRinggrain bank — backend ${describe}, seed ${seed}`);
line('accounts', `${N}`);
line(
  'deposits (asks)',
  `${N} in ${ms(tDeposit)}  (${Math.round(N / (tDeposit / 1000)).toLocaleString('en-US')} asks/s)`,
);
line('withdrawals (asks)', `${wKeys.length} in ${ms(tWithdraw)}, ${refused} refused for lack of funds`);
line(
  'transfers (tells + K2K)',
  `${M} in ${ms(tTransfer)} over ${rounds} rounds, ${failedTransfers} refused, ${c.k2kSent} credits sent actor→actor`,
);
line('balance checks (asks)', `${N} in ${ms(tBalance)}`);
line(
  'total money',
  `${total.toLocaleString('en-US')} before and after ` +
    `transfers: ${total === totalBefore ? 'unchanged' : `CHANGED (was ${totalBefore})`}`,
);
line(
  'kernel counters',
  `received ${c.received}, processed ${c.processed}, replied ${c.replied}, ` +
    `k2k ${c.k2kSent}/${c.k2kReceived}, activations ${c.activations}, errors ${c.handlerErrors}`,
);
line(
  'time',
  `start ${ms(tStart - t0)}, work ${ms(tDeposit + tWithdraw + tTransfer + tBalance)}, total with ` +
    `shutdown ${ms(tEnd - t0)}`,
);
if (problems.length) {
  console.log(`\nMISMATCH: ${mismatched} accounts differ from the JavaScript model`);
  for (const p of problems) console.log(`  - ${p}`);
  process.exit(1);
}
console.log(`\nOK: all ${N} balances and op counts match the JavaScript model.`);
