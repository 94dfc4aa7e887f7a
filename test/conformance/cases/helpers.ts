/** What every conformance case is given and declares, and the helpers the cases share. */
import type { ClassMetrics, GrainSystem, SystemOptions } from '@ringgrain/core';
import type { AnyGrainClass, KernelOptions } from '@ringgrain/core/types';
import { waitUntil } from '@ringgrain/core/internal';
import { expect } from 'vitest';
import type { PersistenceCase } from '../persistence.ts';

export interface CaseContext {
  readonly system: GrainSystem;
  readonly backend: string;
  /** The injected clock: set `clock.now` to move time. */
  readonly clock: { now: number };
  /**
   * The classes' figures where the system cannot read them itself: a cluster client's kernels run in the
   * silos (the cluster lane sums theirs, system.cluster.classMetrics()). Absent: system.metrics().
   */
  readonly metrics?: () => Promise<Record<string, ClassMetrics>>;
}

export interface ConformanceCase {
  readonly name: string;
  readonly grains: ReadonlyArray<readonly [AnyGrainClass, Partial<KernelOptions>?]>;
  readonly system?: Partial<SystemOptions>;
  /**
   * Needs a system of its own (lifecycle changes, kernel options, exact counter values). Other cases
   * share one system per backend (starting a CPU kernel costs a worker thread and its module imports):
   * they use their own keys and assert counter deltas, and the balance check runs after each of them.
   */
  readonly isolated?: boolean;
  /** A persistent-state case (persistence.ts): the runner gives it a store and a system factory instead. */
  readonly persistence?: PersistenceCase;
  run(c: CaseContext): Promise<void>;
}

/** Resolves to the rejection of `p`, failing the test when `p` resolves. */
export async function rejection(p: Promise<unknown> | undefined): Promise<Error> {
  if (!p) throw new Error('expected a pending send (a Promise), got undefined');
  try {
    const v = await p;
    throw new Error(`expected a rejection, got ${JSON.stringify(v)}`);
  } catch (e) {
    return e as Error;
  }
}

/** Runs `fn` expecting it to throw synchronously; returns the error. */
export function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a synchronous throw');
}

/**
 * Counters balance when settled: for every kernel, messages in (host sends + K2K received) equal
 * messages out (processed + rejected by the kernel + given up by the host at terminate), and across
 * kernels every K2K send was received. Waits (bounded) for in-flight work to settle first.
 */
export async function expectBalanced(
  source: GrainSystem | (() => Promise<Record<string, ClassMetrics>>),
): Promise<void> {
  if (typeof source === 'function') {
    // Figures read from elsewhere (the cluster lane's silos): polled, bounded, as the local read is.
    let bad = unbalanced(await source());
    for (
      const until = performance.now() + 10_000;
      bad.length && performance.now() < until;
      bad = unbalanced(await source())
    )
      await sleep(5);
    expect(bad).toEqual([]);
    return;
  }
  await waitUntil(() => unbalanced(source.metrics()).length === 0, 5000);
  expect(unbalanced(source.metrics())).toEqual([]);
}

/** What does not balance in `m` (empty: balanced). */
function unbalanced(m: Record<string, ClassMetrics>): string[] {
  const bad: string[] = [];
  let k2kSent = 0;
  let k2kReceived = 0;
  for (const [name, c] of Object.entries(m)) {
    k2kSent += c.k2kSent;
    k2kReceived += c.k2kReceived;
    const inn = c.sent + c.k2kReceived;
    const out = c.processed + c.rejected + c.hostRejected;
    if (inn !== out)
      bad.push(
        `${name}: sent ${c.sent} + k2kReceived ${c.k2kReceived} != processed ${c.processed} + ` +
          `rejected ${c.rejected} + hostRejected ${c.hostRejected}`,
      );
  }
  if (k2kSent !== k2kReceived) bad.push(`k2kSent ${k2kSent} != k2kReceived ${k2kReceived}`);
  return bad;
}

export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Typed arrays as plain arrays (through nested objects), to compare what was sent with what came back. */
export function plain(v: unknown): unknown {
  if (ArrayBuffer.isView(v)) return Array.from(v as unknown as ArrayLike<number>);
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

/** Values of Small's request fields at the bounds of each small kind. */
export const SMALL_LO = {
  u8: 0,
  i8: -128,
  u16: 0,
  i16: -32768,
  bytes: new Uint8Array([0, 255, 1, 254, 127, 128, 0, 255]),
  i8s: new Int8Array([-128, 127, -1, 0]),
  u16s: new Uint16Array([0, 65535, 256, 255]),
  i16s: new Int16Array([-32768, 32767, -1]),
};
export const SMALL_HI = {
  u8: 255,
  i8: 127,
  u16: 65535,
  i16: 32767,
  bytes: [255, 254, 253, 128, 127, 1, 0, 7],
  i8s: [127, -128, 1, -1],
  u16s: [65535, 65534, 32768, 1],
  i16s: [32767, -32768, 0],
};
export const SMALL_ZERO = {
  u8: 0,
  i8: 0,
  u16: 0,
  i16: 0,
  bytes: [0, 0, 0, 0, 0, 0, 0, 0],
  i8s: [0, 0, 0, 0],
  u16s: [0, 0, 0, 0],
  i16s: [0, 0, 0],
};
