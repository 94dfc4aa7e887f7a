import { IMAGE_AREA_EXTRA_WORD, RING } from '@ringgrain/core/backend';
import { OVERFLOW_WORD } from './memory.ts';

/**
 * A lane whose consumer (a pool thread) died: the messages it took from the lane's rings after its last
 * publication (the turn in flight among them) have an unknown outcome, and so do the K2K messages that
 * thread held for this kernel's full rings (its overflow queues went with it). Both are counted in `n` as
 * received and rejected, so the counters balance and K2K sent = received still holds. Used by the lane's
 * next consumer (Dispatcher.begin(resume)) and, where the lane is not restarted (its kernel faults), by the
 * host on the control block itself (CpuKernel.health).
 */
export function countLostOfDeadLane(
  n: { received: number; k2kReceived: number; rejected: number },
  inboundWords: Int32Array,
  k2kWords: Int32Array,
  imageWords: Int32Array | undefined,
  ownStats: Int32Array,
  heldWord: number,
): void {
  // Rings count every message ever taken (their tails): what the counters do not show was lost.
  const k2kTaken = Atomics.load(k2kWords, RING.tail) >>> 0;
  const imageExtra = imageWords ? Atomics.load(imageWords, IMAGE_AREA_EXTRA_WORD) >>> 0 : 0;
  const taken = ((Atomics.load(inboundWords, RING.tail) >>> 0) + k2kTaken + imageExtra) >>> 0;
  const lost = (taken - n.received) >>> 0;
  const lostK2k = (k2kTaken - n.k2kReceived) >>> 0;
  if (lost < 0x80000000) {
    n.received += lost;
    n.k2kReceived += lostK2k < 0x80000000 ? lostK2k : 0;
    n.rejected += lost;
  }
  const held = Atomics.exchange(ownStats, heldWord, 0);
  if (held > 0) {
    Atomics.sub(ownStats, OVERFLOW_WORD.inUse, held);
    n.received += held;
    n.k2kReceived += held;
    n.rejected += held;
  }
}
