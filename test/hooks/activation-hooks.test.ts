/**
 * onActivate on every backend: it runs once per activation, as a turn of the actor before the message
 * that activated it, and a hook that throws is a tellError (HandlerError under 'onActivate') while that
 * message still runs. Hooks run for classes with persistence: the CPU and inline lanes register the class
 * with `idleMs` (a persistence plan without a store); the CUDA lane, which refuses persistence until its
 * writeStates and deactivateIdle exist, turns the hooks on with its testing option `activationHooks`
 * and runs the translated hook (codegen kernel.ts rg_*_hook, device.ts rg_*_on_activate). Without a GPU
 * the CUDA lane is skipped with the reason in its name.
 */
import { GrainSystem, HandlerError } from '@ringgrain/core';
import type { Backend } from '@ringgrain/core/types';
import { CudaBackend, probeCuda } from '@ringgrain/cuda-backend';
import { afterEach, describe, expect, it } from 'vitest';
import { backendFixtures } from '../conformance/backends.ts';
import { Greeter } from '../fixtures/hooked.ts';

interface Lane {
  readonly name: string;
  readonly placement: string;
  readonly skip: string | undefined;
  make(): Backend;
  /** Registration options that turn the hooks on. */
  readonly hooksOn: { readonly idleMs?: number };
}
const probe = probeCuda();
const lanes: Lane[] = [
  ...(await backendFixtures())
    .filter((f) => f.placement !== 'cuda')
    .map((f) => ({ ...f, make: () => f.make(), hooksOn: { idleMs: 1e12 } })),
  {
    name: 'cuda',
    placement: 'cuda',
    skip: probe.ok ? undefined : `no CUDA driver/device: ${probe.reason}`,
    make: () => new CudaBackend({ hostLanes: 1, activationHooks: true }),
    hooksOn: {},
  },
];
const systems: GrainSystem[] = [];
afterEach(async () => {
  for (const s of systems.splice(0)) await s.shutdown({ mode: 'reject', timeoutMs: 3000 }).catch(() => undefined);
});

for (const f of lanes) {
  const suite = f.skip ? describe.skip : describe;
  suite(`activation hooks on ${f.name}${f.skip ? ` (skipped: ${f.skip})` : ''}`, () => {
    async function started(): Promise<{ sys: GrainSystem; tellErrors: { method: string; error: Error }[] }> {
      const sys = new GrainSystem({
        backends: { [f.placement]: f.make() },
        logLevel: 'warn',
        handleSignals: false,
        handshakeTimeoutMs: 10_000,
        askTimeoutMs: 10_000,
      });
      systems.push(sys);
      const tellErrors: { method: string; error: Error }[] = [];
      sys.on('tellError', (e) => tellErrors.push({ method: e.method, error: e.error }));
      sys.register(Greeter, {
        placement: f.placement,
        maxActors: 1024,
        ringCapacity: 256,
        replyCapacity: 256,
        ...f.hooksOn,
      });
      await sys.start();
      return { sys, tellErrors };
    }

    it('onActivate runs once per actor, before the turn of the message that activated it', async () => {
      const { sys, tellErrors } = await started();
      const keys = [1, 2, 3, 4, 6, 7, 8, 9, 11, 12, 101, 1003];
      for (const k of keys)
        expect({ k, r: await sys.grain(Greeter, k).hello({}) }).toEqual({
          k,
          r: { activations: 1, turns: 1, order: 1 },
        });
      for (const k of keys)
        expect({ k, r: await sys.grain(Greeter, k).hello({}) }).toEqual({
          k,
          r: { activations: 1, turns: 2, order: 1 },
        });
      // A batch of first messages, up to 32 turns at once on a GPU worker warp (lane turns).
      const many = Array.from({ length: 200 }, (_, i) => 2000 + i * 7).filter((k) => k % 5 !== 0);
      const replies = await Promise.all(many.map((k) => sys.grain(Greeter, k).peek({})));
      expect(replies.every((r) => r.activations === 1 && r.turns === 0)).toBe(true);
      expect(tellErrors).toEqual([]);
    });

    it(
      'a throwing onActivate is a tellError under onActivate; ' + 'the message that activated the actor still runs',
      async () => {
        const { sys, tellErrors } = await started();
        expect(await sys.grain(Greeter, 10).hello({})).toEqual({ activations: 0, turns: 1, order: 0 });
        // The hook's error was published before the reply (one reply channel, in order).
        expect(
          tellErrors.map((e) => [
            e.method,
            e.error instanceof HandlerError,
            e.error.message.includes('no activation for multiples of 5'),
          ]),
        ).toEqual([['onActivate', true, true]]);
        expect(await sys.grain(Greeter, 10).hello({})).toEqual({ activations: 0, turns: 2, order: 0 });
        expect(tellErrors.length).toBe(1);
        await sys.idle(); // counters are published between batches: exact once idle
        const m = sys.metrics()['Greeter'];
        expect(m?.handlerErrors).toBe(1);
      },
    );
  });
}
