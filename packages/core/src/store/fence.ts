/**
 * Cluster fencing shared by every store: a store keeps, per grain class and partition, the newest epoch
 * an owner claimed (`StateTable.claim`); a fenced write (`PutBatch.fence`) is refused when a row's epoch is
 * below its partition's claimed one. The checks here make every store refuse exactly the same rows.
 */
import { StateBatchError, StateFencedError } from './errors.ts';
import type { PartitionFence, StateTableSpec } from './types.ts';

/** The table (LMDB database, PostgreSQL table) that holds the claimed epochs; no grain class may take its name. */
export const FENCE_TABLE = '__ringgrain_fences';

/** Checks a batch's fence columns (n rows); returns the distinct partitions it names. */
export function fenceColumns(store: string, spec: StateTableSpec, fence: PartitionFence, n: number): number[] {
  const { partitions, epochs } = fence;
  if (!partitions || partitions.length !== n || !epochs || epochs.length !== n) {
    throw new StateBatchError(
      store,
      spec.name,
      `fence has ${partitions?.length ?? 'no'} partitions and ${epochs?.length ?? 'no'} epochs for ${n} keys`,
    );
  }
  const seen = new Set<number>();
  for (let i = 0; i < n; i++) {
    const p = partitions[i]!;
    const e = epochs[i]!;
    if (!Number.isInteger(p) || p < 0 || p > 0xffff_ffff)
      throw new StateBatchError(store, spec.name, `fence partition ${String(p)} is not an integer ≥ 0`, i);
    if (!Number.isSafeInteger(e) || e < 0)
      throw new StateBatchError(store, spec.name, `fence epoch ${String(e)} is not an integer ≥ 0`, i);
    seen.add(p);
  }
  return [...seen];
}

/**
 * Throws StateFencedError for the first row whose epoch is below its partition's claimed epoch (`claimed`: 0 when
 * none).
 */
export function checkFence(
  store: string,
  spec: StateTableSpec,
  keys: ArrayLike<unknown>,
  fence: PartitionFence,
  claimed: (partition: number) => number,
): void {
  const { partitions, epochs } = fence;
  for (let i = 0; i < partitions.length; i++) {
    const p = partitions[i]!;
    const f = claimed(p);
    if (epochs[i]! < f) throw new StateFencedError(store, spec.name, keys[i], i, p, epochs[i]!, f);
  }
}
