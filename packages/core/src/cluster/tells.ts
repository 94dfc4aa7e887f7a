/**
 * Tells are acknowledged per hop with cumulative counts: per silo, how many this process sent it, how many
 * it confirmed, and how many this process accepted from it (the count its next ack carries). A silo that
 * dies (or leaves and stays silent) leaves an exact count of the tells it had not confirmed.
 */
export class TellLedger {
  private readonly sent = new Map<string, number>();
  private readonly acked = new Map<string, number>();
  private readonly recv = new Map<string, number>();
  /** Silos that left (shut down), and when: they drain first, so their confirmations may still come. */
  private readonly leftAt = new Map<string, number>();

  get leaving(): number {
    return this.leftAt.size;
  }

  sentTo(silo: string): void {
    this.sent.set(silo, (this.sent.get(silo) ?? 0) + 1);
  }

  /** An ack from `from` (cumulative): how many tells it newly confirmed. */
  confirm(from: string, cumulative: number): number {
    const had = this.acked.get(from) ?? 0;
    if (cumulative <= had) return 0;
    this.acked.set(from, cumulative);
    return cumulative - had;
  }

  /** `n` tells accepted from `from`: the cumulative count to ack. */
  received(from: string, n: number): number {
    const total = (this.recv.get(from) ?? 0) + n;
    this.recv.set(from, total);
    return total;
  }

  /** Silo `id` is gone: the tells it never confirmed (forgotten here; the caller counts them lost). */
  private close(id: string): number {
    const lost = (this.sent.get(id) ?? 0) - (this.acked.get(id) ?? 0);
    this.sent.delete(id);
    this.acked.delete(id);
    return lost;
  }

  /** Silo `id` died: the tells it had not confirmed. */
  died(id: string): number {
    this.recv.delete(id);
    return this.close(id);
  }

  /** Silo `id` left at `now`: its confirmations may still come (settled after `graceMs` by settleLeft). */
  left(id: string, now: number): void {
    this.recv.delete(id);
    this.leftAt.set(id, now);
  }

  /** Silos that left `graceMs` or more ago, with the tells they never confirmed (0 or more). */
  settleLeft(now: number, graceMs: number): { silo: string; lost: number }[] {
    const out: { silo: string; lost: number }[] = [];
    for (const [id, at] of this.leftAt) {
      if (now - at < graceMs) continue;
      this.leftAt.delete(id);
      out.push({ silo: id, lost: this.close(id) });
    }
    return out;
  }

  /** Tells sent and not confirmed yet, over every silo. */
  unconfirmed(): number {
    let n = 0;
    for (const [id, s] of this.sent) n += s - (this.acked.get(id) ?? 0);
    return n;
  }
}
