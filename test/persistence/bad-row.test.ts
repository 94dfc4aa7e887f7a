/**
 * A stored row that does not decode (issue 15 "Bad input"), on LMDB: the actor's messages fail with a
 * typed StateLoadError (its cause the store's StateDecodeError), a storageError event reports it, nothing
 * is dropped silently (every message is counted as rejected), the other actors load and run, and the
 * next message to the actor tries the load again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { open } from 'lmdb';
import { GrainSystem, type StorageErrorEvent } from '@ringgrain/core';
import { StateLoadError } from '@ringgrain/core/errors';
import type { Backend } from '@ringgrain/core/types';
import { CHUNK, StateDecodeError, chunkOf, parseChunk, rowOf } from '@ringgrain/core/store';
import { waitUntil } from '@ringgrain/core/internal';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { CudaBackend, IsolatedCudaBackend, probeCuda } from '@ringgrain/cuda-backend';
import { InlineBackend } from '@ringgrain/inline-backend';
import { LmdbStore } from '@ringgrain/lmdb-store';
import { afterAll, describe, expect, it } from 'vitest';
import { CpuHostedIsolated } from '../fixtures/isolated-cpu.ts';
import { Stored } from '../fixtures/stored.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rg-bad-row-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let dirs = 0;

/** Damages `key`'s row with LMDB's own client (version 0 inside its chunk: not a version a store writes). */
async function damage(dir: string, key: number): Promise<void> {
  const env = open({ path: dir, maxDbs: 64, compression: false });
  const db = env.openDB<Buffer, number>({ name: 'Stored', encoding: 'binary', compression: false });
  const c = parseChunk(Buffer.from(db.getBinary(chunkOf(key))!));
  if (typeof c === 'string') throw new Error(c);
  c.dv.setFloat64(c.versionsAt + 8 * rowOf(c, key - chunkOf(key) * CHUNK), 0, true);
  db.putSync(chunkOf(key), Buffer.from(c.buf));
  await env.close();
}

const probe = probeCuda();
/**
 * The CUDA lanes (residency: the kernel parks the messages and rejects them with the failure's id, which the
 * host turns back into the StateLoadError; in this process and in an isolated GPU host) run where a driver and
 * a device are.
 */
const lanes: Array<{ name: string; make: () => Backend; skip?: string }> = [
  { name: 'cpu pool', make: () => new CpuBackend({ threads: 2 }) },
  { name: 'inline', make: () => new InlineBackend() },
  {
    name: 'cuda (residency)',
    make: () => new CudaBackend({ residency: true }),
    ...(probe.ok ? {} : { skip: `skipped: no CUDA driver/device — ${probe.reason}` }),
  },
  // The same kernel in a GPU host process: the failed load's text and id cross its channel (isolated/frames.ts).
  {
    name: 'cuda-isolated (residency)',
    make: () => new IsolatedCudaBackend(),
    ...(probe.ok ? {} : { skip: `skipped: no CUDA driver/device — ${probe.reason}` }),
  },
  // The isolated path without a GPU: the host's kernels on the CPU (fixtures/cpu-gpu-host.ts), the failure's text
  // and id through the same frames.
  {
    name: 'isolated GPU host, kernels on the CPU',
    make: () => new CpuHostedIsolated(),
    ...(process.platform === 'linux' ? {} : { skip: 'skipped: the isolated GPU host needs Linux (/dev/shm, mmap)' }),
  },
];

for (const lane of lanes) {
  describe(`a stored row that does not decode, ${lane.name}`, () => {
    const title =
      "fails the actor's messages with StateLoadError, reports it, drops nothing, and leaves other actors alone";
    it.skipIf(lane.skip !== undefined)(`${title}${lane.skip ? ` (${lane.skip})` : ''}`, async () => {
      const dir = path.join(tmp, String(dirs++));
      const make = () => new GrainSystem({ backends: { x: lane.make() }, logLevel: 'silent', handleSignals: false });
      const store = new LmdbStore({ dataDir: dir });
      const a = make();
      a.register(Stored, { placement: 'x', storage: store });
      await a.start();
      for (const k of [5, 6]) await a.grain(Stored, k).add({ n: k });
      await a.shutdown();
      await store.close();
      await damage(dir, 5);

      const again = new LmdbStore({ dataDir: dir });
      const b = make();
      const storageErrors: StorageErrorEvent[] = [];
      const tellErrors: Error[] = [];
      b.on('storageError', (e) => storageErrors.push(e));
      b.on('tellError', (e) => tellErrors.push(e.error));
      b.register(Stored, { placement: 'x', storage: again });
      await b.start();
      try {
        const ask = b.grain(Stored, 5).add({ n: 1 });
        b.grain(Stored, 5).tell.bump({ n: 1 }); // waits behind the ask for the same load
        const err = await ask.then(
          () => undefined,
          (e: unknown) => e as Error,
        );
        expect(err).toBeInstanceOf(StateLoadError);
        expect((err as StateLoadError).code).toBe('STATE_LOAD');
        expect((err as StateLoadError).keys).toEqual([5]);
        expect((err as StateLoadError).cause).toBeInstanceOf(StateDecodeError);
        expect(err!.message).toContain('grain "Stored", key 5: the stored row does not decode');
        await waitUntil(() => tellErrors.length === 1, 5000);
        // The tell fails with the same typed error: the ask's, when it was parked behind the ask's load, or a
        // second load's, when the first failed before the worker took the tell (a busy 2-core CI machine).
        const second = storageErrors.length === 2;
        expect(tellErrors[0]).toBe(second ? storageErrors[1]!.error : err);
        expect(tellErrors[0]).toBeInstanceOf(StateLoadError);
        expect((tellErrors[0] as StateLoadError).keys).toEqual([5]);
        expect(storageErrors.map((e) => [e.op, e.keys])).toEqual(
          second
            ? [
                ['load', [5]],
                ['load', [5]],
              ]
            : [['load', [5]]],
        );
        expect(storageErrors[0]!.error).toBe(err);

        // The other actor loads its stored state and runs.
        expect(await b.grain(Stored, 6).add({ n: 1 })).toEqual({ count: 2, sum: 7 });
        // The next message to 5 tries the load again (and fails the same way: the row is still bad).
        await expect(b.grain(Stored, 5).get({})).rejects.toBeInstanceOf(StateLoadError);
        await b.idle();
        const m = b.metrics()['Stored']!;
        expect(m.sent).toBe(4);
        expect(m.rejected).toBe(3); // the ask, the tell and the retry: counted, none lost
        expect(m.processed).toBe(1);
        expect(m.storage?.errors).toBe(second ? 3 : 2);
      } finally {
        await b.shutdown();
        await again.close();
      }
    });
  });
}
