/**
 * The GPU host process of IsolatedCudaBackend: it owns the CUDA context and runs an ordinary CudaBackend
 * whose rings live in a shared mapping the application process also maps. A sticky GPU fault poisons
 * only this process: the application kills it and starts a fresh one (a new context). What it does with each
 * frame is host-loop.ts.
 *   RINGGRAIN_ARENA_FD=<inherited fd> (or RINGGRAIN_ARENA=<path>) RINGGRAIN_ARENA_BYTES=<n>
 *   RINGGRAIN_CUDA_OPTIONS=<json>; started with an IPC channel.
 */
import pino from 'pino';
import { CudaBackend, CudaKernel, type CudaBackendOptions } from '../backend.ts';
import { SharedHostMemory } from './shared-host-memory.ts';
import { Arena } from './arena.ts';
import type { FromHost } from './protocol.ts';
import { openShared, openSharedFd } from './shm.ts';
import { channelSend } from './host-channel.ts';
import { HostLoop } from './host-loop.ts';
import { corruptRoute } from '../fault-injection.ts';

// The parent may be gone: a send then is dropped, never an ERR_IPC_CHANNEL_CLOSED crash.
const send: (m: FromHost) => void = channelSend(process);
const env = (k: string): string => {
  const v = process.env[k];
  if (!v) throw new Error(`gpu-host: ${k} is not set (this process is started by IsolatedCudaBackend)`);
  return v;
};

// The arena's file comes as an inherited descriptor (it has no name left in /dev/shm), or by path.
const arenaBytes = Number(env('RINGGRAIN_ARENA_BYTES'));
const arenaFd = process.env['RINGGRAIN_ARENA_FD'];
const mapping = arenaFd ? openSharedFd(Number(arenaFd), arenaBytes) : openShared(env('RINGGRAIN_ARENA'), arenaBytes);
const options = JSON.parse(process.env['RINGGRAIN_CUDA_OPTIONS'] ?? '{}') as CudaBackendOptions;
const backend = new CudaBackend({ ...options, hostMemory: new SharedHostMemory(mapping, new Arena(mapping.bytes)) });
const logger = pino({ name: 'ringgrain-gpu-host', level: process.env['RINGGRAIN_LOG'] ?? 'warn' }, pino.destination(2));

const loop = new HostLoop({
  backend: {
    async createKernel(plan) {
      const k = await backend.createKernel(plan);
      if (!(k instanceof CudaKernel)) {
        // The application side reads one timer block and one set of rings per kernel (isolated-backend.ts).
        await k.dispose();
        throw new Error(
          `gpu-host: ${plan.grain.name} got ${k.groups.length} lane groups; an isolated GPU host runs a class on ` +
            'one device (give IsolatedCudaBackend one device)',
        );
      }
      const created = {
        // One entry per host lane (each an ingress warp consuming its inbound ring).
        lanes: k.memory.lanes.map((l) => ({
          control: l.control.offset,
          inbound: l.inbound.offset,
          replies: l.replies.map((r) => r.offset),
        })),
        launch: backend.launches[backend.launches.length - 1],
        ...(k.timerHostOffset !== undefined ? { timerHost: k.timerHostOffset } : {}),
      };
      return { kernel: k, created };
    },
    corruptRoute: (grainId) => corruptRoute(backend, grainId),
    dispose: () => backend.dispose(),
  },
  send,
  logger,
  faultInjection: process.env['RINGGRAIN_FAULT_INJECTION'] === '1',
  exit: (code) => process.exit(code),
});

process.on('message', (raw) => loop.onMessage(raw));
// The application going away ends this process: no GPU work outlives it.
// Bounded: a teardown stuck on the driver still ends the process (exit code 1).
process.on('disconnect', () => loop.onDisconnect());
// Health off the hot path: a fault is reported once per kernel.
setInterval(() => loop.checkFaults(), 10).unref();

send({ op: 'ready', pid: process.pid });
