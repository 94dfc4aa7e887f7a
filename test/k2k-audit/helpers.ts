/** Shared pieces of the K2K audit: the backend configurations, a seeded PRNG, a hang guard. */
import type { GrainSystem } from '@ringgrain/core';
import { imbalance, startSystem } from '../readme-programs/backends.ts';

export { imbalance, startSystem };

/** cpu with 2 and 3 pool threads (actors of one class on different threads), and inline. */
export const CONFIGS = [
  { name: 'cpu-2', backend: 'cpu', threads: 2 },
  { name: 'cpu-3', backend: 'cpu', threads: 3 },
  { name: 'inline', backend: 'inline', threads: 1 },
] as const;
export type Config = (typeof CONFIGS)[number];

/** mulberry32: a small deterministic PRNG. */
export function rng(seed: number): { next(): number; int(n: number): number; pick<T>(xs: readonly T[]): T } {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n) => Math.floor(next() * n), pick: (xs) => xs[Math.floor(next() * xs.length)]! };
}

/** Rejects with a message naming `what` if `p` does not settle within `ms` (a hang guard, not a timing check). */
export function guard<T>(p: Promise<T>, what: string, ms = 20_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`hang: ${what} did not settle in ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** system.idle() under a hang guard, then the per-kernel balance (empty when everything balances). */
export async function settle(system: GrainSystem, what: string): Promise<string[]> {
  await guard(system.idle({ timeoutMs: 20_000 }), `${what}: idle()`, 25_000);
  return imbalance(system);
}

export const tick = () => new Promise<void>((r) => setImmediate(r));
