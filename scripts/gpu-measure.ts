/**
 * Measurements shared by the GPU-machine record scripts (device-cuda-record.ts, gpu-latest.ts). Each
 * checks what it measures (answers, counters, a JS model) and throws on a wrong result.
 */
import { performance } from 'node:perf_hooks';
import type { GrainSystem } from '../packages/core/src/index.ts';
import type { RingKernel } from '../packages/core/src/entries/types.ts';
import { RELAY_ACTORS, Relay } from '../bench/grains.ts';

/**
 * Writes `count` tells without overfilling the inbound ring: the producer never outruns the kernel,
 * yielding to the event loop whenever it is full.
 */
export async function tellsWithFlowControl(
  kernel: RingKernel,
  count: number,
  send: (i: number) => void,
  limitMs: number,
): Promise<void> {
  const room = kernel.lanes[0]!.inbound.capacity - 64;
  const t0 = performance.now();
  let sent = 0;
  while (sent < count) {
    const free = room - kernel.inboundDepth();
    for (let j = 0; j < free && sent < count; j++, sent++) send(sent);
    if (sent < count) await new Promise((r) => setImmediate(r));
    if (performance.now() - t0 > limitMs) throw new Error(`tells: only ${sent} of ${count} written in ${limitMs} ms`);
  }
}

/** Waits (yielding) until `done()`; throws after `limitMs` saying what `progress()` reached. */
export async function until(done: () => boolean, limitMs: number, progress: () => string): Promise<void> {
  const t0 = performance.now();
  while (!done()) {
    await new Promise((r) => setImmediate(r));
    if (performance.now() - t0 > limitMs) throw new Error(`not done after ${limitMs} ms: ${progress()}`);
  }
}

/** K2K hop: (p50 of an ask chain of H forwards − p50 of a chain of 0) / H, on a started system with Relay. */
export async function relayHop(
  sys: GrainSystem,
  H = 1000,
): Promise<{ chain0P50Us: number; chainHP50Us: number; hops: number; hopNs: number }> {
  const r = sys.grain(Relay, 0);
  const time = async (left: number, n: number): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const t = process.hrtime.bigint();
      const got = await r.chain({ left });
      out.push(Number(process.hrtime.bigint() - t) / 1000);
      if (got.at !== left % RELAY_ACTORS) throw new Error(`chain(${left}) ended at ${got.at}`);
    }
    return out.sort((a, b) => a - b);
  };
  await time(H, 5);
  const zero = await time(0, 200);
  const long = await time(H, 50);
  const p50 = (xs: number[]) => xs[Math.floor(xs.length / 2)]!;
  return { chain0P50Us: p50(zero), chainHP50Us: p50(long), hops: H, hopNs: ((p50(long) - p50(zero)) / H) * 1000 };
}

/**
 * K2K throughput: `walks` seed tells each start a walk of `steps` K2K sends over RELAY_ACTORS actors;
 * timed until the kernel counted every turn. Sampled actors are checked against the same walks in JS
 * (cumulative over `round` earlier calls on the same system).
 */
export async function relayWalks(
  sys: GrainSystem,
  walks: number,
  steps: number,
  model: Uint32Array,
  seeds: 'tells' | 'tellMany' = 'tells',
): Promise<{ k2kMessages: number; seconds: number; perSecond: number; checkedActors: number }> {
  const kernel = sys.kernel(Relay);
  const c0 = sys.counters(Relay);
  const seed = (i: number) => (1 + i * 255) % RELAY_ACTORS;
  const t0 = performance.now();
  // The seeds' host time counts in the figure (the walks start while seeding goes on); tellMany keeps it
  // small for many walks.
  if (seeds === 'tellMany')
    await sys.tellMany(Relay, 'spread', {
      key: Int32Array.from({ length: walks }, (_, i) => seed(i)),
      ttl: new Uint32Array(walks).fill(steps),
    });
  else await tellsWithFlowControl(kernel, walks, (i) => sys.grain(Relay, seed(i)).tell.spread({ ttl: steps }), 60_000);
  const want = walks * (steps + 1);
  await until(
    () => sys.counters(Relay).processed - c0.processed >= want,
    90_000,
    () => `${sys.counters(Relay).processed - c0.processed} of ${want} turns`,
  );
  const seconds = (performance.now() - t0) / 1000;
  const k2k = sys.counters(Relay).k2kReceived - c0.k2kReceived;
  for (let i = 0; i < walks; i++) {
    let k = seed(i);
    for (let s = 0; s <= steps; s++) {
      model[k]!++;
      k = (k * 7919 + 13) % RELAY_ACTORS;
    }
  }
  let checked = 0;
  for (let k = 4099; k < RELAY_ACTORS; k += 4099) {
    const got = (await sys.grain(Relay, k).count({})).n;
    if (got !== model[k]) throw new Error(`k2k: actor ${k} counted ${got}, the JS walks say ${model[k]}`);
    checked++;
  }
  return { k2kMessages: k2k, seconds, perSecond: k2k / seconds, checkedActors: checked };
}

export { median, trials } from '../bench/trials.ts';
