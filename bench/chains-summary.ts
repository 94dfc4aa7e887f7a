/**
 * Joins bench/chains.ts records of one machine and commit (e.g. a 10,000-actor run and a 1,000,000-actor
 * run, each under its own time limit) into one record of the same shape, and prints what issue 37 asks:
 * per ring size, one token / N/4 tokens / ping-pong hops/s per backend, cpu against inline, and whether
 * the CPU pool's one-token chain reaches 400 K hops/s; idle CPU after the chains and the held-overflow
 * probe's figure beside it (the idle reference).
 *
 *   node --import tsx bench/chains-summary.ts a.json b.json [--held-overflow PCT] [--write bench/results/chains.json]
 */
import { readFileSync, writeFileSync } from 'node:fs';

const TARGET = 400_000;
const argv = process.argv.slice(2);
const option = (n: string) => (argv.includes(n) ? argv[argv.indexOf(n) + 1] : undefined);
const files = argv.filter((a, i) => !a.startsWith('--') && !argv[i - 1]?.startsWith('--'));
if (files.length === 0) {
  console.error('usage: chains-summary.ts a.json [b.json ...] [--held-overflow PCT] [--write FILE]');
  process.exit(2);
}

type Shape = { hopsPerS: number; pool?: { parksPerHop: number } };
type PerSize = Record<string, { one?: Shape; many?: Shape; pingpong?: Shape; skipped?: string; failed?: string }>;
interface ChainsRecord {
  commit: string;
  machine: string;
  cores: number;
  date: string;
  threads: number;
  command: string | string[];
  what: string;
  byBackend: Record<string, PerSize>;
  shapes: string[];
  idleCpuPctAfter: Record<string, Record<string, number>>;
  idleCpuPctLater: Record<string, Record<string, number>>;
  idleThreadPct: Record<string, Record<string, number[]>>;
}

const records = files.map((f) => JSON.parse(readFileSync(f, 'utf8')) as ChainsRecord);
const first = records[0]!;
for (const r of records)
  if (r.commit !== first.commit || r.machine !== first.machine || r.threads !== first.threads)
    throw new Error(`records differ in commit, machine or threads: ${files.join(', ')}`);
/** Per key of each record's map, the later record's entries added (ring sizes of different runs). */
type ByKey<T> = Record<string, Record<string, T>>;
function join<T>(pick: (r: ChainsRecord) => ByKey<T> | undefined): ByKey<T> {
  const out: Record<string, Record<string, T>> = {};
  for (const r of records) for (const [k, v] of Object.entries(pick(r) ?? {})) out[k] = { ...out[k], ...v };
  return out;
}
const held = option('--held-overflow');
const joined = {
  ...first,
  command: records.flatMap((r) => r.command),
  byBackend: join((r) => r.byBackend),
  shapes: records.flatMap((r) => r.shapes),
  idleCpuPctAfter: join((r) => r.idleCpuPctAfter),
  idleCpuPctLater: join((r) => r.idleCpuPctLater),
  idleThreadPct: join((r) => r.idleThreadPct),
  ...(held !== undefined && Number.isFinite(Number(held)) ? { heldOverflowIdlePct: Number(held) } : {}),
};
const out = option('--write');
if (out) writeFileSync(out, `${JSON.stringify(joined, null, 1)}\n`);

const k = (x: number | undefined) => (x === undefined ? '-' : `${(x / 1000).toFixed(1)} K`);
console.log(`chains at ${first.commit} on ${first.machine}, ${first.cores} cores, pool ${first.threads} threads`);
const sizes = [...new Set(Object.values(joined.byBackend).flatMap((b) => Object.keys(b)))].sort((a, b) => +a - +b);
for (const n of sizes) {
  for (const [backend, per] of Object.entries(joined.byBackend)) {
    const f = per[n];
    if (!f) continue;
    if (f.skipped || (f.failed && !f.one)) {
      const why = (f.skipped ?? f.failed ?? '').slice(0, 140);
      console.log(`${backend.padEnd(8)} ${n.padStart(8)} actors  ${f.skipped ? 'skipped' : 'FAILED'}: ${why}`);
      continue;
    }
    const parks = f.one?.pool ? `, parks/hop ${f.one.pool.parksPerHop}` : '';
    const idle = joined.idleCpuPctAfter[backend]?.[n];
    const idleText = idle === undefined ? '' : `; idle after ${idle} % of a core`;
    const at = (s: Shape | undefined) => k(s?.hopsPerS).padStart(9);
    console.log(
      `${backend.padEnd(8)} ${n.padStart(8)} actors  one ${at(f.one)}  N/4 ${at(f.many)}` +
        `  ping/pong ${at(f.pingpong)}${parks}${idleText}` +
        (f.failed ? `; FAILED: ${f.failed}` : ''),
    );
  }
  const cpu = joined.byBackend['cpu']?.[n]?.one?.hopsPerS;
  const inline = joined.byBackend['inline']?.[n]?.one?.hopsPerS;
  if (cpu !== undefined) {
    const ratio = inline ? `, cpu/inline ${(cpu / inline).toFixed(2)}×` : '';
    const verdict = cpu >= TARGET ? 'MET' : 'NOT MET';
    console.log(`  ${n} actors: cpu one token ${k(cpu)} hops/s${ratio}: target 400 K ${verdict}`);
  }
}
if (held !== undefined) console.log(`held-overflow probe (idle reference): ${held} % of one core`);
if (out) console.log(`wrote ${out}`);
