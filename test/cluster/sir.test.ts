import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrainSystem } from '@ringgrain/core';
import { CpuBackend } from '@ringgrain/cpu-backend';
import { natsCluster, type NatsServerHandle } from '@ringgrain/cluster-nats';
import { Person, Ward } from '../../examples/sir/grains.ts';
import { buildGraph, reference } from '../../examples/sir/model.ts';
import { epidemic, siloCounts, type SiloCounts } from '../../examples/sir/drive.ts';
import { clusterOpts, natsSkip, startServer } from './nats.ts';

/**
 * The SIR example across three silos (cpu backend, one pool thread each, in this process) and a client:
 * the epidemic's K2K (ward → person ticks, person → person infections, person → ward reports) crosses silos
 * through NATS wherever the target key lives elsewhere, and every step's S/I/R counts must equal the
 * JavaScript model exactly. The barrier after setup and after each step is the client's `idle()`, which is
 * the cluster's (core cluster/control.ts), as examples/sir/cluster.ts uses it by default: a barrier that let
 * one cross-silo K2K send run after the next step's asks would change that step's counts. The
 * process-per-silo run with figures is examples/sir/cluster.ts.
 */
const params = {
  n: 2000,
  halfDegree: 4,
  days: 4,
  threshold: Math.floor(0.08 * 4294967295),
  seeds: 10,
  seed: 2024,
  maxSteps: 500,
};
describe.skipIf(natsSkip !== undefined)(
  `cluster SIR across three silos${natsSkip ? ` (skipped: ${natsSkip})` : ''}`,
  () => {
    let server: NatsServerHandle;
    let silos: GrainSystem[] = [];
    let client: GrainSystem;
    const tellErrors: Error[] = [];
    // A loaded 2-core machine can starve heartbeats: a generous deadMs keeps a slow silo from being declared dead.
    const opts = () => natsCluster(clusterOpts(server, 'sir', { deadMs: 20_000 }));

    beforeAll(async () => {
      server = await startServer();
      silos = Array.from({ length: 3 }, () => {
        const s = new GrainSystem({
          backends: { cpu: new CpuBackend({ threads: 1, maxSpinMs: 0.05 }) },
          handleSignals: false,
          logLevel: 'silent',
          cluster: opts(),
        })
          .register(Person, { placement: 'cpu', maxActors: params.n, ringCapacity: 1 << 14 })
          .register(Ward, { placement: 'cpu', maxActors: 1024, ringCapacity: 1 << 12 });
        s.on('tellError', (e) => tellErrors.push(e.error));
        return s;
      });
      client = new GrainSystem({ backends: {}, handleSignals: false, logLevel: 'silent', cluster: opts() });
      await Promise.all([...silos, client].map((s) => s.start()));
      await client.cluster!.waitFor(() => client.cluster!.settled(3), 20_000);
    }, 60_000);
    afterAll(async () => {
      await client?.shutdown();
      await Promise.all(silos.map((s) => s.shutdown()));
      await server?.stop();
    }, 60_000);

    it('every step equals the JS model; K2K crossed silos; nothing lost', async () => {
      const graph = buildGraph(params);
      const expected = reference(params, graph);
      const read = () => Promise.all(silos.map((s) => siloCounts(s, 0)));
      let barriers = 0;
      const quiet = async () => {
        barriers++;
        await client.idle({ timeoutMs: 60_000 });
      };
      let base: SiloCounts[] = [];
      const run = await epidemic(client, params, graph, quiet, async () => void (base = await read()));
      const last = await read();
      expect(barriers).toBe(expected.length + 1);
      expect(expected.length).toBeGreaterThan(10);
      expect(run.got).toEqual(expected);
      const sum = (xs: SiloCounts[], f: (s: SiloCounts) => number) => xs.reduce((a, s) => a + f(s), 0);
      // Cross-silo K2K sends (routed through NATS) and in-silo ones both happened during the epidemic.
      expect(sum(last, (s) => s.tellsOut) - sum(base, (s) => s.tellsOut)).toBeGreaterThan(1000);
      expect(sum(last, (s) => s.k2k) - sum(base, (s) => s.k2k)).toBeGreaterThan(0);
      expect(sum(last, (s) => s.lostTells)).toBe(0);
      expect(sum(last, (s) => s.errors)).toBe(0);
      expect(tellErrors).toEqual([]);
    }, 120_000);
  },
);
