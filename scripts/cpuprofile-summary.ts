/**
 * Where a process's CPU time went, from a V8 CPU profile (`node --cpu-prof`): the functions with the most
 * time including callees (each function counted once per sample, however deep it recurs) and with the most
 * time of their own, with their files. Used for the GPU first start (docs/gpu-first-run.md): run the example
 * under --cpu-prof with a warm kernel cache and read what the start spends (unit generation, cache reads,
 * module loads, allocations, ring formatting, the handshake's waits).
 *
 *   node --import tsx scripts/cpuprofile-summary.ts <file.cpuprofile> [--top 40] [--match packages/]
 */
import { readFileSync } from 'node:fs';

interface CallFrame { functionName: string; url: string; lineNumber: number }
interface ProfileNode { id: number; callFrame: CallFrame; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

const argv = process.argv.slice(2);
const file = argv.find((a) => !a.startsWith('--'));
if (!file) {
  console.error('usage: cpuprofile-summary.ts <file.cpuprofile> [--top 40] [--match text]');
  process.exit(2);
}
const option = (n: string, d: string) => (argv.includes(n) ? (argv[argv.indexOf(n) + 1] ?? d) : d);
const TOP = Number(option('--top', '40'));
const MATCH = option('--match', '');

const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const selfUs = new Map<number, number>();
p.samples.forEach((s, i) => selfUs.set(s, (selfUs.get(s) ?? 0) + (p.timeDeltas[i] ?? 0)));

const where = (cf: CallFrame): string => {
  const u = cf.url.replace(/^file:\/\//, '');
  const at = u.search(/(packages|examples|bench|scripts|node_modules)\//);
  return `${at >= 0 ? u.slice(at) : u || '(native)'}:${cf.lineNumber + 1}`;
};
const label = (cf: CallFrame): string => `${cf.functionName || '(anonymous)'}  ${where(cf)}`;

const inclusive = new Map<string, number>();
const own = new Map<string, number>();
let total = 0;
for (const [id, us] of selfUs) {
  total += us;
  const first = byId.get(id)!;
  own.set(label(first.callFrame), (own.get(label(first.callFrame)) ?? 0) + us);
  const seen = new Set<string>();
  for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) {
    const key = label(byId.get(x)!.callFrame);
    if (seen.has(key)) continue;
    seen.add(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + us);
  }
}
const show = (m: Map<string, number>, title: string): void => {
  console.log(`-- ${title}`);
  const rows = [...m].filter(([k]) => !MATCH || k.includes(MATCH)).sort((a, b) => b[1] - a[1]).slice(0, TOP);
  for (const [k, us] of rows) console.log(`${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`);
};
console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled`);
show(inclusive, 'including callees');
show(own, 'own time');
