/**
 * Driving the SIR epidemic from a host (examples/sir/cluster.ts, test/cluster/sir.test.ts): setup tells, then
 * one askMany of the wards a step behind a barrier; and the barrier for a cluster, whose client cannot see
 * the silos' kernels through its own idle().
 */
import type { GrainSystem } from '@ringgrain/core';
import { Person, WARD_SIZE, Ward } from './grains.ts';
import type { Counts, Graph, SirParams } from './model.ts';

export interface EpidemicRun {
  /** S/I/R as of the start of each step. */
  readonly got: Counts[];
  readonly setupMs: number;
  readonly runMs: number;
}

/**
 * The epidemic driven from `sys` (a local system, or a cluster client): every person's contacts and the seeds
 * as tells, `quiet`, `onSetup`, then per step the wards' askMany (counts, then ticks sent) and `quiet`.
 */
export async function epidemic(
  sys: GrainSystem,
  p: SirParams,
  g: Graph,
  quiet: (what: string) => Promise<void>,
  onSetup: () => Promise<void> = async () => {},
): Promise<EpidemicRun> {
  const N = p.n;
  const wards = Math.ceil(N / WARD_SIZE);
  let t = performance.now();
  for (let k = 0; k < N; k++) {
    const x = sys.grain(Person, k).tell.setup({ contacts: Array.from(g.contactsOf(k)) });
    if (x) await x;
  }
  for (const k of g.seeds) {
    const x = sys.grain(Person, k).tell.seed({});
    if (x) await x;
  }
  await quiet('setup');
  const setupMs = performance.now() - t;
  await onSetup();
  t = performance.now();
  const got: Counts[] = [];
  const wardKeys = Int32Array.from({ length: wards }, (_, w) => w);
  const members = Int32Array.from({ length: wards }, (_, w) => Math.min(WARD_SIZE, N - w * WARD_SIZE));
  const stepCol = new Int32Array(wards);
  const days = new Int32Array(wards).fill(p.days);
  const threshold = new Uint32Array(wards).fill(p.threshold);
  for (let step = 1; step <= p.maxSteps; step++) {
    const r = await sys.askMany(Ward, 'step', { key: wardKeys, step: stepCol.fill(step), days, threshold, members });
    const c = { s: 0, i: 0, r: 0 };
    for (let w = 0; w < wards; w++) {
      c.s += r.s[w]!;
      c.i += r.i[w]!;
      c.r += r.r[w]!;
    }
    got.push(c);
    await quiet(`step ${step}`);
    if (c.i === 0) break;
  }
  return { got, setupMs, runMs: performance.now() - t };
}

/** A silo's counters, read once its kernels were idle. */
export interface SiloCounts {
  readonly silo: string;
  readonly tellsOut: number;
  readonly tellsConfirmed: number;
  readonly lostTells: number;
  readonly messagesIn: number;
  /** Turns run (all classes). */
  readonly processed: number;
  /** K2K sends that stayed in the silo (kernel k2kSent; the cross-silo ones count in tellsOut). */
  readonly k2k: number;
  /** Handler errors, rejected messages and failed tells. */
  readonly errors: number;
}

/** A silo's counters after `await system.idle()` (in the silo's process). */
export async function siloCounts(system: GrainSystem, tellErrors: number): Promise<SiloCounts> {
  await system.idle({ timeoutMs: 120_000 });
  const c = system.cluster!.metrics() as Record<string, number>;
  const k = Object.values(system.metrics());
  return {
    silo: system.cluster!.self,
    tellsOut: c['tellsOut']!,
    tellsConfirmed: c['tellsConfirmed']!,
    lostTells: c['lostTells']!,
    messagesIn: c['messagesIn']!,
    processed: k.reduce((a, x) => a + x.processed, 0),
    k2k: k.reduce((a, x) => a + x.k2kSent, 0),
    errors: k.reduce((a, x) => a + x.handlerErrors + x.rejected, 0) + tellErrors,
  };
}

/**
 * The cluster-wide barrier: rounds of "idle, then your counters" asked of every silo (`read`), until every
 * tell sent across silos is confirmed by its receiver (the sum of tellsOut equals tellsConfirmed + lostTells,
 * the client's included) and two consecutive rounds read the same counters (nothing moved in between).
 * Returns the last round's counters and how many rounds it took.
 */
export async function clusterQuiet(
  client: GrainSystem,
  read: () => Promise<SiloCounts[]>,
  what: string,
  timeoutMs = 120_000,
): Promise<{ counts: SiloCounts[]; rounds: number }> {
  let prev = '';
  let rounds = 0;
  for (const until = performance.now() + timeoutMs; performance.now() < until; ) {
    const now = await read();
    rounds++;
    const cc = client.cluster!.metrics() as Record<string, number>;
    const out = now.reduce((a, s) => a + s.tellsOut, cc['tellsOut']!);
    const done = now.reduce((a, s) => a + s.tellsConfirmed + s.lostTells, cc['tellsConfirmed']! + cc['lostTells']!);
    const sig = JSON.stringify(now.map((s) => [s.tellsOut, s.tellsConfirmed, s.messagesIn, s.processed]));
    if (out === done && sig === prev) return { counts: now, rounds };
    prev = sig;
  }
  throw new Error(`${what}: the cluster did not go quiet within ${timeoutMs} ms`);
}
