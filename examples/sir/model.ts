/**
 * The SIR example's contact graph and its plain-JavaScript reference model, shared by the single-process
 * example (examples/sir/main.ts) and the cluster run (examples/sir/cluster.ts): both must check against the
 * very same model.
 */
import { MAX_CONTACTS, infectionHash } from './grains.ts';
import { mulberry32 } from '../shared/backend.ts';

export interface SirParams {
  /** People. */
  readonly n: number;
  /** Links each person makes (mean degree ≈ 2 × this). */
  readonly halfDegree: number;
  /** Steps a person stays infectious. */
  readonly days: number;
  /** An infection attempt succeeds when hash < threshold. */
  readonly threshold: number;
  /** Patient zeros. */
  readonly seeds: number;
  /** The graph's random seed. */
  readonly seed: number;
  readonly maxSteps: number;
}

export interface Graph {
  readonly degree: Uint8Array;
  /** MAX_CONTACTS slots a person, in the order linked. */
  readonly adjacency: Int32Array;
  readonly seeds: ReadonlySet<number>;
  /** Undirected edges. */
  readonly edges: number;
  /** Person p's contacts, in the order linked. */
  contactsOf(p: number): Int32Array;
}

export interface Counts {
  s: number;
  i: number;
  r: number;
}

/**
 * Each person links to `halfDegree` random others (undirected, no self loops, degree capped at MAX_CONTACTS;
 * duplicates kept out). Stored flat so that 10,000,000 people fit outside the JS heap: 1.3 GB of Int32Array
 * instead of 10 M arrays.
 */
export function buildGraph(p: SirParams): Graph {
  const N = p.n;
  const rnd = mulberry32(p.seed);
  const degree = new Uint8Array(N);
  const adjacency = new Int32Array(N * MAX_CONTACTS);
  const linked = (a: number, q: number): boolean => {
    for (let j = a * MAX_CONTACTS, end = j + degree[a]!; j < end; j++) if (adjacency[j] === q) return true;
    return false;
  };
  for (let a = 0; a < N; a++) {
    for (let e = 0; e < p.halfDegree; e++) {
      const q = Math.floor(rnd() * N);
      if (q === a || degree[a]! >= MAX_CONTACTS || degree[q]! >= MAX_CONTACTS || linked(a, q)) continue;
      adjacency[a * MAX_CONTACTS + degree[a]!++] = q;
      adjacency[q * MAX_CONTACTS + degree[q]!++] = a;
    }
  }
  const seeds = new Set<number>();
  while (seeds.size < Math.min(p.seeds, N)) seeds.add(Math.floor(rnd() * N));
  let edges = 0;
  for (let a = 0; a < N; a++) edges += degree[a]!;
  return {
    degree,
    adjacency,
    seeds,
    edges: edges / 2,
    contactsOf: (a) => adjacency.subarray(a * MAX_CONTACTS, a * MAX_CONTACTS + degree[a]!),
  };
}

/** The same rules as the grains, sequentially: S/I/R as of the start of each step, until none is infected. */
export function reference(p: SirParams, g: Graph): Counts[] {
  const N = p.n;
  const inf = new Int32Array(N).fill(-1);
  const rec = new Int32Array(N).fill(-1);
  for (const s of g.seeds) inf[s] = 0;
  const out: Counts[] = [];
  for (let t = 1; t <= p.maxSteps; t++) {
    const c = { s: 0, i: 0, r: 0 };
    const active: number[] = [];
    for (let a = 0; a < N; a++) {
      if (rec[a]! >= 0) c.r++;
      else if (inf[a]! >= 0) {
        c.i++;
        active.push(a);
      } else c.s++;
    }
    out.push(c);
    if (c.i === 0) break;
    for (const a of active) {
      for (const q of g.contactsOf(a)) if (inf[q]! < 0 && infectionHash(t, a, q) < p.threshold) inf[q] = t;
      if (t - inf[a]! >= p.days) rec[a] = t;
    }
  }
  return out;
}
