/** The two backends every README program runs against, and a system factory with an injected clock. */
import { GrainSystem, type RegisterOptions, type SystemOptions } from '@ringgrain/core';
import type { AnyGrainClass } from '@ringgrain/core/types';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { InlineBackend } from '@ringgrain/inline-backend';

// One pool thread by default: each thread imports the grain module through tsx (about 1.5 s of CPU in
// this repository), and most programs do not need two; the K2K/FIFO program asks for more.
export const BACKENDS = [
  { name: 'cpu', make: (threads = 1) => new CpuBackend({ threads }) },
  { name: 'inline', make: (_threads?: number) => new InlineBackend() },
] as const;

export type BackendName = (typeof BACKENDS)[number]['name'];

export async function startSystem(
  backend: BackendName,
  grains: ReadonlyArray<AnyGrainClass | readonly [AnyGrainClass, RegisterOptions]>,
  opts: Partial<SystemOptions> & { threads?: number } = {},
): Promise<GrainSystem> {
  const b = BACKENDS.find((x) => x.name === backend)!;
  const { threads, ...rest } = opts;
  const system = new GrainSystem({
    backends: { [backend]: b.make(threads) },
    logLevel: 'silent',
    handleSignals: false,
    ...rest,
  });
  for (const g of grains) {
    const [cls, o] = Array.isArray(g) ? (g as readonly [AnyGrainClass, RegisterOptions]) : [g as AnyGrainClass, {}];
    system.register(cls, { placement: backend, ...o });
  }
  await system.start();
  return system;
}

/**
 * Every kernel balances once the system is idle (metrics() is exact only after idle()):
 * sent + k2kReceived = processed + rejected + hostRejected, and K2K sent = received.
 */
export async function imbalance(system: GrainSystem): Promise<string[]> {
  await system.idle();
  const bad: string[] = [];
  let ks = 0;
  let kr = 0;
  for (const [name, c] of Object.entries(system.metrics())) {
    ks += c.k2kSent;
    kr += c.k2kReceived;
    if (c.sent + c.k2kReceived !== c.processed + c.rejected + c.hostRejected) bad.push(`${name}: ${JSON.stringify(c)}`);
  }
  if (ks !== kr) bad.push(`k2k ${ks} != ${kr}`);
  return bad;
}
