/**
 * A backend for unit tests of GrainSystem and RingKernel: real rings and control blocks (protocol.ts), and
 * a consumer that runs in this thread when the test says so. A kernel answers the lifecycle handshake and
 * publication requests, and takes each inbound message to the test's `handle` (its return value is the
 * reply; a throw is a handler error). Nothing runs on its own unless `auto` is on (then a wake runs a
 * step in a microtask), so a test decides when messages are consumed.
 */
import type { Backend, BackendKernel, KernelHealth, KernelPlan, LaneMemory, ProbeResult } from '../../src/backend.ts';
import { CONTROL, CONTROL_BLOCK_SIZE, KernelState, SLOT, SlotFlag, ringBytes } from '../../src/protocol.ts';
import { Ring, RingConsumer, RingProducer } from '../../src/ring.ts';
import { SlotReader, SlotWriter, joinKey } from '../../src/slot.ts';
import { TURN_ERROR } from '../../src/turn-error.ts';

/** One message the fake consumer took from an inbound ring. */
export interface FakeMessage {
  readonly grain: string;
  readonly lane: number;
  readonly method: string;
  readonly key: number | string;
  readonly payload: unknown;
  readonly corr: number;
  /** The sender's clock the message carried (ctx.now()). */
  readonly time: number;
}

export type FakeHandler = (m: FakeMessage) => unknown;

const align = (n: number) => Math.ceil(n / 128) * 128;

interface FakeLane {
  readonly control: Int32Array;
  readonly inbound: RingConsumer;
  readonly inboundRing: Ring;
  readonly reply: RingProducer;
}

export class FakeKernel implements BackendKernel {
  readonly memory: { lanes: LaneMemory[] };
  private readonly lanes: FakeLane[] = [];
  private readonly reader = new SlotReader();
  private readonly writer = new SlotWriter();
  /** Every message taken, in the order taken. */
  readonly taken: FakeMessage[] = [];
  /** Run a step on every wake (in a microtask). Off: only `step()` consumes. */
  auto: boolean;
  /** Set to report a fault (health()). */
  fault: Error | undefined;
  /** While true, steps answer control requests and publications but take no message and beat no heart. */
  stalled = false;
  /** While true, control requests go unanswered (a kernel that never acknowledges). */
  deaf = false;
  disposed = false;
  started = false;
  private stepQueued = false;
  private readonly strings: Array<Map<number, string>> = [];

  constructor(
    readonly plan: KernelPlan,
    private readonly backend: FakeBackend,
    lanes: number,
  ) {
    this.auto = backend.auto;
    const { ringCapacity, replyCapacity, slotSize } = plan.options;
    const laneMem: LaneMemory[] = [];
    for (let i = 0; i < lanes; i++) {
      const inboundAt = align(CONTROL_BLOCK_SIZE);
      const replyAt = inboundAt + align(ringBytes(ringCapacity, slotSize));
      const sab = new SharedArrayBuffer(replyAt + align(ringBytes(replyCapacity, slotSize)));
      const inboundRing = Ring.format(sab, inboundAt, ringCapacity, slotSize, { zeroed: true });
      const replyRing = Ring.format(sab, replyAt, replyCapacity, slotSize, { zeroed: true });
      this.lanes.push({
        control: new Int32Array(sab, 0, CONTROL_BLOCK_SIZE >> 2),
        inbound: new RingConsumer(inboundRing),
        inboundRing,
        reply: new RingProducer(replyRing),
      });
      laneMem.push({
        control: { buffer: sab, offset: 0 },
        inbound: { buffer: sab, offset: inboundAt },
        replies: [{ buffer: sab, offset: replyAt }],
      });
      this.strings.push(new Map());
    }
    this.memory = { lanes: laneMem };
  }

  async start(): Promise<void> {
    this.started = true;
    for (const l of this.lanes) Atomics.store(l.control, CONTROL.observed, KernelState.IDLE);
  }

  /** The host wrote a control block or published: requests are answered at once, messages only in steps. */
  wake(): void {
    this.answerControl();
    if (!this.auto || this.stepQueued) return;
    this.stepQueued = true;
    queueMicrotask(() => {
      this.stepQueued = false;
      this.step();
    });
  }

  async dispose(): Promise<void> {
    this.disposed = true;
  }

  health(): KernelHealth {
    return { fault: this.fault };
  }

  /** A lane's control word (CONTROL names), for tests that look at what the host wrote. */
  control(lane: number, word: keyof typeof CONTROL): number {
    return Atomics.load(this.lanes[lane]!.control, CONTROL[word]);
  }

  /** Messages waiting in the inbound rings (published and not taken). */
  waiting(): number {
    let n = 0;
    for (const l of this.lanes) n += l.inboundRing.depth();
    return n;
  }

  /**
   * One pass of every lane's consumer: the control request acknowledged; while ACTIVE, up to `max`
   * messages taken (each a turn through the handler, an ask answered); counters and the publication
   * request answered. Returns the messages taken.
   */
  step(max = Number.POSITIVE_INFINITY): number {
    let took = 0;
    this.answerControl();
    for (const [i, l] of this.lanes.entries()) {
      const c = l.control;
      if (!this.stalled && Atomics.load(c, CONTROL.observed) === KernelState.ACTIVE) {
        for (let slot = l.inbound.peek(); slot >= 0 && took < max; slot = l.inbound.peek()) {
          this.turn(i, l, slot);
          l.inbound.release();
          took++;
        }
      }
      if (!this.stalled) Atomics.add(c, CONTROL.heartbeat, 1);
      Atomics.store(c, CONTROL.publishEpoch, Atomics.load(c, CONTROL.publishRequest));
    }
    return took;
  }

  /** Every lane's control request acknowledged (lifecycle handshake) and publication request answered. */
  private answerControl(): void {
    if (this.deaf) return;
    for (const l of this.lanes) {
      const c = l.control;
      const epoch = Atomics.load(c, CONTROL.requestEpoch);
      if (epoch !== Atomics.load(c, CONTROL.ackEpoch)) {
        const req = Atomics.load(c, CONTROL.requested);
        Atomics.store(c, CONTROL.observed, req === KernelState.STOP ? KernelState.STOPPED : req);
        Atomics.store(c, CONTROL.ackEpoch, epoch);
      }
      Atomics.store(c, CONTROL.publishEpoch, Atomics.load(c, CONTROL.publishRequest));
    }
  }

  private turn(lane: number, l: FakeLane, slot: number): void {
    const ring = l.inboundRing;
    const dv = ring.dv;
    const c = l.control;
    Atomics.add(c, CONTROL.received, 1);
    const methodId = dv.getUint32(slot + SLOT.method, true);
    const flags = dv.getUint32(slot + SLOT.flags, true);
    const corr = dv.getUint32(slot + SLOT.corr, true);
    const keyLo = dv.getUint32(slot + SLOT.keyLo, true);
    const keyHi = dv.getUint32(slot + SLOT.keyHi, true);
    const grainId = this.plan.grainId;
    const h = { method: methodId, flags: SlotFlag.REPLY, corr, keyLo, keyHi, sender: grainId, grain: grainId };
    const method = this.plan.grain.methods[methodId];
    if (!method) {
      Atomics.add(c, CONTROL.rejected, 1);
      this.replyError(
        l,
        { ...h, flags: SlotFlag.REPLY | SlotFlag.REJECTED },
        TURN_ERROR.DECODE,
        `unknown method ${methodId}`,
      );
      return;
    }
    let key: number | string;
    if (flags & SlotFlag.STRING_KEY) {
      key = this.reader.stringKey(ring, slot);
      this.strings[lane]!.set(keyLo, key);
    } else key = joinKey(keyLo, keyHi);
    const payload = this.reader.payload(ring, slot, method.request);
    const m: FakeMessage = {
      grain: this.plan.grain.name,
      lane,
      method: method.name,
      key,
      payload,
      corr,
      time: dv.getFloat64(slot + SLOT.time, true),
    };
    this.taken.push(m);
    let reply: unknown;
    try {
      reply = this.backend.handle(m);
    } catch (e) {
      Atomics.add(c, CONTROL.handlerErrors, 1);
      Atomics.add(c, CONTROL.processed, 1);
      this.replyError(l, { ...h, flags: SlotFlag.REPLY | SlotFlag.ERROR }, TURN_ERROR.HANDLER, (e as Error).message);
      return;
    }
    Atomics.add(c, CONTROL.processed, 1);
    if (!(flags & SlotFlag.ASK)) return;
    const out = this.claimReply(l);
    try {
      if (method.reply)
        this.writer.write(out.ring, out.slot, h, method.reply, reply, this.plan.grain.name, method.name);
      else this.writer.writeText(out.ring, out.slot, h, '');
    } catch (e) {
      // The test's handler gave a reply its schema does not take: the asker sees why.
      this.writer.writeError(out.ring, out.slot, { ...h, flags: SlotFlag.REPLY | SlotFlag.ERROR }, TURN_ERROR.HANDLER, [
        `fake reply: ${(e as Error).message}`,
      ]);
    }
    out.publish();
    Atomics.add(c, CONTROL.replied, 1);
  }

  private replyError(l: FakeLane, h: Parameters<SlotWriter['writeError']>[2], code: number, message: string): void {
    const out = this.claimReply(l);
    this.writer.writeError(out.ring, out.slot, h, code, [message]);
    out.publish();
  }

  private claimReply(l: FakeLane): { ring: Ring; slot: number; publish(): void } {
    const slot = l.reply.claim();
    if (slot < 0) throw new Error('fake kernel: reply ring full (the test let replies pile up)');
    return { ring: l.reply.ring, slot, publish: () => l.reply.publish(slot) };
  }
}

export class FakeBackend implements Backend {
  readonly name: string;
  readonly kernels = new Map<string, FakeKernel>();
  /** How each message is answered (default: an empty reply object, {} for a struct). */
  handle: FakeHandler = () => ({});
  probeResult: ProbeResult = { ok: true };
  disposed = 0;

  constructor(readonly opts: { name?: string; lanes?: number; auto?: boolean } = {}) {
    this.name = opts.name ?? 'fake';
  }

  get auto(): boolean {
    return this.opts.auto ?? true;
  }

  async probe(): Promise<ProbeResult> {
    return this.probeResult;
  }

  async createKernel(plan: KernelPlan): Promise<BackendKernel> {
    const k = new FakeKernel(plan, this, this.opts.lanes ?? 1);
    this.kernels.set(plan.grain.name, k);
    return k;
  }

  kernel(grain: string): FakeKernel {
    const k = this.kernels.get(grain);
    if (!k) throw new Error(`fake backend: no kernel for ${grain}`);
    return k;
  }

  async dispose(): Promise<void> {
    this.disposed++;
  }
}
