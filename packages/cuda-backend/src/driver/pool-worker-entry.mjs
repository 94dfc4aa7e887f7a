// Plain JS entry of a compile-pool worker (worker-pool.ts). Node 20 does not pass ESM loader flags (--import tsx)
// to worker threads, so a TypeScript handler module gets tsx registered here first; a built package's handler is
// .js and needs nothing. The handler module exports createHandler(init) → (job) => { result, transfer? }.
import { parentPort, workerData } from 'node:worker_threads';

const { handler, init } = workerData;
let handle;
let initError;

/** An error as plain data (structured clone keeps no class): its class name and every plain own field. */
function serialize(e) {
  if (!(e instanceof Error)) return { type: 'Error', name: 'Error', message: String(e) };
  const out = { type: e.constructor?.name ?? 'Error', name: e.name, message: e.message, stack: e.stack };
  for (const [k, v] of Object.entries(e)) {
    const plain =
      v === null ||
      ['string', 'number', 'boolean'].includes(typeof v) ||
      (Array.isArray(v) && v.every((x) => typeof x === 'string'));
    if (plain && !(k in out)) out[k] = v;
  }
  if (e.cause !== undefined) out.causeMessage = e.cause instanceof Error ? e.cause.message : String(e.cause);
  return out;
}

// Jobs posted while the handler loads wait in the port's queue: the listener is attached only after it.
try {
  if (handler.endsWith('.ts')) (await import('tsx/esm/api')).register();
  const mod = await import(handler);
  handle = await mod.createHandler(init);
} catch (e) {
  initError = e;
}

parentPort.on('message', async ({ id, job }) => {
  try {
    if (initError) throw initError;
    const { result, transfer } = await handle(job);
    parentPort.postMessage({ id, ok: true, result }, transfer ?? []);
  } catch (e) {
    parentPort.postMessage({ id, ok: false, error: serialize(e) });
  }
});
