/** Polls `check` until it returns true or `timeoutMs` passes; never blocks the event loop. */
export async function waitUntil(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  let spins = 0;
  while (!check()) {
    if (performance.now() > deadline) return check();
    // A few immediate turns first (acks usually take microseconds), then 1 ms sleeps.
    await new Promise<void>((r) => (spins++ < 50 ? setImmediate(r) : setTimeout(r, 1)));
  }
  return true;
}
