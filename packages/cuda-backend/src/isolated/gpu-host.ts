/**
 * The GPU host process of IsolatedCudaBackend: it owns the CUDA context and runs an ordinary CudaBackend
 * whose rings live in a shared mapping the application process also maps. A sticky GPU fault poisons
 * only this process: the application kills it and starts a fresh one (a new context).
 *   RINGGRAIN_ARENA_FD=<inherited fd> (or RINGGRAIN_ARENA=<path>) RINGGRAIN_ARENA_BYTES=<n> RINGGRAIN_CUDA_OPTIONS=<json>; started with an IPC channel.
 */
import { loadGrainClasses, type GrainDef, type KernelPlan } from '@ringgrain/core/backend';
import pino from 'pino';
import { CudaBackend, CudaKernel, type CudaBackendOptions } from '../backend.ts';
import { SharedHostMemory } from './shared-host-memory.ts';
import { Arena } from './arena.ts';
import { toWire, type CreatedKernel, type FromHost, type GrainRef, type ToHost } from './protocol.ts';
import { openShared, openSharedFd } from './shm.ts';
import { channelSend, exitAfter } from './host-channel.ts';
import { corruptRoute } from '../fault-injection.ts';

// The parent may be gone: a send then is dropped, never an ERR_IPC_CHANNEL_CLOSED crash.
const send: (m: FromHost) => void = channelSend(process);
const env = (k: string): string => {
  const v = process.env[k];
  if (!v) throw new Error(`gpu-host: ${k} is not set (this process is started by IsolatedCudaBackend)`);
  return v;
};

// The arena's file comes as an inherited descriptor (it has no name left in /dev/shm), or by path.
const mapping = process.env['RINGGRAIN_ARENA_FD'] ? openSharedFd(Number(process.env['RINGGRAIN_ARENA_FD']), Number(env('RINGGRAIN_ARENA_BYTES'))) : openShared(env('RINGGRAIN_ARENA'), Number(env('RINGGRAIN_ARENA_BYTES')));
const options = JSON.parse(process.env['RINGGRAIN_CUDA_OPTIONS'] ?? '{}') as CudaBackendOptions;
const backend = new CudaBackend({ ...options, hostMemory: new SharedHostMemory(mapping, new Arena(mapping.bytes)) });
const logger = pino({ name: 'ringgrain-gpu-host', level: process.env['RINGGRAIN_LOG'] ?? 'warn' }, pino.destination(2));
type Kernel = Awaited<ReturnType<CudaBackend['createKernel']>>;
const kernels = new Map<number, Kernel>();
const reported = new Set<number>();

const defs = new Map<string, GrainDef>();
async function resolve(ref: GrainRef): Promise<GrainDef> {
  const key = `${ref.module}#${ref.name}`;
  const hit = defs.get(key);
  if (hit) return hit;
  // The module may also be a whole program (grain and system in one file): loadGrainClasses keeps its
  // system from starting here and takes the class it registered.
  const [cls] = await loadGrainClasses(ref.module, { names: [ref.name] });
  const def = cls?.grain as GrainDef | undefined;
  if (def?.name === ref.name) {
    defs.set(key, def);
    return def;
  }
  throw new Error(`gpu-host: no exported grain class "${ref.name}" in ${ref.module}`);
}

async function handle(m: ToHost): Promise<unknown> {
  switch (m.op) {
    case 'create': {
      const grains = await Promise.all(m.plan.grains.map((g) => (g ? resolve(g) : Promise.resolve(undefined))));
      const plan: KernelPlan = { grainId: m.plan.grainId, grain: await resolve(m.plan.grain), grains, options: m.plan.options, logger, ...(m.plan.timers ? { timers: m.plan.timers } : {}) };
      const k = await backend.createKernel(plan);
      if (!(k instanceof CudaKernel)) {
        // The application side reads one timer block and one set of rings per kernel (isolated-backend.ts).
        await k.dispose();
        throw new Error(`gpu-host: ${plan.grain.name} got ${k.groups.length} lane groups; an isolated GPU host runs a class on one device (give IsolatedCudaBackend one device)`);
      }
      kernels.set(m.id, k);
      const created: CreatedKernel = {
        // One entry per host lane (each an ingress warp consuming its inbound ring).
        lanes: k.memory.lanes.map((l) => ({ control: l.control.offset, inbound: l.inbound.offset, replies: l.replies.map((r) => r.offset) })),
        launch: backend.launches[backend.launches.length - 1],
        ...(k.timerHostOffset !== undefined ? { timerHost: k.timerHostOffset } : {}),
      };
      return created;
    }
    case 'start':
      return kernels.get(m.id)?.start();
    case 'dispose': {
      const k = kernels.get(m.id);
      kernels.delete(m.id);
      return k?.dispose();
    }
    case 'inspect':
      return kernels.get(m.id)?.inspect?.(m.key);
    case 'corruptRoute':
      // Fault injection, only in a host started for it (IsolatedCudaBackend({ faultInjection: true })).
      if (process.env['RINGGRAIN_FAULT_INJECTION'] !== '1') {
        throw new Error('fault injection is off in this GPU host: construct IsolatedCudaBackend({ faultInjection: true }) in the test that injects faults');
      }
      return corruptRoute(backend, m.grainId);
    case 'shutdown':
      await backend.dispose();
      setImmediate(() => process.exit(0));
      return undefined;
  }
}

process.on('message', (raw) => {
  const m = raw as ToHost;
  handle(m).then(
    (value) => send({ op: 'reply', req: m.req, ok: true, value }),
    (e: unknown) => send({ op: 'reply', req: m.req, ok: false, error: toWire(e) }),
  );
});
// The application going away ends this process: no GPU work outlives it.
// Bounded: a teardown stuck on the driver still ends the process (exit code 1).
process.on('disconnect', () => {
  exitAfter(() => backend.dispose(), (code) => process.exit(code));
});

// Health off the hot path, as core's sweep does in-process: a fault is reported once per kernel.
setInterval(() => {
  for (const [id, k] of kernels) {
    if (reported.has(id)) continue;
    const fault = k.health().fault;
    if (fault) {
      reported.add(id);
      send({ op: 'fault', id, error: toWire(fault) });
    }
  }
}, 10).unref();

send({ op: 'ready', pid: process.pid });
