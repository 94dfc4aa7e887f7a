import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { CONTROL, CONTROL_BLOCK_SIZE, KernelState, RING, RING_HEADER_SIZE, type Backend, type BackendKernel, type KernelPlan, type OverflowStats, type ProbeResult } from '@ringgrain/core';
import { GrainModuleError, WorkerDiedError } from './errors.ts';
import { OVERFLOW_WORD, allocateKernelBuffers, type KernelBuffers, type PeerInfo } from './memory.ts';
import type { FromWorker, ToWorker, WorkerInit } from './protocol.ts';

const WORKER_URL = new URL('./worker-entry.mjs', import.meta.url);

/** Inspector flags are not for workers; loader flags do not reach them on Node 20 (worker-entry.mjs). */
function workerExecArgv(): string[] {
  // Per-process flags (--expose-gc, the inspector) make `new Worker` throw ERR_WORKER_INVALID_EXEC_ARGV.
  return process.execArgv.filter((a) => !a.startsWith('--inspect') && !/^--expose[-_]gc$/.test(a));
}

class CpuKernel implements BackendKernel {
  readonly memory;
  private worker: Worker | undefined;
  private port: MessagePort | undefined;
  private fault: Error | undefined;
  private readonly control: Int32Array;
  private readonly inboundWords: Int32Array;
  private inspects = new Map<number, (v: unknown) => void>();
  private nextInspect = 1;
  private exited: Promise<void> | undefined;

  constructor(
    private readonly backend: CpuBackend,
    private readonly plan: KernelPlan,
    readonly buffers: KernelBuffers,
  ) {
    this.memory = { control: buffers.control, inbound: buffers.inbound, replies: [buffers.reply] };
    this.control = new Int32Array(buffers.sab, buffers.control.offset, CONTROL_BLOCK_SIZE >> 2);
    this.inboundWords = new Int32Array(buffers.sab, buffers.inbound.offset, RING_HEADER_SIZE >> 2);
  }

  peerInfo(): PeerInfo {
    return {
      grainId: this.plan.grainId,
      sab: this.buffers.sab,
      k2kOffset: this.buffers.k2k.offset,
      controlOffset: this.buffers.control.offset,
      inboundOffset: this.buffers.inbound.offset,
      overflowOffset: this.buffers.overflow.offset,
    };
  }

  /** K2K messages other workers hold for this kernel until its ring has room (their queues are heap: unbounded). */
  overflow(): OverflowStats {
    const w = new Int32Array(this.buffers.sab, this.buffers.overflow.offset, 4);
    return { capacity: Number.POSITIVE_INFINITY, inUse: Atomics.load(w, OVERFLOW_WORD.inUse), highWater: Atomics.load(w, OVERFLOW_WORD.highWater), overflowed: Atomics.load(w, OVERFLOW_WORD.overflowed) >>> 0, exhausted: 0 };
  }

  async start(): Promise<void> {
    const { port1, port2 } = new MessageChannel();
    const init: WorkerInit = {
      grainId: this.plan.grainId,
      grains: this.plan.grains.map((g) => (g ? { name: g.name, module: g.module } : null)),
      options: this.plan.options,
      sab: this.buffers.sab,
      controlOffset: this.buffers.control.offset,
      inboundOffset: this.buffers.inbound.offset,
      replyOffset: this.buffers.reply.offset,
      k2kOffset: this.buffers.k2k.offset,
      replySignal: this.backend.replySignalBuffer,
      peers: [...this.backend.peers(), this.peerInfo()],
    };
    const worker = new Worker(WORKER_URL, { workerData: { init, port: port2 }, transferList: [port2], execArgv: workerExecArgv(), name: `ringgrain:${this.plan.grain.name}` });
    this.worker = worker;
    this.port = port1;
    const grain = this.plan.grain;
    const ready = new Promise<void>((resolve, reject) => {
      port1.on('message', (m: FromWorker) => {
        if (m.type === 'ready') resolve();
        else if (m.type === 'inspect') {
          this.inspects.get(m.id)?.(m.value);
          this.inspects.delete(m.id);
        } else if (m.type === 'fatal') {
          const e = new GrainModuleError(grain.name, grain.module, m.message);
          this.fault ??= e;
          reject(e);
        }
      });
      worker.on('error', (e) => {
        this.fault ??= new WorkerDiedError(grain.name, e.message, { cause: e });
        reject(this.fault);
      });
    });
    this.exited = new Promise<void>((resolve) => {
      worker.on('exit', (code) => {
        // Exiting after STOP is the normal end; any other exit is a fault the system must see.
        if (Atomics.load(this.control, CONTROL.observed) !== KernelState.STOPPED) {
          this.fault ??= new WorkerDiedError(grain.name, `exit code ${code}`);
        }
        resolve();
      });
    });
    await ready;
    this.backend.attach(this);
  }

  wake(): void {
    const w = this.inboundWords;
    if (Atomics.load(w, RING.parked) !== 0) {
      Atomics.add(this.control, CONTROL.doorbell, 1);
      Atomics.notify(this.control, CONTROL.doorbell);
    }
  }

  /** Wakes the worker whether or not it said it parked (control-plane changes). */
  kick(): void {
    Atomics.add(this.control, CONTROL.doorbell, 1);
    Atomics.notify(this.control, CONTROL.doorbell);
  }

  send(m: ToWorker): void {
    this.port?.postMessage(m);
    this.kick();
  }

  health() {
    return { fault: this.fault };
  }

  inspect(key: number | string): Promise<unknown> {
    if (!this.port || this.fault) return Promise.resolve(undefined);
    const id = this.nextInspect++;
    return new Promise((resolve) => {
      this.inspects.set(id, resolve);
      this.send({ type: 'inspect', id, key });
    });
  }

  async dispose(): Promise<void> {
    this.backend.detach(this);
    const w = this.worker;
    this.worker = undefined;
    if (w) {
      // After a STOP acknowledgment the worker ends by itself; otherwise (runaway handler) it is killed.
      const done = await Promise.race([this.exited!.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 200))]);
      if (!done) await w.terminate();
    }
    this.port?.close();
    this.port = undefined;
  }
}

/**
 * CPU backend: one worker thread per ring kernel. Rings, control blocks and state tables live in
 * SharedArrayBuffers; no postMessage per message.
 */
export class CpuBackend implements Backend {
  readonly name = 'cpu';
  readonly replySignalBuffer = new SharedArrayBuffer(128);
  readonly replySignal = { words: new Int32Array(this.replySignalBuffer), index: 0 };
  private readonly live = new Set<CpuKernel>();

  async probe(): Promise<ProbeResult> {
    return { ok: true, device: `${process.arch} worker threads` };
  }

  async createKernel(plan: KernelPlan): Promise<BackendKernel> {
    return new CpuKernel(this, plan, allocateKernelBuffers(plan.options));
  }

  peers(): PeerInfo[] {
    return [...this.live].map((k) => k.peerInfo());
  }

  attach(k: CpuKernel): void {
    this.live.add(k);
    this.broadcastPeers();
  }

  detach(k: CpuKernel): void {
    if (this.live.delete(k)) this.broadcastPeers();
  }

  private broadcastPeers(): void {
    const peers = this.peers();
    for (const k of this.live) k.send({ type: 'peers', peers });
  }

  async dispose(): Promise<void> {
    for (const k of [...this.live]) await k.dispose();
  }
}
