/**
 * A kernel may consume through several lanes (a CPU pool gives each of its threads one lane of every
 * kernel), each with its own inbound ring. Every producer — the host, and a worker sending K2K — must
 * put all messages for one actor into the same lane (one consumer per actor, FIFO per sender → actor),
 * so the lane is a pure function of the key, computed alike on every thread.
 */

/** murmur3's 32-bit finalizer: consecutive keys spread evenly over lanes. */
export function mix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The lane (0 ≤ lane < lanes) that consumes messages for `key`: a safe integer or a string. */
export function laneOfKey(key: number | string, lanes: number): number {
  if (lanes <= 1) return 0;
  if (typeof key === 'number') {
    const hi = Math.floor(key / 4294967296) | 0;
    return mix32((key >>> 0) ^ Math.imul(hi, 0x9e3779b9)) % lanes;
  }
  // FNV-1a over UTF-16 code units, then mixed.
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return mix32(h) % lanes;
}
