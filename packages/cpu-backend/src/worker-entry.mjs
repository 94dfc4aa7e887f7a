// Plain JS entry: Node 20 does not pass ESM loader flags (--import tsx) to worker threads, so the worker
// registers TypeScript support itself (grain modules may be TypeScript) before importing the worker.
// An installed package: tsx, then the built pool-worker.js. This repository: ts-hooks.mjs, which loads each
// .ts module as JavaScript transformed once and cached by content (under node_modules/.cache/ringgrain), then
// pool-worker.ts: the same code as through tsx, without tsx's per-thread resolve and transform.
// RINGGRAIN_WORKER_TSX=1 uses tsx here too.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const built = new URL('./pool-worker.js', import.meta.url);
if (existsSync(built) || process.env.RINGGRAIN_WORKER_TSX === '1') {
  (await import('tsx/esm/api')).register();
  await import(existsSync(built) ? built.href : new URL('./pool-worker.ts', import.meta.url).href);
} else {
  const { register } = await import('node:module');
  const cacheDir = new URL('../../../node_modules/.cache/ringgrain/worker-ts/', import.meta.url);
  register('./ts-hooks.mjs', { parentURL: import.meta.url, data: { cacheDir: fileURLToPath(cacheDir) } });
  // Stack traces through the inline source maps, at the TypeScript lines (as tsx does).
  process.setSourceMapsEnabled(true);
  await import(new URL('./pool-worker.ts', import.meta.url).href);
}
