/**
 * FIFO with O(1) push and shift (a growable circular buffer). Array#shift is O(n), which made draining
 * a few hundred thousand queued messages quadratic (K2K overflow on the CPU backend, the host's backlog of
 * sends waiting for ring space).
 */
export class Deque<T> {
  private items: Array<T | undefined> = new Array(16);
  private head = 0;
  length = 0;

  push(v: T): void {
    if (this.length === this.items.length) this.grow();
    this.items[(this.head + this.length) & (this.items.length - 1)] = v;
    this.length++;
  }

  peek(): T | undefined {
    return this.length ? this.items[this.head] : undefined;
  }

  peekLast(): T | undefined {
    return this.length ? this.items[(this.head + this.length - 1) & (this.items.length - 1)] : undefined;
  }

  shift(): T | undefined {
    if (!this.length) return undefined;
    const v = this.items[this.head];
    this.items[this.head] = undefined;
    this.head = (this.head + 1) & (this.items.length - 1);
    this.length--;
    return v;
  }

  /** Removes every item `drop` says yes to, in order, keeping the others' order; returns the removed ones. */
  removeWhere(drop: (v: T) => boolean): T[] {
    const kept: T[] = [];
    const removed: T[] = [];
    while (this.length) {
      const v = this.shift() as T;
      (drop(v) ? removed : kept).push(v);
    }
    for (const v of kept) this.push(v);
    return removed;
  }

  private grow(): void {
    const next = new Array<T | undefined>(this.items.length * 2);
    for (let i = 0; i < this.length; i++) next[i] = this.items[(this.head + i) & (this.items.length - 1)];
    this.items = next;
    this.head = 0;
  }
}
