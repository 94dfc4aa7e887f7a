/**
 * tellMany rows vs the column-image path: the same columns sent as one call (rows) and as images of a
 * few rows each (packColumnImage → readColumnImage → the rows each image holds, in image order) end in
 * identical states and counters, on every backend. Keys repeat across and within images, so a reordered
 * or lost row shows as a Seq violation or a different count; a throwing row fails the same rows.
 * Until a backend consumes images itself (the CUDA bulk job), the image path here is the host reader's
 * expansion; the CUDA lanes run when a device is present.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { COLUMN_IMAGE_CHUNK_ROWS, GrainSystem, columnImageFields, packColumnImage, readColumnImage, type AnyGrainClass, type GrainDef } from '@ringgrain/core';
import { backendFixtures, type BackendFixture } from '../conformance/backends.ts';
import { Numbers, Seq } from '../fixtures/grains.ts';

const fixtures = await backendFixtures();
const systems: GrainSystem[] = [];
afterAll(async () => {
  for (const s of systems) await s.shutdown({ mode: 'reject', timeoutMs: 2000 });
});

async function start(fx: BackendFixture): Promise<GrainSystem> {
  const system = new GrainSystem({ backends: { [fx.placement]: fx.make() }, logLevel: 'silent', handleSignals: false });
  for (const cls of [Seq, Numbers] as AnyGrainClass[]) system.register(cls, { placement: fx.placement });
  await system.start();
  systems.push(system);
  return system;
}

/** Each path's system is shut down before the next starts: a CUDA process loads no module while ring kernels run. */
async function stop(system: GrainSystem): Promise<void> {
  systems.splice(systems.indexOf(system), 1);
  await system.shutdown();
}

/** Sends `cols` as images of `chunk` rows: each image read back and its rows sent in order. */
function sendAsImages(system: GrainSystem, cls: AnyGrainClass, method: string, cols: Record<string, ArrayLike<unknown>>, chunk: number): number {
  const def = cls.grain as GrainDef;
  const m = def.methodByName.get(method)!;
  const fields = columnImageFields(m, 0)!;
  const key = cols['key']!;
  let sent = 0;
  for (let from = 0; from < key.length; from += chunk) {
    const img = readColumnImage(packColumnImage(fields, { grainId: 0, method: def.methods.indexOf(m), key, cols, from, to: Math.min(key.length, from + chunk) }));
    expect(img.firstRow).toBe(from);
    const rows: Record<string, ArrayLike<unknown>> = { key: img.keys };
    for (const [i, f] of fields.entries()) rows[f.name] = f.kind === 'bool' ? Array.from(img.columns[i]!.values, (v) => v !== 0) : img.columns[i]!.values;
    sent += (system.tellMany as (c: AnyGrainClass, m: string, cols: Record<string, ArrayLike<unknown>>) => number)(cls, method, rows);
  }
  return sent;
}

const ACTORS = 13;
const N = 600;
/** Seq rows: keys repeat (i * 7 % ACTORS), each key's seq counts up from 1, two senders interleaved. */
function seqColumns() {
  const key = new Int32Array(N);
  const sender = new Uint32Array(N);
  const seq = new Uint32Array(N);
  const next = new Uint32Array(ACTORS * 2);
  for (let i = 0; i < N; i++) {
    const a = (i * 7) % ACTORS;
    key[i] = 7000 + a;
    sender[i] = i % 2;
    seq[i] = ++next[a * 2 + (i % 2)]!;
  }
  return { key, sender, seq };
}

for (const fx of fixtures) {
  describe.skipIf(fx.skip !== undefined)(`${fx.name}${fx.skip ? ` (skipped: ${fx.skip})` : ''}`, () => {
    it('rows and images (chunks of 1, 37 and the default) end in the same states and counters; FIFO per key holds', async () => {
      const seqCols = seqColumns();
      // Numbers.store: last writer wins, so the final state names the last row of each key.
      const key = Int32Array.from({ length: N }, (_, i) => 8000 + ((i * 5) % ACTORS));
      const numCols = { key, f32: Float32Array.from(key, (_, i) => i / 4), f64: Float64Array.from(key, (_, i) => i * 1.5), i32: Int32Array.from(key, (_, i) => -i), u32: Uint32Array.from(key, (_, i) => i * 3), b: Array.from(key, (_, i) => i % 3 === 0) };
      const results: unknown[] = [];
      for (const chunk of [0, 1, 37, COLUMN_IMAGE_CHUNK_ROWS]) {
        const system = await start(fx);
        const sent0 = system.kernel(Seq).counters().sent;
        const sent = chunk === 0 ? system.tellMany(Seq, 'push', seqCols) + system.tellMany(Numbers, 'store', numCols) : sendAsImages(system, Seq, 'push', seqCols, chunk) + sendAsImages(system, Numbers, 'store', numCols, chunk);
        expect(sent).toBe(2 * N);
        await system.idle();
        const states = [];
        for (let a = 0; a < ACTORS; a++) states.push(await system.grain(Seq, 7000 + a).stats({}), await system.grain(Numbers, 8000 + a).load({}));
        const c = system.kernel(Seq).counters();
        results.push({ states, seqSent: c.sent - sent0 });
        for (let a = 0; a < ACTORS; a++) expect((states[2 * a] as { violations: number }).violations).toBe(0);
        await stop(system);
      }
      // Identical to the rows path, whatever the chunk.
      for (const r of results.slice(1)) expect(r).toEqual(results[0]);
    });

    it('a throwing row fails the same rows on both paths (one tellError per failing row, the rest run)', async () => {
      const key = Int32Array.from({ length: 40 }, (_, i) => 9000 + (i % 3));
      const code = Int32Array.from(key, (_, i) => (i === 17 || i === 31 ? 1 : 0));
      const failed: number[] = [];
      for (const chunk of [0, 16]) {
        const system = await start(fx);
        const errors: string[] = [];
        system.on('tellError', (e) => errors.push(`${e.grain}.${e.method}: ${e.error.message.split('\n')[0]}`));
        if (chunk === 0) system.tellMany(Numbers, 'failTell', { key, code });
        else sendAsImages(system, Numbers, 'failTell', { key, code }, chunk);
        await system.idle();
        failed.push(errors.length);
        expect(errors.every((e) => e.startsWith('Numbers.failTell: ') && e.includes('tell refused'))).toBe(true);
        await stop(system);
      }
      expect(failed).toEqual([2, 2]);
    });
  });
}
