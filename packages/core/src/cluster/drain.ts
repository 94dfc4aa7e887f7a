import type { RingKernel } from '../kernel.ts';

/**
 * Resolves once a kernel has processed every message it had been sent when called (host sends and K2K
 * received), read from counters it published after the call; or after `timeoutMs` (false). A handoff
 * waits for it before deactivating a class's actors: a table reroutes only later sends, and the turns of
 * messages already in the rings must be in the states the handoff writes (else they run after it, on
 * actors the new owner has loaded, and their writes are refused by the fence).
 */
export async function drained(k: RingKernel, timeoutMs: number): Promise<boolean> {
  const until = performance.now() + timeoutMs;
  const wait = () => new Promise((r) => setTimeout(r, 1));
  const published = async () => {
    const r = k.requestPublication();
    while (k.accepting && !k.publicationAnswered(r)) {
      if (performance.now() > until) return false;
      await wait();
    }
    return true;
  };
  if (!(await published())) return false;
  const c = k.counters();
  const target = c.sent + c.k2kReceived;
  for (;;) {
    const now = k.counters();
    if (now.processed + now.rejected + now.hostRejected >= target) return true;
    if (!k.accepting || performance.now() > until) return false;
    await wait();
    await published();
  }
}
