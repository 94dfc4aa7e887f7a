/**
 * system.idle() against a scripted backend: the test writes each kernel's published counters itself, so
 * it can show the barrier a picture no real run reproduces on demand — two kernels that each published
 * at a different moment, whose counts balance while messages are still in flight (seen on the H100 under
 * compute-sanitizer racecheck: the SIR example's barrier passed early and the epidemic diverged).
 */
import { describe, expect, it } from 'vitest';
import { Grain, GrainSystem, t } from '@ringgrain/core';
import type { Backend } from '@ringgrain/core/types';
import { CONTROL, CONTROL_BLOCK_SIZE, KernelState, type BackendKernel, type KernelPlan } from '@ringgrain/core/backend';
import { allocateKernelBuffers } from '@ringgrain/cpu-backend/consumer';

class Person extends Grain({ name: 'Person', module: import.meta.url, state: t.struct({ n: t.u32 }), methods: { poke: { request: t.struct({}) } } }) {
  poke(s: { n: number }): void {
    s.n += 1;
  }
}
class Ward extends Grain({ name: 'Ward', module: import.meta.url, state: t.struct({ n: t.u32 }), methods: { poke: { request: t.struct({}) } } }) {
  poke(s: { n: number }): void {
    s.n += 1;
  }
}

/** A kernel that never consumes: it answers the lifecycle handshake, and the test publishes its counters. */
class ScriptedKernel implements BackendKernel {
  readonly memory;
  readonly control: Int32Array;
  constructor(readonly plan: KernelPlan) {
    const b = allocateKernelBuffers(plan.options, 1);
    const l = b.lanes[0]!;
    this.memory = { lanes: [{ control: l.control, inbound: l.inbound, replies: [l.reply] }] };
    this.control = new Int32Array(l.control.buffer, l.control.offset, CONTROL_BLOCK_SIZE >> 2);
  }
  async start(): Promise<void> {
    this.answerHandshake();
  }
  wake(): void {
    this.answerHandshake();
  }
  private answerHandshake(): void {
    const c = this.control;
    const req = Atomics.load(c, CONTROL.requested);
    Atomics.store(
      c,
      CONTROL.observed,
      req === KernelState.STOP ? KernelState.STOPPED : req === KernelState.NONE ? KernelState.IDLE : req,
    );
    Atomics.store(c, CONTROL.ackEpoch, Atomics.load(c, CONTROL.requestEpoch));
  }
  /** Publishes counters (and `queued`), answering the publication request pending now if `answer`. */
  publish(
    counts: Partial<Record<'received' | 'processed' | 'k2kSent' | 'k2kReceived', number>>,
    opts: { answer: boolean; queued?: number },
  ): void {
    const c = this.control;
    for (const [name, v] of Object.entries(counts)) Atomics.store(c, CONTROL[name as 'processed'], v);
    if (opts.answer) {
      Atomics.store(c, CONTROL.queued, opts.queued ?? 0);
      Atomics.store(c, CONTROL.publishEpoch, Atomics.load(c, CONTROL.publishRequest));
    }
  }
  /** Whether the host asked for a publication it has not been given yet. */
  get asked(): boolean {
    return Atomics.load(this.control, CONTROL.publishRequest) !== Atomics.load(this.control, CONTROL.publishEpoch);
  }
  async dispose(): Promise<void> {}
  health() {
    return { fault: undefined };
  }
}

class ScriptedBackend implements Backend {
  readonly name = 'scripted';
  readonly kernels = new Map<string, ScriptedKernel>();
  async probe() {
    return { ok: true };
  }
  async createKernel(plan: KernelPlan): Promise<BackendKernel> {
    const k = new ScriptedKernel(plan);
    this.kernels.set(plan.grain.name, k);
    return k;
  }
  async dispose(): Promise<void> {}
}

/**
 * Turns of the event loop, then two timer phases: a pending idle() polls a few times either way (after its
 * first 20 ms it polls on a 1 ms timer, which setImmediate turns alone may not reach on a quick machine).
 */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
  for (let i = 0; i < 2; i++) await new Promise((r) => setTimeout(r, 3));
}

async function setup() {
  const backend = new ScriptedBackend();
  const system = new GrainSystem({ backends: { scripted: backend }, logLevel: 'silent' });
  system.register(Person, { placement: 'scripted' });
  system.register(Ward, { placement: 'scripted' });
  await system.start();
  return { system, person: backend.kernels.get('Person')!, ward: backend.kernels.get('Ward')! };
}

describe('system.idle(): two waves of publications', () => {
  it('does not pass on two stale publications that balance, and passes once a later wave agrees', async () => {
    const { system, person, ward } = await setup();
    // Person published before a tick from Ward reached it; Ward published later, after Ward sent that tick
    // and received a report Person sent in the turn the tick set off. Each kernel balances, K2K sent =
    // received in total — and the infections that turn sent to other Persons are still in flight.
    person.publish({ received: 0, processed: 0, k2kSent: 0, k2kReceived: 0 }, { answer: false });
    ward.publish({ received: 1, processed: 1, k2kSent: 1, k2kReceived: 1 }, { answer: false });
    let settled = false;
    const idle = system.idle({ timeoutMs: 5_000 }).then(() => (settled = true));
    await turns(20);
    expect(settled).toBe(false);
    expect(person.asked && ward.asked).toBe(true);

    // Both answer; Person's publication after the request shows the tick, the report and 3 infections,
    // 2 of them processed: not balanced, so no pass.
    person.publish({ received: 3, processed: 3, k2kSent: 4, k2kReceived: 3 }, { answer: true });
    ward.publish({}, { answer: true });
    await turns(20);
    expect(settled).toBe(false);

    // The last infection processed. That reading balances with more finished than the wave began with:
    // a new wave is asked for; until it is answered, no pass.
    person.publish({ received: 4, processed: 4, k2kReceived: 4 }, { answer: false });
    await turns(20);
    expect(settled).toBe(false);
    expect(person.asked && ward.asked).toBe(true);

    // A GPU publisher runs beside the turns: an answer that shows a turn under way (queued) is no pass.
    person.publish({}, { answer: true, queued: 1 });
    ward.publish({}, { answer: true });
    await turns(20);
    expect(settled).toBe(false);

    // The next answers agree with the reading that asked for them: idle.
    await turns(2);
    person.publish({}, { answer: true, queued: 0 });
    ward.publish({}, { answer: true });
    await idle;
    expect(settled).toBe(true);
    await system.shutdown({ timeoutMs: 100 }).catch(() => undefined);
  });

  it('times out with IdleTimeoutError when a kernel never answers the publication request', async () => {
    const { system, person, ward } = await setup();
    person.publish({}, { answer: false });
    ward.publish({}, { answer: true });
    await expect(system.idle({ timeoutMs: 60 })).rejects.toMatchObject({
      code: 'IDLE_TIMEOUT',
      message: expect.stringContaining('did not answer a counter publication request'),
    });
    await system.shutdown({ timeoutMs: 100 }).catch(() => undefined);
  });
});
