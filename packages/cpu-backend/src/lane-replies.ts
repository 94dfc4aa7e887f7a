import {
  CONTROL,
  type RingProducer,
  SlotFlag,
  SlotWriter,
  TURN_ERROR,
  type MethodDef,
  type TurnErrorValue,
} from '@ringgrain/core/backend';

/**
 * A lane's replies to the host (its reply ring): answers to asks, errors of failed turns (an ask's to
 * its asker, a tell's to the host, so none is silent), and records such as a reminder set in a turn.
 */
export class LaneReplies {
  /** Replies published (by seq) in the running batch take and not yet signalled; -1 outside one. */
  private batched = -1;
  private readonly writer = new SlotWriter();

  constructor(
    private readonly reply: RingProducer,
    /** The host's reply doorbell (a shared word it waits on). */
    private readonly replySignal: Int32Array,
    /** The lane's control block (a full ring waits on its doorbell). */
    private readonly control: Int32Array,
    private readonly grainId: number,
    private readonly grainName: string,
    private readonly counts: { replied: number },
  ) {}

  /**
   * A batch take begins: replies are published by seq only, the ring's head and the host's doorbell once
   * at the end.
   */
  beginBatch(): void {
    this.batched = 0;
  }

  /** The batch take ended (also when a turn threw out of it). */
  endBatch(): void {
    const replies = this.batched;
    this.batched = -1;
    if (replies > 0) {
      this.reply.flushHead();
      this.signalHost();
    }
  }

  /** An ask's answer: `value` encoded by the method's reply schema (an empty text where it has none). */
  payload(corr: number, method: MethodDef, value: unknown): void {
    const ring = this.reply.ring;
    const slot = this.claim();
    const h = {
      method: method.id,
      flags: SlotFlag.REPLY,
      corr,
      keyLo: 0,
      keyHi: 0,
      sender: this.grainId,
      grain: this.grainId,
    };
    if (method.reply) this.writer.write(ring, slot, h, method.reply, value, this.grainName, method.name);
    else this.writer.writeText(ring, slot, h, '');
    this.publish(slot);
    this.counts.replied++;
  }

  /**
   * Errors of asks go to the asker; errors of tells go to the host too (corr 0) so none is silent. A
   * handler's throw (ERROR) or a refusal (REJECTED) with its message; the host builds the typed error.
   */
  text(corr: number, methodId: number, flag: number, text: string): void {
    this.error(corr, methodId, flag, flag === SlotFlag.REJECTED ? TURN_ERROR.DECODE : TURN_ERROR.HANDLER, [text]);
  }

  /** A failed turn's reply as a code and its fields (core turn-error.ts). */
  error(corr: number, methodId: number, flag: number, code: number, fields: readonly TurnErrorValue[]): void {
    const ring = this.reply.ring;
    const slot = this.claim();
    this.writer.writeError(
      ring,
      slot,
      {
        method: methodId,
        flags: SlotFlag.REPLY | flag,
        corr,
        keyLo: 0,
        keyHi: 0,
        sender: this.grainId,
        grain: this.grainId,
      },
      code,
      fields,
    );
    this.publish(slot);
  }

  /**
   * A record for the host (core KERNEL_RECORD `method`) as text, published at once, in order with the
   * turn's other output.
   */
  record(method: number, text: string): void {
    const slot = this.claim();
    this.writer.writeText(
      this.reply.ring,
      slot,
      { method, flags: SlotFlag.REPLY, corr: 0, keyLo: 0, keyHi: 0, sender: this.grainId, grain: this.grainId },
      text,
    );
    this.reply.publish(slot);
    this.signalHost();
  }

  private claim(): number {
    for (let spins = 0; ; spins++) {
      const slot = this.reply.claim();
      if (slot >= 0) return slot;
      // The host drains replies at least every sweep; nudge it and wait for room (backpressure).
      Atomics.notify(this.replySignal, 0);
      if (spins > 100) Atomics.wait(this.control, CONTROL.doorbell, Atomics.load(this.control, CONTROL.doorbell), 1);
    }
  }

  /**
   * A reply is readable once its seq is stored. Inside a batch take the host's doorbell (an atomic add
   * and a notify, a futex wake when the host sleeps) and the ring's head are left to the batch's end, once
   * for all its replies: a host that spins for replies reads seqs and sees each at once anyway.
   */
  private publish(slot: number): void {
    if (this.batched >= 0) {
      this.reply.publishSeq(slot);
      this.batched++;
      return;
    }
    this.reply.publish(slot);
    this.signalHost();
  }

  private signalHost(): void {
    Atomics.add(this.replySignal, 0, 1);
    Atomics.notify(this.replySignal, 0);
  }
}
