/**
 * A model of the batched ingress's partition-queue claims (runtime/ingress.cuh), to show the RG_TURN_LANES=1
 * liveness bug of issue 33 and its fix without a GPU. Four host lanes' ingress warps take batches of up to 32
 * messages (random partitions of 4) from their rings; four partition queues of 256 slots; workers take one slot a
 * step (one-lane turns) or 32 every k steps (lane turns). 'whole': every group of a batch claims all its messages
 * at once, a group past the first full one writes SKIP slots (the claim before the fix, RG_INGRESS_WHOLE_GROUPS);
 * 'prefix': the batch ends at the first message whose queue has no room left, groups claim only messages before
 * it (the fix). No races are modelled (each warp's round is atomic): what is left is the claim rule itself.
 *
 *   node --import tsx scripts/ingress-model.ts [--steps 200000]
 */
const argv = process.argv.slice(2);
const STEPS = Number(argv.includes('--steps') ? argv[argv.indexOf('--steps') + 1] : 200_000);
const CAP = 256;
const P = 4;
const LANES = 4;

/** A small deterministic generator (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Claim = 'whole' | 'prefix';
/** Worker speed: 'one' takes one slot a step; a number k takes up to 32 slots every k steps. */
function run(claim: Claim, worker: 'one' | number): { real: number; skips: number } {
  const rand = rng(1);
  const part = () => Math.floor(rand() * P);
  const queues: string[][] = Array.from({ length: P }, () => []);
  const rings: number[][] = Array.from({ length: LANES }, () => Array.from({ length: 32 }, part));
  let real = 0;
  let skips = 0;
  for (let step = 0; step < STEPS; step++) {
    for (const q of queues) {
      const take = worker === 'one' ? 1 : step % worker === 0 ? 32 : 0;
      for (const x of q.splice(0, take)) if (x === 'M') real++;
    }
    const order = [0, 1, 2, 3].sort(() => rand() - 0.5);
    for (const l of order) {
      const batch = rings[l]!;
      const n = batch.length;
      let cutoff = n;
      if (claim === 'whole') {
        const groups = new Map<number, number[]>();
        batch.forEach((p, i) => groups.set(p, [...(groups.get(p) ?? []), i]));
        const ok = new Map<number, boolean>();
        for (const [p, lanes] of groups) ok.set(p, CAP - queues[p]!.length >= lanes.length);
        for (const [p, lanes] of groups) if (!ok.get(p)) cutoff = Math.min(cutoff, lanes[0]!);
        for (const [p, lanes] of groups) {
          if (!ok.get(p)) continue;
          for (const i of lanes) {
            queues[p]!.push(i < cutoff ? 'M' : 'S');
            if (i >= cutoff) skips++;
          }
        }
      } else {
        const rank = new Map<number, number>();
        for (let i = 0; i < n; i++) {
          const p = batch[i]!;
          const r = rank.get(p) ?? 0;
          rank.set(p, r + 1);
          if (r >= CAP - queues[p]!.length) {
            cutoff = i;
            break;
          }
        }
        for (let i = 0; i < cutoff; i++) queues[batch[i]!]!.push('M');
      }
      batch.splice(0, cutoff);
      while (batch.length < 32) batch.push(part());
    }
  }
  return { real, skips };
}

console.log(`ingress-model: ${LANES} lanes, ${P} queues of ${CAP} slots, ${STEPS} steps`);
for (const worker of ['one', 2, 8] as const) {
  for (const claim of ['whole', 'prefix'] as const) {
    const r = run(claim, worker);
    const w = worker === 'one' ? 'one-lane turns (one slot a step)' : `lane turns (32 slots every ${worker} steps)`;
    console.log(`  ${claim.padEnd(6)} claim, ${w}: ${r.real} messages run, ${r.skips} SKIP slots`);
  }
}
