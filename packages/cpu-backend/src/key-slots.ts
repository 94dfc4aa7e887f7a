/**
 * A state table's key -> slot index. Integer keys (every int-keyed grain) live in an open-addressing
 * table of two typed arrays (linear probing, backward-shift deletion, at most half full); string keys in
 * a Map. With 1,000,000 actors a V8 Map of numbers cost about 450 ns a lookup on the development machine
 * (its hash buckets, then the entry chain, each a cache miss): the persistent lane's largest cost in the
 * sensor-fleet example. Here a lookup is one hash and, mostly, one cache line of keys and one of slots.
 */
export class KeySlots<K extends number | string> {
  private keys: Float64Array;
  /** Per table entry: the slot index stored, or EMPTY. */
  private slots: Int32Array;
  private mask: number;
  private ints = 0;
  private readonly strings = new Map<string, number>();

  constructor(capacity = 1024) {
    let cap = 16;
    while (cap < capacity * 2) cap *= 2;
    this.keys = new Float64Array(cap);
    this.slots = new Int32Array(cap).fill(EMPTY);
    this.mask = cap - 1;
  }

  get size(): number {
    return this.ints + this.strings.size;
  }

  /** The slot of `key`, or -1 when absent. */
  get(key: K): number {
    if (typeof key !== 'number') return this.strings.get(key) ?? -1;
    const keys = this.keys;
    const slots = this.slots;
    const mask = this.mask;
    for (let i = hashKey(key) & mask; ; i = (i + 1) & mask) {
      const s = slots[i]!;
      if (s === EMPTY) return -1;
      if (keys[i] === key) return s;
    }
  }

  /** Sets `key`'s slot (a non-negative index), replacing any earlier one. */
  set(key: K, slot: number): void {
    if (typeof key !== 'number') {
      this.strings.set(key, slot);
      return;
    }
    if ((this.ints + 1) * 2 > this.slots.length) this.grow();
    const keys = this.keys;
    const slots = this.slots;
    const mask = this.mask;
    for (let i = hashKey(key) & mask; ; i = (i + 1) & mask) {
      if (slots[i] === EMPTY) {
        keys[i] = key;
        slots[i] = slot;
        this.ints++;
        return;
      }
      if (keys[i] === key) {
        slots[i] = slot;
        return;
      }
    }
  }

  /** Removes `key`; whether it was there. */
  delete(key: K): boolean {
    if (typeof key !== 'number') return this.strings.delete(key);
    const keys = this.keys;
    const slots = this.slots;
    const mask = this.mask;
    let i = hashKey(key) & mask;
    for (; ; i = (i + 1) & mask) {
      if (slots[i] === EMPTY) return false;
      if (keys[i] === key) break;
    }
    // Backward shift: every later entry of the probe run whose home is not in (i, j] moves into the hole,
    // so lookups never need tombstones.
    for (let j = (i + 1) & mask; slots[j] !== EMPTY; j = (j + 1) & mask) {
      const home = hashKey(keys[j]!) & mask;
      const stays = i <= j ? home > i && home <= j : home > i || home <= j;
      if (stays) continue;
      keys[i] = keys[j]!;
      slots[i] = slots[j]!;
      i = j;
    }
    slots[i] = EMPTY;
    this.ints--;
    return true;
  }

  private grow(): void {
    const oldKeys = this.keys;
    const oldSlots = this.slots;
    const cap = oldSlots.length * 2;
    this.keys = new Float64Array(cap);
    this.slots = new Int32Array(cap).fill(EMPTY);
    this.mask = cap - 1;
    this.ints = 0;
    for (let i = 0; i < oldSlots.length; i++) if (oldSlots[i] !== EMPTY) this.set(oldKeys[i] as K, oldSlots[i]!);
  }
}

const EMPTY = -1;

/** A safe integer's hash: both 32-bit halves mixed (keys above 2^32 and below 0 spread too). */
function hashKey(k: number): number {
  const lo = k | 0;
  const hi = Math.floor(k / 4294967296) | 0;
  let h = Math.imul(lo ^ Math.imul(hi, 0x85ebca6b), 0x9e3779b1);
  h ^= h >>> 15;
  return h;
}
