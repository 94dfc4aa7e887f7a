import type { Database } from 'lmdb';
import {
  checkFence,
  fenceColumns,
  type PartitionFence,
  type StateKey,
  type StateTableSpec,
} from '@ringgrain/core/store';
import { KIND, writeError } from './errors.ts';

/**
 * Cluster fencing (core store/fence.ts) in one LMDB database of the environment: [class, partition] →
 * the newest epoch claimed. A claim and a fenced write are each one write transaction, and LMDB runs one
 * write transaction at a time: a write that checked the fence commits before a newer claim starts.
 */
export class LmdbFences {
  constructor(private readonly db: Database<number, [string, number]>) {}

  /** The claimed epoch of a partition (0: none), read in the current (write) transaction. */
  claimed(grain: string, partition: number): number {
    return this.db.get([grain, partition]) ?? 0;
  }

  /** Inside a write transaction: throws StateFencedError for the first row below its partition's claim. */
  check(spec: StateTableSpec, keys: ArrayLike<StateKey>, fence: PartitionFence | undefined, n: number): void {
    if (fence === undefined) return;
    const parts = fenceColumns(KIND, spec, fence, n);
    const claimed = new Map(parts.map((p) => [p, this.claimed(spec.name, p)]));
    checkFence(KIND, spec, keys, fence, (p) => claimed.get(p)!);
  }

  /** The claimed epochs of partitions (0: none), from the latest commit. */
  read(spec: StateTableSpec, partitions: ArrayLike<number>): Float64Array {
    this.db.resetReadTxn();
    return Float64Array.from(Array.from(partitions), (p) => this.claimed(spec.name, p));
  }

  claim(spec: StateTableSpec, partitions: ArrayLike<number>, epochs: ArrayLike<number>): Float64Array {
    fenceColumns(KIND, spec, { partitions, epochs }, partitions.length);
    const out = new Float64Array(partitions.length);
    try {
      this.db.transactionSync(() => {
        for (let i = 0; i < partitions.length; i++) {
          const key: [string, number] = [spec.name, partitions[i]!];
          const had = this.db.get(key) ?? 0;
          out[i] = Math.max(had + 1, epochs[i]!);
          this.db.putSync(key, out[i]!);
        }
      });
    } catch (e) {
      throw writeError(e, `claim partitions of "${spec.name}"`);
    }
    return out;
  }
}
