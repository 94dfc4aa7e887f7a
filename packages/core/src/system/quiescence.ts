import { IdleTimeoutError } from '../errors.ts';
import type { KernelCounters, RingKernel } from '../kernel.ts';
import { COUNTERS } from '../protocol.ts';
import type { SystemState } from './state.ts';

/**
 * GrainSystem.idle: resolves when everything sent has been processed (two waves of balanced counters;
 * the facade's comment says why that is exact). `drainReplies` runs before every reading.
 */
export async function waitIdle(
  state: SystemState,
  drainReplies: () => number,
  opts: { timeoutMs?: number; holdMs?: number } = {},
): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const holdMs = opts.holdMs ?? 0.25;
  const t0 = performance.now();
  let wave: { done: number; at: number; asked: Array<[RingKernel, number]> } | undefined;
  for (;;) {
    drainReplies();
    const { busy, processed, queued } = balance(state);
    const now = performance.now();
    if (busy.length !== 0) wave = undefined;
    else if (wave && wave.asked.every(([k, r]) => !k.accepting || k.publicationAnswered(r))) {
      if (processed === wave.done && queued === 0) {
        if (now - wave.at >= holdMs) return;
      } else wave = undefined;
    }
    if (busy.length === 0 && !wave) {
      const asked = state
        .kernels()
        .filter((k) => k.accepting)
        .map((k): [RingKernel, number] => [k, k.requestPublication()]);
      wave = { done: processed, at: now, asked };
    }
    if (now - t0 > timeoutMs) {
      const why = busy.length
        ? busy
        : wave
          ? [
              'counts still moving, or a kernel did not answer a counter publication request ' +
                `(processed ${processed}, queued ${queued})`,
            ]
          : [`counts still moving (processed ${processed})`];
      throw new IdleTimeoutError(timeoutMs, why);
    }
    await new Promise((r) => (now - t0 < 20 ? setImmediate(r) : setTimeout(r, 1)));
  }
}

/**
 * What keeps the system from being idle (`busy`, empty when idle), every message processed so far, and the kernels'
 * `queued`.
 */
function balance(state: SystemState): { busy: string[]; processed: number; queued: number } {
  const out: string[] = [];
  let processed = 0;
  let queued = 0;
  let spilled = 0;
  for (const k of state.waiting) spilled += state.spills.get(k)?.size ?? 0;
  if (spilled) out.push(`${spilled} sends wait for ring space`);
  let k2kSent = 0;
  let k2kReceived = 0;
  // Two whole reads of every kernel that agree: no publication changed while the reading went on.
  const live = state.kernels().filter((k) => k.state !== 'created');
  const first = live.map((k) => k.counters());
  const second = live.map((k) => k.counters());
  if (!first.every((c, i) => sameCounts(c, second[i]!))) out.push('counters moved between two reads');
  for (const [i, k] of live.entries()) {
    const c = second[i]!;
    k2kSent += c.k2kSent;
    k2kReceived += c.k2kReceived;
    const inn = c.sent + c.k2kReceived;
    const done = c.processed + c.rejected + c.hostRejected;
    processed += done;
    if (k.accepting) queued += k.queued();
    if (inn !== done || c.inboundDepth !== 0)
      out.push(`${k.def.name} (${k.state}): ${inn - done} of ${inn} messages not yet processed`);
  }
  if (k2kSent !== k2kReceived) out.push(`${k2kSent - k2kReceived} K2K messages in flight`);
  return { busy: out, processed, queued };
}

/** Two reads of a kernel's counters agree on every count (the heartbeat aside). */
function sameCounts(a: KernelCounters, b: KernelCounters): boolean {
  return (
    a.sent === b.sent &&
    a.hostRejected === b.hostRejected &&
    a.inboundDepth === b.inboundDepth &&
    COUNTERS.every((n) => a[n] === b[n])
  );
}
