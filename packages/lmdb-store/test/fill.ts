/**
 * Child process of full.test.ts, run under a file-size limit: writes 100 rows, then a batch too large for
 * the limit, and prints what each write did as one JSON line.
 */
import { LmdbStore } from '../src/index.ts';

const dir = process.argv[2]!;
const store = new LmdbStore({ dataDir: dir });
await store.open();
const t = await store.table({ name: 'Account', keyKind: 'int', stateSize: 32 });
const keys = (n: number, from: number) => Float64Array.from({ length: n }, (_, i) => from + i);
await t.putMany({
  keys: keys(100, 0),
  expected: new Float64Array(100),
  states: { bytes: new Uint8Array(3200).fill(1), stride: 32 },
});
let error: Record<string, unknown> | null = null;
try {
  await t.putMany({
    keys: keys(200_000, 1000),
    expected: new Float64Array(200_000),
    states: { bytes: new Uint8Array(6_400_000).fill(2), stride: 32 },
  });
} catch (e) {
  const x = e as Error & { code?: string; store?: string; cause?: unknown };
  error = {
    name: x.name,
    code: x.code,
    store: x.store,
    message: x.message,
    cause: String((x.cause as Error)?.message ?? x.cause),
  };
}
const countAfter = await t.count();
await store.close();
console.log(JSON.stringify({ error, countAfter }));
