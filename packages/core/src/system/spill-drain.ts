import { QueueFullError } from '../errors.ts';
import type { RingKernel } from '../kernel.ts';
import { rejectAsk } from '../pending.ts';
import { firstUnsent, type RowsWaiting } from './bulk-send.ts';
import type { SystemState } from './state.ts';

/**
 * The sends that wait for ring space (each kernel's spill): moved into the rings as they make room, and
 * failed (asks reject, tells become tellError events) once they waited past queueFullTimeoutMs or their
 * kernel stopped accepting.
 */
export class SpillDrain {
  /** drain's record of where each lane's producer stood (reused: the pump calls it on every spin). */
  private readonly lanePositions: number[] = [];

  constructor(
    private readonly state: SystemState,
    private readonly drainRows: (kernel: RingKernel, seg: RowsWaiting) => number,
  ) {}

  /** Moves waiting sends into every kernel's ring as far as each has room; fails those stuck too long. */
  drain(): void {
    const now = performance.now();
    for (const kernel of this.state.waiting) {
      const spill = this.state.spills.get(kernel)!;
      if (!kernel.accepting && !kernel.draining) {
        try {
          kernel.assertAccepting();
        } catch (e) {
          this.cancel(kernel, e as Error);
        }
        continue;
      }
      const lanes = kernel.lanes;
      const before = this.lanePositions;
      before.length = lanes.length;
      for (let i = 0; i < lanes.length; i++) before[i] = lanes[i]!.producer.position();
      const images = spill.drain(kernel.producers, (seg) => this.drainRows(kernel, seg as RowsWaiting), now);
      kernel.sent += images;
      if (spill.size === 0) this.state.waiting.delete(kernel);
      else if (now - spill.since > this.state.config.queueFullTimeoutMs)
        this.cancel(kernel, new QueueFullError(kernel.def.name, Math.round(now - spill.since)));
      // Only the lanes this drain wrote to: waking an idle lane's thread (it spins before it sleeps again)
      // on every retry put three busy threads on two cores, and the host lost its core for milliseconds.
      for (let i = 0; i < lanes.length; i++) if (lanes[i]!.producer.position() !== before[i]) kernel.wake(i);
    }
  }

  /** Fails everything waiting for `kernel`'s ring: asks reject, tells become tellError events; all counted. */
  cancel(kernel: RingKernel, error: Error): void {
    const { pending, events } = this.state;
    const spill = this.state.spills.get(kernel);
    this.state.waiting.delete(kernel);
    if (!spill || spill.size === 0) return;
    const grain = kernel.def.name;
    const n = spill.cancel(
      error,
      (m) => {
        const p = m.corr ? pending.get(m.corr) : undefined;
        if (p) {
          pending.delete(m.corr);
          rejectAsk(m.corr, p, error);
        } else if (!m.corr)
          events.emit('tellError', { grain, method: kernel.def.methods[m.method]?.name ?? String(m.method), error });
      },
      (seg) => {
        const base = (seg as RowsWaiting).rows.corrBase;
        if (base === undefined) {
          events.emit('tellError', { grain, method: seg.method, error, row: firstUnsent(seg as RowsWaiting) });
          return;
        }
        for (let i = seg.rows.next; i < seg.rows.end; i++) {
          const p = pending.get(base + i);
          if (!p) continue;
          pending.delete(base + i);
          rejectAsk(base + i, p, error);
        }
      },
    );
    kernel.cancelled += n;
    this.state.config.logger.warn(
      { grain, cancelled: n, code: (error as { code?: string }).code },
      `${n} sends to ${grain} that waited for ring space were cancelled: ${error.message.split('\n')[0]}`,
    );
  }
}
