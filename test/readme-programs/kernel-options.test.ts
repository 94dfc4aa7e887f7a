/** register's kernel options: bad values are typed errors before anything runs, not failures of every turn. */
import { GrainSystem } from '@ringgrain/core';
import { PlacementError } from '@ringgrain/core/errors';
import { RingError } from '@ringgrain/core/backend';
import { describe, expect, it } from 'vitest';
import { BACKENDS } from './backends.ts';
import { Probe } from './grains.ts';

describe.each(BACKENDS.map((b) => b.name))('%s', (backend) => {
  const make = () =>
    new GrainSystem({
      backends: { [backend]: BACKENDS.find((b) => b.name === backend)!.make() },
      logLevel: 'silent',
      handleSignals: false,
    });

  it.each([0, -1, 1.5, Number.NaN])('maxActors %s is a PlacementError at register', (maxActors) => {
    expect(() => make().register(Probe, { placement: backend, maxActors })).toThrow(PlacementError);
  });

  it.each([{ ringCapacity: 100 }, { ringCapacity: 1 }, { slotSize: 50 }, { slotSize: 16 }])(
    '%j is a RingError at start',
    async (o) => {
      const system = make().register(Probe, { placement: backend, ...o });
      try {
        await expect(system.start()).rejects.toBeInstanceOf(RingError);
      } finally {
        await system.shutdown({ mode: 'reject', timeoutMs: 500 }).catch(() => undefined);
      }
    },
  );
});
