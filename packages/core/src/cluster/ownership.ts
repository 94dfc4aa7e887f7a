import { ClusterConfigError } from './errors.ts';
import { partitionOf } from './partition.ts';

/**
 * A class's partition ownership as this silo's kernels see it: shared memory the cluster router writes
 * when a placement table arrives (or a handoff it waited for comes), and a kernel reads on every K2K send
 * to the class (ctx.send / ctx.forward). A send to a key whose partition this silo does not own must not
 * run here: the key would be active on two silos. One definition for the writer and the reader:
 * Int32 word 0 = the table's partition count (0: no table yet, nothing owned), then one bit per partition
 * (bit p of word 1 + p/32: owned here and not waiting for a handoff).
 */
export const MAX_PARTITIONS = 65_536;
const HEADER_WORDS = 1;
const WORDS = HEADER_WORDS + MAX_PARTITIONS / 32;

/** A class's ownership memory (all zero: owns nothing until the router writes a table). */
export function allocateOwnership(): SharedArrayBuffer {
  return new SharedArrayBuffer(WORDS * 4);
}

/**
 * Writes `owned(p)` for each of `partitions` partitions. The count is stored last, after the bits, and
 * is zeroed first, so a reader never pairs a new count with an old table's bits of a different size.
 */
export function writeOwnership(sab: SharedArrayBuffer, partitions: number, owned: (p: number) => boolean): void {
  const w = new Int32Array(sab);
  if (!Number.isInteger(partitions) || partitions < 0 || partitions > MAX_PARTITIONS)
    throw new ClusterConfigError(`a placement table has ${partitions} partitions; a class has 1..${MAX_PARTITIONS}`, {
      hint: "set the cluster engine's partitions option (natsCluster({ partitions })) within 1..65536",
    });
  if ((Atomics.load(w, 0) | 0) !== partitions) Atomics.store(w, 0, 0);
  for (let word = 0; word < Math.ceil(partitions / 32); word++) {
    let bits = 0;
    for (let b = 0; b < 32; b++) {
      const p = word * 32 + b;
      if (p < partitions && owned(p)) bits |= 1 << b;
    }
    Atomics.store(w, HEADER_WORDS + word, bits);
  }
  Atomics.store(w, 0, partitions);
}

/** A reader's view of a class's ownership memory. */
export class OwnershipView {
  private readonly w: Int32Array;
  constructor(sab: SharedArrayBuffer) {
    this.w = new Int32Array(sab);
  }

  /** Whether this silo owns `key`'s partition now (false while no table was written). */
  owns(key: number | string): boolean {
    const n = Atomics.load(this.w, 0);
    if (n <= 0) return false;
    const p = partitionOf(key, n);
    return ((Atomics.load(this.w, HEADER_WORDS + (p >>> 5)) >>> (p & 31)) & 1) === 1;
  }
}
