/**
 * A CPU state table's key -> slot lookup at the sizes of the sensor-fleet example: KeySlots (cpu-backend
 * key-slots.ts, open addressing in typed arrays) against the V8 Map the table used before. Inserts of N
 * integer keys in a shuffled order, then N lookups that hit and N that miss, then N deletes.
 *
 *   node --import tsx bench/key-slots.ts [--keys 1000000] [--trials 5]
 *
 * Prints ns per operation for each, the median of the trials.
 */
import { KeySlots } from '../packages/cpu-backend/src/key-slots.ts';
import { median } from './trials.ts';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const N = arg('keys', 1_000_000);
const TRIALS = arg('trials', 5);

// The keys in a fixed shuffled order: lookups jump about the table as a round's readings do.
const keys = new Float64Array(N);
for (let i = 0; i < N; i++) keys[i] = i;
let seed = 12345;
for (let i = N - 1; i > 0; i--) {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  const j = seed % (i + 1);
  const t = keys[i]!;
  keys[i] = keys[j]!;
  keys[j] = t;
}

interface Table {
  set(k: number, v: number): void;
  find(k: number): number;
  remove(k: number): void;
}
const makers: Record<string, () => Table> = {
  Map: () => {
    const m = new Map<number, number>();
    return { set: (k, v) => void m.set(k, v), find: (k) => m.get(k) ?? -1, remove: (k) => void m.delete(k) };
  },
  KeySlots: () => {
    const s = new KeySlots<number>();
    return { set: (k, v) => s.set(k, v), find: (k) => s.get(k), remove: (k) => void s.delete(k) };
  },
};

const results: Record<string, Record<string, number[]>> = {};
for (let trial = 0; trial < TRIALS; trial++) {
  for (const [name, make] of Object.entries(makers)) {
    const t = make();
    const r = (results[name] ??= { insert: [], hit: [], miss: [], delete: [] });
    let t0 = performance.now();
    for (let i = 0; i < N; i++) t.set(keys[i]!, i);
    r.insert!.push(((performance.now() - t0) * 1e6) / N);
    let sum = 0;
    t0 = performance.now();
    for (let i = 0; i < N; i++) sum += t.find(keys[(i * 7919) % N]!);
    r.hit!.push(((performance.now() - t0) * 1e6) / N);
    t0 = performance.now();
    for (let i = 0; i < N; i++) sum += t.find(N + keys[i]!);
    r.miss!.push(((performance.now() - t0) * 1e6) / N);
    t0 = performance.now();
    for (let i = 0; i < N; i++) t.remove(keys[i]!);
    r.delete!.push(((performance.now() - t0) * 1e6) / N);
    if (sum === 0.5) console.log(''); // keeps the lookups from being dropped as dead code
  }
}
console.log(`key -> slot, ${N.toLocaleString('en-US')} integer keys, median of ${TRIALS} trials (ns per operation)`);
console.log('| table | insert | lookup (hit) | lookup (miss) | delete |');
console.log('|---|---:|---:|---:|---:|');
for (const [name, r] of Object.entries(results)) {
  console.log(`| ${name} | ${['insert', 'hit', 'miss', 'delete'].map((k) => median(r[k]!).toFixed(0)).join(' | ')} |`);
}
