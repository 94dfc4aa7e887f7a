/**
 * Child process of lock.test.ts. `hold DIR`: opens the store, writes a row, prints "ready" and stays until
 * killed. `open DIR`: opens the store and prints what open() did as one JSON line.
 */
import { LmdbStore } from '../src/index.ts';

const [mode, dir] = process.argv.slice(2) as [string, string];
const store = new LmdbStore({ dataDir: dir });
if (mode === 'hold') {
  await store.open();
  const t = await store.table({ name: 'Counter', keyKind: 'int', stateSize: 8 });
  await t.put(1, new Uint8Array(8).fill(1), 0);
  process.stdout.write('ready\n');
  setInterval(() => undefined, 1 << 30);
} else {
  try {
    await store.open();
    await store.close();
    process.stdout.write(`${JSON.stringify({ ok: true })}\n`);
  } catch (e) {
    const x = e as Error & { code?: string; holderPid?: number };
    process.stdout.write(
      `${JSON.stringify({ ok: false, name: x.name, code: x.code, holderPid: x.holderPid, message: x.message })}\n`,
    );
  }
}
