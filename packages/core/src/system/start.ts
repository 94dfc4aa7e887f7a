import type { Backend } from '../backend.ts';
import { BackendUnavailableError } from '../errors.ts';
import { RingKernel, type KernelHost } from '../kernel.ts';
import { StorageUnsupportedError } from '../store/errors.ts';
import { TimersUnsupportedError } from '../timers/errors.ts';
import type { ClusterRouter } from '../cluster/router.ts';
import { joinCluster } from '../cluster/attach.ts';
import type { FencedWrites } from '../cluster/handoff.ts';
import { allocateOwnership } from '../cluster/ownership.ts';
import type { Cluster } from '../cluster/types.ts';
import type { Persistence } from './persistence.ts';
import type { Sender } from './send.ts';
import type { Registration, Route, SystemState } from './state.ts';
import type { ClassMetrics } from './events.ts';

/** Placement names a backend the system was not given: the first fix is to pass one, not a driver. */
const BACKEND_CLASSES: Record<string, readonly [string, string]> = {
  cuda: ['CudaBackend', '@ringgrain/cuda-backend'],
  cpu: ['CpuBackend', '@ringgrain/cpu-backend'],
  inline: ['InlineBackend', '@ringgrain/inline-backend'],
};
function missingBackendHint(name: string): string {
  const c = BACKEND_CLASSES[name];
  const pass = c
    ? `new GrainSystem({ backends: { ${name}: new ${c[0]}(), ... } }) (${c[0]} from ${c[1]})`
    : `new GrainSystem({ backends: { ${name}: <a backend>, ... } })`;
  return `pass a "${name}" backend: ${pass}, or register the class with placement "auto"`;
}

/**
 * Each class's backend: its placement, or for 'auto' the first in autoOrder whose probe passes (each
 * backend probed once). A class no backend here can run throws BackendUnavailableError, or in a cluster
 * is left out (hosted by the silos that can run it) and dropped from `state.regs`.
 */
export async function resolvePlacements(state: SystemState): Promise<Map<Registration, Backend>> {
  const { backends, autoOrder, logger, cluster } = state.config;
  const probes = new Map<string, Awaited<ReturnType<Backend['probe']>>>();
  const probe = async (name: string) => {
    const b = Object.hasOwn(backends, name) ? backends[name] : undefined;
    if (!b) return { ok: false, reason: `no "${name}" backend was given to the system` };
    if (!probes.has(name)) probes.set(name, await b.probe());
    return probes.get(name)!;
  };
  const resolved = new Map<Registration, Backend>();
  for (const reg of state.regs) {
    let name: string;
    if (reg.placement === 'auto') {
      const passed: string[] = [];
      let chosen: string | undefined;
      for (const n of autoOrder) {
        const p = await probe(n);
        if (p.ok) {
          chosen = n;
          break;
        }
        passed.push(`${n}: ${p.reason ?? 'probe failed'}`);
      }
      if (chosen === undefined) {
        const error = new BackendUnavailableError(
          'auto',
          `no backend can run here (${passed.join('; ') || 'none was given'})`,
        );
        if (!cluster) throw error;
        logger.warn(
          { grain: reg.def.name },
          `cluster: ${reg.def.name} is not hosted here (${error.message.split('\n')[0]}); its keys go to ` +
            'silos that host it',
        );
        continue;
      }
      name = chosen;
      const dev = (await probe(name)).device;
      logger.info(
        { grain: reg.def.name, placement: name },
        `placement auto: ${reg.def.name} ` +
          `on ${name}${dev ? ` (${dev})` : ''}${passed.length ? `; passed over ${passed.join('; ')}` : ''}`,
      );
    } else name = reg.placement;
    const p = await probe(name);
    if (!p.ok) {
      const error = new BackendUnavailableError(
        name,
        p.reason ?? 'probe failed',
        Object.hasOwn(backends, name) ? undefined : missingBackendHint(name),
      );
      // In a cluster a class this silo cannot run is hosted by the silos that can (a cuda class on GPU silos).
      if (!cluster) throw error;
      logger.warn(
        { grain: reg.def.name, placement: name },
        `cluster: ${reg.def.name} is not hosted here (${error.message.split('\n')[0]}); its keys go to ` +
          'silos that host it',
      );
      continue;
    }
    resolved.set(reg, backends[name]!);
  }
  if (resolved.size < state.regs.length)
    state.regs.splice(0, state.regs.length, ...state.regs.filter((r) => resolved.has(r)));
  return resolved;
}

/**
 * One RingKernel per registered class on its resolved backend (not launched). `ownership`: in a cluster,
 * each class's partition ownership by class name, shared with the kernels of its backend.
 */
export function createKernels(
  state: SystemState,
  resolved: Map<Registration, Backend>,
  host: KernelHost,
  persistence: Persistence,
  sender: Sender,
  ownership: Map<string, SharedArrayBuffer> | undefined,
): void {
  const { logger, timerClock } = state.config;
  const regs = state.regs;
  for (const [i, reg] of regs.entries()) {
    const backend = resolved.get(reg)!;
    const grains = regs.map((r) => (resolved.get(r) === backend ? r.def : undefined));
    const owned = ownership && {
      ownership: regs.map((r) => (resolved.get(r) === backend ? ownership.get(r.def.name) : undefined)),
      remoteSend: sender.remoteSend,
    };
    const plan = persistence.persistencePlan(reg);
    const kernel = new RingKernel({
      grainId: i,
      def: reg.def,
      backend,
      options: reg.options,
      logger,
      host,
      makeKernel: async () => {
        const timers = reg.def.timers.length ? { timers: { clock: timerClock } } : {};
        const k = await backend.createKernel({
          grainId: i,
          grain: reg.def,
          cls: reg.cls,
          grains,
          options: reg.options,
          logger,
          ...(plan ? { persistence: plan } : {}),
          ...timers,
          ...owned,
        });
        if (reg.def.timers.length && !(k.timerStats && k.publishTime && k.timersCaughtUp)) {
          await k.dispose();
          throw new TimersUnsupportedError(reg.def.name, backend.name);
        }
        if (plan && !(k.readDirty && k.writeStates && k.deactivateIdle)) {
          await k.dispose();
          throw new StorageUnsupportedError(reg.storage.storage?.kind ?? 'idleMs', reg.def.name, backend.name);
        }
        return k;
      },
    });
    kernel.on('transition', (e) => state.events.emit('transition', e));
    kernel.on('fault', (e) => state.events.emit('fault', e));
    reg.kernel = kernel;
  }
}

/** Every kernel's memory first, then the launches (RingKernel.prepare says why), then the activations. */
export async function launchKernels(regs: readonly Registration[]): Promise<void> {
  try {
    for (const reg of regs) await reg.kernel!.prepare();
  } catch (e) {
    for (const reg of regs) await reg.kernel!.unprepare();
    throw e;
  }
  try {
    for (const reg of regs) await reg.kernel!.launch();
  } finally {
    for (const reg of regs) await reg.kernel!.unprepare();
  }
  for (const reg of regs) await reg.kernel!.activate();
}

/**
 * Joins the cluster: the router reaches this silo's classes through the sender and hands partitions off through
 * persistence.
 */
export async function joinSystemCluster(
  state: SystemState,
  cluster: Cluster,
  resolved: Map<Registration, Backend>,
  sender: Sender,
  persistence: Persistence,
  ownership: Map<string, SharedArrayBuffer> | undefined,
  local: {
    idle(o: { timeoutMs: number }): Promise<void>;
    metrics(): Record<string, ClassMetrics>;
    advanceTimers(o: { timeoutMs: number }): Promise<number>;
  },
): Promise<ClusterRouter<Route>> {
  const { logger, askTimeoutMs } = state.config;
  const regs = state.regs;
  for (const reg of regs) {
    const k = reg.kernel?.backendKernel;
    if (k && !k.checksOwnership)
      logger.warn(
        { grain: reg.def.name, backend: resolved.get(reg)!.name },
        `cluster: ${reg.def.name} runs on backend "${resolved.get(reg)!.name}", whose kernels do not ` +
          'check partition ownership on K2K sends: a ctx.send/forward from it to a key another silo owns ' +
          'activates that key here too (docs/cluster.md)',
      );
  }
  const grains = Object.fromEntries(regs.map((r) => [r.def.name, resolved.get(r)!.name]));
  const host = {
    logger,
    askTimeoutMs,
    hostedRoute: (grain: string, method: string) => {
      const reg = regs.find((r) => r.def.name === grain);
      const m = reg?.def.methodByName.get(method);
      return m ? { route: sender.route(reg!.def, method), method: m } : undefined;
    },
    sendEncoded: (route: Route, key: number | string, bytes: Uint8Array, ask: boolean) =>
      sender.sendLocal(route, key, bytes, ask, undefined, true),
    handOff: (grain: string) => persistence.handOff(grain),
    ownership: (grain: string) => ownership?.get(grain),
    fenced: (grain: string) => fencedWrites(regs.find((r) => r.def.name === grain)),
    served: (grain: string, partitions: number, serves: (p: number) => boolean) =>
      regs.find((r) => r.def.name === grain)?.reminders?.serve(partitions, serves),
    localIdle: local.idle,
    localMetrics: local.metrics,
    localAdvanceTimers: local.advanceTimers,
  };
  const router = await joinCluster(cluster, host, grains, logger);
  // As in one process, start resolves with the silo's reminders loaded: its partitions claimed and served (bounded).
  const self = router.self;
  const loaded = () =>
    regs.every((r) => {
      const t = router.conn.table(r.def.name);
      return !r.reminders || (t !== undefined && r.reminders.servesAll(t.owners.length, (p) => t.owners[p] === self));
    });
  try {
    await router.waitFor(loaded, 10_000);
  } catch {
    const why = "cluster: this silo's partitions were not claimed within 10 s; their reminders arm when they are";
    logger.warn({ silo: self }, why);
  }
  return router;
}

const claimsWithReminders = new WeakMap<Registration, FencedWrites>();

/**
 * A class's fenced writes as the router claims partitions through them: with reminders, a claim resolves
 * once the claimed partitions' reminder rows are read too (after the claim committed), so they are armed
 * when the partitions are served, before their held messages run (reminders/service.ts).
 */
function fencedWrites(reg: Registration | undefined): FencedWrites | undefined {
  const wb = reg?.writeBehind;
  const svc = reg?.reminders;
  if (!wb || !svc) return wb;
  let f = claimsWithReminders.get(reg!);
  if (!f) {
    f = {
      get canFence() {
        return wb.canFence;
      },
      get fence() {
        return wb.fence;
      },
      set fence(v) {
        wb.fence = v;
      },
      claim(partitions, epochs) {
        const n = wb.fence?.partitions;
        const parts = Array.from(partitions);
        return wb.claim(parts, epochs)?.then(async (got) => {
          if (n !== undefined) await svc.stage(parts, n);
          return got;
        });
      },
    };
    claimsWithReminders.set(reg!, f);
  }
  return f;
}

/** In a cluster, each class's partition ownership shared with the kernels (K2K to keys not owned here is refused). */
export function allocateOwnerships(regs: readonly Registration[]): Map<string, SharedArrayBuffer> {
  return new Map(regs.map((r) => [r.def.name, allocateOwnership()]));
}
