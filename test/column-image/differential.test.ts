/**
 * tellMany rows vs the column-image path, on every backend: the same calls sent with
 * `system.tellManyImages` off (a slot per row) and on (one image per lane and chunk where the backend's
 * lanes take images: the CPU backend's, single thread and pool) end in identical states, counters and
 * failures. Keys repeat within and across calls and single tells are sent between them, so a reordered or
 * lost row shows as a Seq violation or a different count. Backends without an image area (inline, CUDA)
 * take rows either way; the CUDA lanes run when a device is present.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { GrainSystem } from '@ringgrain/core';
import type { AnyGrainClass } from '@ringgrain/core/types';
import { backendFixtures, type BackendFixture } from '../conformance/backends.ts';
import { Numbers, Seq } from '../fixtures/grains.ts';

const fixtures = await backendFixtures();
const systems: GrainSystem[] = [];
afterAll(async () => {
  for (const s of systems) await s.shutdown({ mode: 'reject', timeoutMs: 2000 });
});

async function start(fx: BackendFixture, images: boolean): Promise<GrainSystem> {
  const system = new GrainSystem({ backends: { [fx.placement]: fx.make() }, logLevel: 'silent', handleSignals: false });
  system.tellManyImages = images;
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

const ACTORS = 13;
/** Seq rows from `from`: keys repeat (i * 7 % ACTORS), each key's seq per sender counts on from `next`. */
function seqColumns(n: number, next: Uint32Array) {
  const key = new Int32Array(n);
  const sender = new Uint32Array(n);
  const seq = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const a = (i * 7) % ACTORS;
    key[i] = 7000 + a;
    sender[i] = i % 2;
    seq[i] = ++next[a * 2 + (i % 2)]!;
  }
  return { key, sender, seq };
}

/** Whether `system`'s Seq kernel lanes take images (the path under test is really the image path). */
const takesImages = (system: GrainSystem): boolean => system.kernel(Seq).lanes.every((l) => l.images !== undefined);

for (const fx of fixtures) {
  describe.skipIf(fx.skip !== undefined)(`${fx.name}${fx.skip ? ` (skipped: ${fx.skip})` : ''}`, () => {
    it('rows and images end in the same states and counters; FIFO per key holds across tells and calls', async () => {
      const results: unknown[] = [];
      for (const images of [false, true]) {
        const system = await start(fx, images);
        if (images) expect(takesImages(system)).toBe(fx.placement === 'cpu');
        const next = new Uint32Array(ACTORS * 2);
        let sent = 0;
        // Calls of several sizes (below the image threshold, one image, more rows than the buffers hold at
        // once: the rest go as rows behind the images), with single tells of the same senders between them.
        for (const n of [10, 600, 200_000, 3000]) {
          sent += system.tellMany(Seq, 'push', seqColumns(n, next));
          const a = n % ACTORS;
          system.grain(Seq, 7000 + a).tell.push({ sender: 0, seq: ++next[a * 2]! });
          sent++;
        }
        const key = Int32Array.from({ length: 900 }, (_, i) => 8000 + ((i * 5) % ACTORS));
        // Numbers.store: last writer wins, so the final state names the last row of each key; every kind.
        const numCols = {
          key,
          f32: Float32Array.from(key, (_, i) => i / 4),
          f64: Float64Array.from(key, (_, i) => i * 1.5),
          i32: Int32Array.from(key, (_, i) => -i),
          u32: Uint32Array.from(key, (_, i) => i * 3),
          b: Array.from(key, (_, i) => i % 3 === 0),
        };
        sent += system.tellMany(Numbers, 'store', numCols);
        await system.idle();
        const counted = (k: AnyGrainClass) => system.kernel(k).counters();
        expect(counted(Seq).sent + counted(Numbers).sent).toBe(sent);
        const states = [];
        for (let a = 0; a < ACTORS; a++)
          states.push(await system.grain(Seq, 7000 + a).stats({}), await system.grain(Numbers, 8000 + a).load({}));
        for (let a = 0; a < ACTORS; a++) expect((states[2 * a] as { violations: number }).violations).toBe(0);
        await system.idle(); // the asks above: counted once their lanes publish
        const c = system.kernel(Seq).counters();
        const m = system.metrics();
        expect(c.received).toBe(c.sent);
        expect(c.processed).toBe(c.received);
        // metrics() balances: every row a sent and a processed message.
        expect(m['Seq']!.processed + m['Seq']!.rejected).toBe(m['Seq']!.sent);
        results.push({
          states,
          seq: {
            sent: c.sent,
            received: c.received,
            processed: c.processed,
            rejected: c.rejected,
            handlerErrors: c.handlerErrors,
          },
          numbers: counted(Numbers).processed,
        });
        await stop(system);
      }
      expect(results[1]).toEqual(results[0]);
    });

    it('a throwing row fails the same rows on both paths (one tellError per failing row, the rest run)', async () => {
      const key = Int32Array.from({ length: 400 }, (_, i) => 9000 + (i % 3));
      const code = Int32Array.from(key, (_, i) => (i === 17 || i === 31 || i === 399 ? 1 : 0));
      const out: unknown[] = [];
      for (const images of [false, true]) {
        const system = await start(fx, images);
        const errors: string[] = [];
        system.on('tellError', (e) => errors.push(`${e.grain}.${e.method}: ${e.error.message.split('\n')[0]}`));
        expect(system.tellMany(Numbers, 'failTell', { key, code })).toBe(400);
        await system.idle();
        expect(errors.every((e) => e.startsWith('Numbers.failTell: ') && e.includes('tell refused'))).toBe(true);
        const c = system.kernel(Numbers).counters();
        out.push({
          errors: errors.length,
          handlerErrors: c.handlerErrors,
          processed: c.processed,
          received: c.received,
          sent: c.sent,
        });
        await stop(system);
      }
      expect(out[0]).toEqual({ errors: 3, handlerErrors: 3, processed: 400, received: 400, sent: 400 });
      expect(out[1]).toEqual(out[0]);
    });
  });
}
