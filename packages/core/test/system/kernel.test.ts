/**
 * RingKernel (the host side of one kernel) against the fake backend and a stub host: the lifecycle state
 * machine and its control-block handshake, faults, terminate (drain, STOP, the host's stopped hook, what
 * is left in the ring) and counters carried over a relaunch.
 */
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { HandlerError, InvalidTransitionError, KernelFaultError, KernelTerminatedError } from '../../src/errors.ts';
import { Grain, type GrainDef } from '../../src/grain.ts';
import { RingKernel, type KernelHost, type TransitionEvent } from '../../src/kernel.ts';
import { HOST_SENDER } from '../../src/protocol.ts';
import { t } from '../../src/schema/index.ts';
import { SlotWriter } from '../../src/slot.ts';
import { DEFAULT_KERNEL_OPTIONS } from '../../src/system/options.ts';
import { FakeBackend, type FakeKernel } from './fake-backend.ts';

class Tally extends Grain({
  name: 'Tally',
  module: import.meta.url,
  state: t.struct({ n: t.u32 }),
  methods: { bump: { request: t.struct({ by: t.u32 }) } },
}) {
  bump(s: { n: number }, m: { by: number }) {
    s.n += m.by;
  }
}
const def = Tally.grain as GrainDef;

function setup(opts: { lanes?: number; handshakeTimeoutMs?: number; pending?: () => number } = {}) {
  const backend = new FakeBackend({ lanes: opts.lanes ?? 2, auto: false });
  const host = {
    rejectAsksOf: vi.fn<KernelHost['rejectAsksOf']>(),
    pendingAsksOf: opts.pending ?? (() => 0),
    waitingSendsOf: () => 0,
    handshakeTimeoutMs: opts.handshakeTimeoutMs ?? 2_000,
    stopped: vi.fn<NonNullable<KernelHost['stopped']>>(async () => {}),
  } satisfies KernelHost;
  const options = { ...DEFAULT_KERNEL_OPTIONS, ringCapacity: 8, replyCapacity: 8 };
  const kernels: FakeKernel[] = [];
  const kernel = new RingKernel({
    grainId: 0,
    def,
    backend,
    options,
    logger: pino({ level: 'silent' }),
    host,
    makeKernel: async () => {
      const k = (await backend.createKernel({
        grainId: 0,
        grain: def,
        grains: [def],
        options,
        logger: pino({ level: 'silent' }),
      })) as FakeKernel;
      kernels.push(k);
      return k;
    },
  });
  const transitions: string[] = [];
  kernel.on('transition', (e: TransitionEvent) => transitions.push(`${e.from}→${e.to}`));
  return { kernel, host, kernels, transitions };
}

/** Writes `n` bump tells into the lanes of `key`s 0..n-1, published. */
function sendTells(kernel: RingKernel, n: number): void {
  const writer = new SlotWriter();
  const method = def.methodByName.get('bump')!;
  for (let key = 0; key < n; key++) {
    const producer = kernel.lanes[kernel.laneOf(key)]!.producer;
    const slot = producer.claim();
    expect(slot).toBeGreaterThanOrEqual(0);
    writer.write(
      producer.ring,
      slot,
      { method: method.id, flags: 0, corr: 0, keyLo: key, keyHi: 0, sender: HOST_SENDER, grain: 0 },
      method.request,
      { by: 1 },
      'Tally',
      'bump',
    );
    producer.publish(slot);
    kernel.sent++;
  }
}

describe('RingKernel lifecycle', () => {
  it(
    'launch, activate, deactivate and activate again, each acknowledged by every lane; a transition outside the ' +
      'state machine is InvalidTransitionError',
    async () => {
      const { kernel, kernels, transitions } = setup();
      await expect(kernel.deactivate()).rejects.toBeInstanceOf(InvalidTransitionError);
      await kernel.launch();
      expect(kernels[0]!.started).toBe(true);
      expect(kernel.lanes).toHaveLength(2);
      await expect(kernel.deactivate()).rejects.toBeInstanceOf(InvalidTransitionError);
      await kernel.activate();
      await kernel.deactivate();
      await kernel.activate();
      expect(transitions).toEqual(['created→launched', 'launched→active', 'active→deactivated', 'deactivated→active']);
      expect(kernel.accepting).toBe(true);
    },
  );

  it(
    'a handshake no lane acknowledges fails with KernelFaultError after handshakeTimeoutMs, naming the lanes',
    async () => {
      const { kernel, kernels } = setup({ handshakeTimeoutMs: 50 });
      await kernel.launch();
      kernels[0]!.deaf = true;
      const err = await kernel.activate().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(KernelFaultError);
      expect((err as Error).message).toMatch(
        /activate was not acknowledged within 50 ms \(lane 0 observed state 1, lane 1 observed state 1\)/,
      );
      expect(kernel.state).toBe('launched');
    },
  );

  it(
    "a backend fault during a handshake fails it with the fault as cause; markFaulted rejects the host's asks " +
      'and emits fault',
    async () => {
      const { kernel, kernels, host, transitions } = setup();
      await kernel.launch();
      const fault = new Error('device lost');
      kernels[0]!.deaf = true;
      kernels[0]!.fault = fault;
      const err = await kernel.activate().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(KernelFaultError);
      expect((err as Error).cause).toBe(fault);
      const faults: Error[] = [];
      kernel.on('fault', (e) => faults.push(e.error));
      kernel.markFaulted(fault);
      expect(kernel.state).toBe('faulted');
      expect(faults).toEqual([fault]);
      // A plain error reaches the asks as a KernelFaultError; a second fault changes nothing.
      expect(host.rejectAsksOf).toHaveBeenCalledTimes(1);
      expect(host.rejectAsksOf.mock.calls[0]![1]).toBeInstanceOf(KernelFaultError);
      expect((host.rejectAsksOf.mock.calls[0]![1] as Error).cause).toBe(fault);
      kernel.markFaulted(new HandlerError('Tally', 'bump', 'again'));
      expect(host.rejectAsksOf).toHaveBeenCalledTimes(1);
      expect(transitions).toEqual(['created→launched', 'launched→faulted']);
      expect(() => kernel.assertAccepting()).toThrow(KernelFaultError);
    },
  );

  it(
    'terminate drains what is queued, stops every lane, calls the host back and frees the memory; counters ' +
      'carry over a relaunch',
    async () => {
      let pending = 3;
      const { kernel, kernels, host, transitions } = setup({ pending: () => pending });
      await kernel.launch();
      await kernel.activate();
      sendTells(kernel, 5);
      expect(kernel.inboundDepth()).toBe(5);
      const done = kernel.terminate();
      // The drain waits for the ring to empty and the host's asks to settle.
      await new Promise((r) => setTimeout(r, 20));
      expect(kernel.state).toBe('terminated');
      expect(() => kernel.assertAccepting()).toThrow(KernelTerminatedError);
      expect(host.stopped).not.toHaveBeenCalled();
      kernels[0]!.step();
      pending = 0;
      await done;
      expect(host.stopped).toHaveBeenCalledWith(kernel);
      expect(host.rejectAsksOf.mock.calls[0]![1]).toBeInstanceOf(KernelTerminatedError);
      expect(kernels[0]!.disposed).toBe(true);
      expect(kernel.lanes).toHaveLength(0);
      expect(kernel.counters()).toMatchObject({ sent: 5, received: 5, processed: 5, hostRejected: 0 });
      await kernel.launch();
      await kernel.activate();
      sendTells(kernel, 2);
      kernels[1]!.step();
      expect(kernel.counters()).toMatchObject({ sent: 7, received: 7, processed: 7 });
      expect(transitions.slice(-3)).toEqual(['active→terminated', 'terminated→launched', 'launched→active']);
    },
  );

  it("terminate in 'reject' mode leaves what is in the ring untaken and counts it hostRejected", async () => {
    const { kernel, kernels } = setup();
    await kernel.launch();
    await kernel.activate();
    sendTells(kernel, 4);
    await kernel.terminate({ mode: 'reject' });
    expect(kernels[0]!.taken).toHaveLength(0);
    expect(kernel.counters()).toMatchObject({ sent: 4, processed: 0, hostRejected: 4 });
  });
});
