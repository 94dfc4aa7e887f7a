import type { MessageEntry } from './types.ts';

interface Parked {
  entry: MessageEntry;
  since: number;
}

/**
 * Messages for a key with no live owner yet (a move or a death under way), in arrival order. While a class
 * has parked messages, its new sends park behind them, so FIFO per sender holds across the wait.
 */
export class ParkingLot {
  private parked: Parked[] = [];
  /** Per class, how many of its messages are parked. */
  private readonly grains = new Map<string, number>();

  get size(): number {
    return this.parked.length;
  }

  /** Whether `grain` has parked messages (its sends park behind them). */
  has(grain: string): boolean {
    return this.grains.has(grain);
  }

  park(entry: MessageEntry, now: number): void {
    this.parked.push({ entry, since: now });
    this.grains.set(entry[1], (this.grains.get(entry[1]) ?? 0) + 1);
  }

  /**
   * Retried in order: `route` takes an entry whose owner is known now; one that still has none keeps its
   * place, and so do the class's entries behind it.
   */
  unpark(routable: (e: MessageEntry) => boolean, route: (e: MessageEntry) => void): void {
    if (this.parked.length === 0) return;
    const list = this.parked;
    this.parked = [];
    this.grains.clear();
    for (const p of list) {
      const grain = p.entry[1];
      if (this.grains.has(grain)) {
        this.parked.push(p);
        this.grains.set(grain, this.grains.get(grain)! + 1);
        continue;
      }
      if (!routable(p.entry)) {
        this.parked.push(p);
        this.grains.set(grain, 1);
        continue;
      }
      route(p.entry);
    }
  }

  /** Takes out the entries parked `maxMs` or longer, with how long each waited. */
  expire(now: number, maxMs: number): { entry: MessageEntry; waited: number }[] {
    if (this.parked.length === 0 || now - this.parked[0]!.since < maxMs) return [];
    const keep: Parked[] = [];
    const out: { entry: MessageEntry; waited: number }[] = [];
    for (const p of this.parked) {
      if (now - p.since < maxMs) keep.push(p);
      else out.push({ entry: p.entry, waited: now - p.since });
    }
    this.parked = keep;
    this.grains.clear();
    for (const p of keep) this.grains.set(p.entry[1], (this.grains.get(p.entry[1]) ?? 0) + 1);
    return out;
  }
}
