import { receiveMessageOnPort, workerData, type MessagePort } from 'node:worker_threads';
import { loadGrainClasses, type GrainDef } from '@ringgrain/core';
import { Dispatcher, type LoadedGrain } from './dispatcher.ts';
import type { FromWorker, ToWorker, WorkerInit } from './protocol.ts';

/**
 * Worker entry: import the grain modules (the same classes and handler methods the user wrote), then run
 * the dispatch loop synchronously. Control messages arrive on a port polled with receiveMessageOnPort,
 * because the loop never yields to the event loop.
 */
const { init, port } = workerData as { init: WorkerInit; port: MessagePort };

function post(m: FromWorker): void {
  port.postMessage(m);
}

async function findClass(name: string, module: string): Promise<{ grain: GrainDef; new (): object }> {
  // The module may also be a whole program (grain and system in one file): loadGrainClasses keeps its
  // system from starting here and takes the class it registered.
  const [cls] = await loadGrainClasses(module, { names: [name] });
  return cls as unknown as { grain: GrainDef; new (): object };
}

async function main(): Promise<void> {
  const defsById: Array<GrainDef | undefined> = [];
  let self: LoadedGrain | undefined;
  for (const [id, g] of init.grains.entries()) {
    if (!g) {
      defsById.push(undefined);
      continue;
    }
    const cls = await findClass(g.name, g.module);
    defsById.push(cls.grain);
    if (id === init.grainId) {
      const instance = new cls() as Record<string, unknown>;
      const handlers = cls.grain.methods.map((m) => {
        const fn = instance[m.name];
        if (typeof fn !== 'function') throw new Error(`class ${g.name} has no handler method "${m.name}"`);
        return fn as LoadedGrain['handlers'][number];
      });
      self = { def: cls.grain, handlers, instance };
    }
  }
  if (!self) throw new Error(`grain id ${init.grainId} is not in the plan`);
  const d = new Dispatcher({ ...init, self, defsById });
  post({ type: 'ready' });
  d.run(() => {
    for (let m = receiveMessageOnPort(port); m; m = receiveMessageOnPort(port)) {
      const msg = m.message as ToWorker;
      if (msg.type === 'peers') d.setPeers(msg.peers);
      else if (msg.type === 'inspect') post({ type: 'inspect', id: msg.id, value: d.inspect(msg.key) });
    }
  });
  port.close();
}

main().catch((e: unknown) => {
  const err = e as { message?: string; code?: string };
  post({ type: 'fatal', message: err?.message ?? String(e), ...(err?.code ? { code: err.code } : {}) });
  port.close();
});
