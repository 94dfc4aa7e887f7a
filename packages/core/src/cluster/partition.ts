/** Key → partition, identical on every silo (pure arithmetic on the key, no process state). */

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A safe-integer or string key's 32-bit hash (ints: both 32-bit halves mixed; strings: FNV-1a then mixed). */
export function keyHash(key: number | string): number {
  if (typeof key === 'number') {
    const lo = key >>> 0;
    const hi = Math.floor(key / 4294967296) >>> 0;
    return fmix32(lo ^ fmix32(hi ^ 0x9e3779b9));
  }
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h);
}

export function partitionOf(key: number | string, partitions: number): number {
  return keyHash(key) % partitions;
}

export interface Assignment {
  owners: string[];
  epochs: number[];
  /** Partitions whose owner changed. */
  moved: number;
}

/**
 * Partitions over `eligible` silos, moving as few as possible from `prev`: a partition stays with its
 * owner while that owner is eligible and not above its share; only orphans (owner gone) and the excess
 * of over-full silos move, to the silos below their share. Shares differ by at most one; the silos
 * holding most keep the larger shares. An owner change bumps the partition's epoch.
 */
export function assignPartitions(
  partitions: number,
  eligible: readonly string[],
  prev?: { owners: readonly string[]; epochs: readonly number[] },
): Assignment {
  const owners = new Array<string>(partitions).fill('');
  const epochs = new Array<number>(partitions).fill(0);
  const same = prev !== undefined && prev.owners.length === partitions;
  if (same) {
    for (let p = 0; p < partitions; p++) {
      owners[p] = prev.owners[p]!;
      epochs[p] = prev.epochs[p] ?? 0;
    }
  }
  const before = owners.slice();
  const ids = [...new Set(eligible)].sort();
  if (ids.length === 0) {
    owners.fill('');
  } else {
    const held = new Map<string, number[]>(ids.map((id) => [id, []]));
    const free: number[] = [];
    for (let p = 0; p < partitions; p++) {
      const list = held.get(owners[p]!);
      if (list) list.push(p);
      else free.push(p);
    }
    const base = Math.floor(partitions / ids.length);
    const extra = partitions % ids.length;
    const order = [...ids].sort((a, b) => held.get(b)!.length - held.get(a)!.length || (a < b ? -1 : 1));
    const quota = new Map(order.map((id, i) => [id, base + (i < extra ? 1 : 0)]));
    for (const id of ids) {
      const list = held.get(id)!;
      while (list.length > quota.get(id)!) free.push(list.pop()!);
    }
    free.sort((a, b) => a - b);
    let f = 0;
    for (const id of ids) {
      const list = held.get(id)!;
      while (list.length < quota.get(id)! && f < free.length) {
        const p = free[f++]!;
        owners[p] = id;
        list.push(p);
      }
    }
  }
  let moved = 0;
  for (let p = 0; p < partitions; p++) {
    if (owners[p] !== before[p]) {
      moved++;
      epochs[p] = epochs[p]! + 1;
    }
  }
  return { owners, epochs, moved };
}
