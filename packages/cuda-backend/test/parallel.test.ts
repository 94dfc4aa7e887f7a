/**
 * Warp cooperation on the GPU: element-parallel loops and bulk copies (numeric arrays decoded, encoded,
 * copied into the reply and sent to the host by the warp's 32 lanes) give exactly what the JS handler
 * gives, including at every odd length and alignment, and fail as one lane would. Skipped (with the reason)
 * without a CUDA driver; on the GPU every element is checked against a JS reference.
 */
import { GrainSystem, HandlerError } from '@ringgrain/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../cpu-backend/src/index.ts';
import { CudaBackend, probeCuda } from '../src/index.ts';
import { N, Par } from '../../codegen/test/fixtures/parallel.ts';

const probe = probeCuda();
/** The same cases on the CPU backend check the expectations themselves (the JS handler is the reference). */
const LANES = [
  { name: 'cpu (the JS handler: checks the expectations)', run: describe, gpu: false },
  {
    name: probe.ok
      ? `cuda on the GPU (${probe.device.name})`
      : `cuda (skipped: no CUDA driver/device — ${probe.reason})`,
    run: probe.ok ? describe : describe.skip,
    gpu: true,
  },
] as const;

function rand(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32) * 2 - 1;
}

for (const L of LANES)
  L.run(`element-parallel loops and warp copies: ${L.name}`, () => {
    let system: GrainSystem;
    beforeAll(async () => {
      const backends = L.gpu ? { cuda: new CudaBackend({ partitions: 2 }) } : { cpu: new CpuBackend() };
      system = new GrainSystem({ backends, logLevel: 'warn', handleSignals: false, askTimeoutMs: 20_000 });
      system.register(Par, {
        placement: L.gpu ? 'cuda' : 'cpu',
        maxActors: 64,
        slotSize: 65_536,
        ringCapacity: 64,
        replyCapacity: 64,
      });
      await system.start();
    }, 120_000);
    afterAll(async () => {
      await system?.shutdown({ mode: 'reject', timeoutMs: 5000 });
    });

    it('scale: f64 maps of every length 0..300 and a few large ones, each element exact', async () => {
      const r = rand(1);
      const lengths = [...Array.from({ length: 301 }, (_, i) => i), 1023, 1024, 1025, 4095, N];
      for (const n of lengths) {
        const xs = Float64Array.from({ length: n }, () => r() * 1e6);
        const k = r() * 3;
        const got = (await system.grain(Par, n % 7).scale({ xs, k })).ys;
        expect(got.length).toBe(n);
        for (let i = 0; i < n; i++)
          if (got[i] !== xs[i]! * k) throw new Error(`scale n=${n}: element ${i} is ${got[i]}, expected ${xs[i]! * k}`);
      }
    });

    it('blend: f32 in, a captured local, a branch per element; then state counted once per turn', async () => {
      const r = rand(2);
      for (const n of [1, 63, 64, 65, 777, N]) {
        const a = Float32Array.from({ length: n }, () => r() * 100);
        const b = Float32Array.from({ length: n }, () => r() * 100);
        const w = r();
        const got = await system.grain(Par, 100).blend({ a, b, w });
        const want = new Float32Array(n);
        for (let i = 0; i < n; i++) {
          let y = a[i]! * w + b[i]! * (1 - w);
          if (y < 0) y = -y;
          want[i] = y;
        }
        expect(got.n).toBe(n);
        expect(Array.from(got.out)).toEqual(Array.from(want));
      }
      expect((await system.grain(Par, 100).peek({ i: 0 })).calls).toBe(6);
    });

    it(
      'census: integer sums, min and max reduced on the lanes equal JS left-to-right, at every length near the ' +
        'thresholds',
      async () => {
        const r = rand(3);
        for (const n of [0, 1, 63, 64, 65, 127, 128, 129, 1000, N]) {
          const xs = Int32Array.from({ length: n }, () => Math.round(r() * 2 ** 31));
          let pos = 0;
          let sum = 0;
          let lo = Infinity;
          let hi = -Infinity;
          for (const x of xs) {
            if (x > 0) pos++;
            sum += x;
            lo = Math.min(lo, x);
            hi = Math.max(x, hi);
          }
          expect(await system.grain(Par, 400).census({ xs })).toEqual({ pos, sum, lo, hi });
        }
      },
    );

    it.skipIf(!L.gpu)(
      'blend with b shorter than a (GPU: INDEX_RANGE, where JS reads undefined): the lengths check keeps it ' +
        'sequential, which fails as before',
      async () => {
        const a = new Float32Array(200).fill(1);
        const b = new Float32Array(150).fill(2);
        await expect(system.grain(Par, 101).blend({ a, b, w: 0.5 })).rejects.toThrow(/INDEX_RANGE/);
      },
    );

    it('bump: a state map across lanes, the same as the JS handler over repeated turns', async () => {
      const acc = new Float64Array(1024);
      const ref = system.grain(Par, 200);
      for (const [n, v] of [
        [1024, 0.5],
        [100, 3],
        [1000, -1.25],
        [64, 7],
      ] as const) {
        for (let i = 0; i < n; i++) acc[i] = acc[i]! + v * i;
        const got = await ref.bump({ n, v });
        expect(got).toEqual({ first: acc[0], last: acc[1023] });
      }
      for (const i of [0, 1, 63, 64, 500, 999, 1023]) expect((await ref.peek({ i })).v).toBe(acc[i]);
    });

    it(
      'gather: every element; on the GPU an index out of range fails the turn (INDEX_RANGE) and leaves state ' +
        'untouched',
      async () => {
        const ref = system.grain(Par, 300);
        await ref.bump({ n: 1024, v: 1 });
        const n = 3000;
        const idx = Int32Array.from({ length: n }, (_, i) => i % 1024);
        const xs = Float64Array.from({ length: n }, (_, i) => i * 0.25);
        const ok = await ref.gather({ idx, xs });
        for (let i = 0; i < n; i++) expect(ok.ys[i]).toBe(xs[i]! + (i % 1024));
        if (!L.gpu) return; // JS reads undefined out of range: NaN, not an error
        idx[2500] = 5000; // out of the state array's 1024 elements: the GPU's INDEX_RANGE
        idx[17] = -1;
        await expect(ref.gather({ idx, xs })).rejects.toBeInstanceOf(HandlerError);
        await expect(ref.gather({ idx, xs })).rejects.toThrow(/INDEX_RANGE/);
        expect((await ref.peek({ i: 1023 })).v).toBe(1023);
      },
    );
  });
