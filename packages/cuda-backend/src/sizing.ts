/**
 * The CUDA backend's scaled defaults: partitions and partition-queue slots of a kernel, from its class's
 * maxActors and slot size (the `partitions` and `queueCapacity` options override them).
 */
/*
 * Defaults of partitions and queue capacity. SIR at 1,000,000 people on the H100 (a step's burst is up to
 * 2.8 M K2K messages): 32 partitions of 256 slots, peak step 154 ms; 128 of 4,096, 41.7 ms; 512 of 1,024,
 * 21.7 ms (epidemic 894 → 669 ms, the README's GPU section). Small classes keep 32 × 256: their warps and
 * queues cost memory and idle polling, and SIR's 10,000 wards at 512 partitions took their askMany 30-80%
 * longer a step. 512 partitions are 129 resident blocks: room is left for other classes' kernels.
 */
export const DEFAULT_PARTITIONS = 32;
export const DEFAULT_QUEUE_CAPACITY = 256;
const BIG_CLASS_ACTORS = 1 << 18;
const ACTORS_PER_AUTO_PARTITION = 2048;
const MAX_AUTO_PARTITIONS = 512;
const MAX_AUTO_QUEUE_CAPACITY = 1 << 14;
/** Bytes of slots a default-sized partition queue may take, and the fewest slots it keeps. */
const QUEUE_BYTES_BUDGET = 64 << 20;
const MIN_AUTO_QUEUE_CAPACITY = 16;
const pow2AtLeast = (n: number): number => 2 ** Math.ceil(Math.log2(Math.max(1, n)));

/** Partitions of a kernel with this many actors (the scaled default). */
export function scaledPartitions(maxActors: number): number {
  if (maxActors <= BIG_CLASS_ACTORS) return DEFAULT_PARTITIONS;
  return Math.min(MAX_AUTO_PARTITIONS, pow2AtLeast(Math.ceil(maxActors / ACTORS_PER_AUTO_PARTITION)));
}

/** Slots per partition queue of a kernel with this many actors (the scaled default). */
export function scaledQueueCapacity(maxActors: number, partitions: number, slotSize: number): number {
  const scaled =
    maxActors <= BIG_CLASS_ACTORS
      ? DEFAULT_QUEUE_CAPACITY
      : Math.max(
          DEFAULT_QUEUE_CAPACITY,
          Math.min(MAX_AUTO_QUEUE_CAPACITY, pow2AtLeast(Math.ceil(maxActors / 2 / partitions))),
        );
  // Large slots: a queue of 256 × 8 MB slots was 2 GiB a partition (64 GiB for 32), for messages a
  // kernel takes a few at a time; what does not fit waits in the host ring or the overflow pool.
  const bySize = Math.max(
    MIN_AUTO_QUEUE_CAPACITY,
    2 ** Math.floor(Math.log2(Math.max(1, QUEUE_BYTES_BUDGET / slotSize))),
  );
  return Math.min(scaled, bySize);
}
